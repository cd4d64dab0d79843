"""Issue 53: a new torch release is judged the day it ships, from its own wheels.

A PyPI-like simple index and a mirror of PyTorch's variant indexes are served from 127.0.0.1 by a real HTTP server
that honours Range (werkzeug's, a maintained WSGI library), with torch wheels built as PyTorch builds them: the
real member names (`torch/version.py`, `torch/cuda/__init__.py`) in their real format (the release table as
`PYTORCH_RELEASES_CODE_CC: dict[str, dict[str, set[int]]]`), padded with a few MB of incompressible library bytes, so
that a whole download shows in the server's byte count. `catalog wheels --refresh` finds the new release 2.16.0
(+cu134, a CUDA line no shipped fact names), reads a few hundred KB of each wheel, and the wheel answer recommends
it where it serves; a server that ignores Range (Python's own http.server) leaves the release unjudged, said.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import logging
import random
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, cpuinfo_path
from wheel_mirror import served, serving, write_pages

werkzeug = pytest.importorskip("werkzeug", reason="werkzeug (the Range-honouring test server) is not installed")
from werkzeug.serving import make_server  # noqa: E402
from werkzeug.utils import send_file  # noqa: E402
from werkzeug.wrappers import Request, Response  # noqa: E402

PADDING = 3 * 1024 * 1024
TABLE = """\
PYTORCH_RELEASES_CODE_CC: dict[str, dict[str, set[int]]] = {
    "13.2": {
        "x86_64": {75, 80, 86, 90, 100, 120},
        "aarch64": {80, 90, 100, 110, 120},
    },
    "13.4": {
        "x86_64": {80, 86, 90, 100, 120},
        "aarch64": {80, 90, 100, 110, 120},
    },
}
"""
H100 = ["--gpu", "9.0", "--driver", "590.44.01", "--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4"))]
TURING = ["--gpu", "7.5", "--driver", "590.44.01", "--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4"))]


def torch_wheel(
    folder: Path, version: str, local: str | None, tag: str, cuda: str | None, table: str = TABLE, real: bool = False
) -> Path:
    """A torch wheel as PyTorch builds one: its version.py and cuda/__init__.py in their real form, and a library's
    worth of incompressible bytes stored after them; `real`, with a directory of the real wheels' size and order."""
    shown = f"{version}+{local}" if local else version
    name = f"torch-{shown}-{tag}.whl"
    folder.mkdir(parents=True, exist_ok=True)
    version_py = (
        "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = '{version}+{local or 'cu134'}'\ndebug = False\ncuda: Optional[str] = {cuda!r}\n"
        "git_version = '0123456789abcdef0123456789abcdef01234567'\nhip: Optional[str] = None\n"
    )
    cuda_py = "import platform\n\n# the release table, as torch/cuda/__init__.py carries it since 2.13\n" + table
    padding = random.Random(name).randbytes(PADDING)
    with zipfile.ZipFile(folder / name, "w", zipfile.ZIP_DEFLATED) as archive:
        # The members in the order of PyPI's torch 2.9.1 wheels (Linux x86_64 and aarch64, Windows): 76 entries before
        # torch/version.py, ~1,000 between it and torch/cuda/__init__.py, ~11,000 after (a ~1.2 MB directory).
        _empty_members(archive, "functorch/_src/m", 75 if real else 0)
        archive.writestr("torch/__init__.py", "raise ImportError('a test wheel')\n")
        archive.writestr("torch/version.py", version_py)
        _empty_members(archive, "torch/_inductor/kernel/m", 1010 if real else 0)
        archive.writestr("torch/cuda/__init__.py", cuda_py)
        archive.writestr("torch/lib/libtorch_cuda.so", padding, zipfile.ZIP_STORED)
        _empty_members(archive, "torch/include/ATen/ops/grid_sampler_2d_backward_dispatch_", 11_000 if real else 0)
        archive.writestr(f"torch-{shown}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {shown}\n")
        archive.writestr(f"torch-{shown}.dist-info/RECORD", "")
    return folder / name


def _empty_members(archive: zipfile.ZipFile, prefix: str, count: int) -> None:
    for number in range(count):
        archive.writestr(zipfile.ZipInfo(f"{prefix}{number:05}.h", (2020, 1, 1, 0, 0, 0)), b"")


def build_indexes(root: Path, table: str = TABLE, real: bool = False) -> None:
    pypi = root / "pypi" / "torch"
    for tag in ("cp312-cp312-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_28_aarch64"):
        torch_wheel(pypi, "2.16.0", None, tag, "13.4", table, real)
    torch_wheel(pypi, "2.16.0", None, "cp312-none-macosx_14_0_arm64", None)
    torch_wheel(pypi, "2.16.0", None, "cp312-cp312-win_amd64", None)
    for variant, cuda in (("cu134", "13.4"), ("cpu", None)):
        for tag in ("cp312-cp312-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_28_aarch64"):
            torch_wheel(root / "whl" / variant / "torch", "2.16.0", variant, tag, cuda, table, real)
    write_pages(root.glob("**/torch"))


@contextlib.contextmanager
def range_server(root: Path, sent: dict[str, int], excess: int = 0) -> Iterator[str]:
    """werkzeug serving `root`, Range honoured (send_file's conditional responses); bytes sent counted per file;
    `excess`: that many bytes more sent after each range than its Content-Range says (a lying server)."""

    @Request.application
    def app(request: Request) -> Response:
        if request.authorization is not None:  # the credentials of a URL given with user:password@, as a header
            sent[f"as {request.authorization.username}:{request.authorization.password}"] = 1
        path = (root / request.path.lstrip("/")).resolve()
        if (
            path.is_dir()
            and path.parent.name == "pypi"
            and "application/vnd.pypi.simple.v1+json" in request.accept_mimetypes
        ):
            # PyPI answers its simple API in PEP 691 JSON where asked; PyTorch's indexes here answer PEP 503 HTML.
            files = [
                {"filename": w.name, "url": w.name.replace("+", "%2B"), "hashes": {}}
                for w in sorted(path.glob("*.whl"))
            ]
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": "torch", "files": files})
            return Response(body, content_type="application/vnd.pypi.simple.v1+json")
        if path.is_dir():
            path = path / "index.html"
        if root not in path.parents or not path.is_file():
            return Response("not found", status=404)
        response = send_file(path, request.environ, conditional=True)
        if excess and response.status_code == 206:
            response.direct_passthrough = False
            said = response.headers["Content-Range"]
            response = Response(response.get_data() + b"\0" * excess, status=206, headers={"Content-Range": said})
        sent[path.name] = sent.get(path.name, 0) + (response.content_length or 0)
        return response

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # its request log is not the test's output
    with serving(make_server("127.0.0.1", 0, app, threaded=True)) as url:
        yield url


def _run(args: list[str], tmp_path: Path, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO), **extra}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args], capture_output=True, text=True, env=env, timeout=300,
        cwd=cwd or tmp_path,
    )  # fmt: skip


def test_the_index_pip_is_configured_with_is_read_by_the_real_pip_never_a_checkouts(tmp_path: Path) -> None:
    """No --pypi: the index is the one pip's configuration names (here PIP_CONFIG_FILE's), read by pip itself. Run
    from a checkout holding `pip/__main__.py`, which would name another index (`python -m pip` run there runs it),
    the refresh still reads the configured one: the planted module never runs."""
    build_indexes(tmp_path / "www")
    checkout, marker = tmp_path / "checkout", tmp_path / "planted-pip-ran"
    (checkout / "pip").mkdir(parents=True)
    (checkout / "pip" / "__init__.py").write_text("")
    with range_server(tmp_path / "www", {}) as url:
        (checkout / "pip" / "__main__.py").write_text(
            f"open({str(marker)!r}, 'w').close()\nprint({url + '/nowhere'!r})\n"
        )
        (tmp_path / "pip.conf").write_text(f"[global]\nindex-url = {url}/pypi\n")
        done = _run(
            ["catalog", "wheels", "--refresh", "--wheel-index", f"{url}/whl"], tmp_path, checkout,
            PIP_CONFIG_FILE=str(tmp_path / "pip.conf"),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "new releases read: 2.16.0" in done.stderr


def test_a_new_release_is_read_from_its_wheels_and_recommended_where_it_serves(tmp_path: Path) -> None:
    build_indexes(tmp_path / "www", real=True)  # the Linux wheels shaped as PyPI's
    sent: dict[str, int] = {}
    with range_server(tmp_path / "www", sent) as url:
        done = _run(
            ["catalog", "wheels", "--refresh", "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path
        )
    assert done.returncode == 0, done.stderr
    assert "new releases read: 2.16.0" in done.stderr
    wheels = {name: count for name, count in sent.items() if name.endswith(".whl")}
    assert "index.html" in sent  # the variant indexes' PEP 503 pages; PyPI's page was PEP 691 JSON
    assert len(wheels) == 8  # PyPI's four, and cu134 and cpu for both Linux architectures
    assert all(count <= 512 * 1024 for count in wheels.values()), wheels  # of a 3 MB wheel, its directory 1.2 MB
    catalog = json.loads((tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json").read_text())
    new = {(b["variant"], b["platform"]): b for b in catalog["builds"] if b["torch"] == "2.16.0"}
    assert new[("cu134", "linux-x86_64")]["sass"] == ["8.0", "8.6", "9.0", "10.0", "12.0"]  # the table's 13.4 row
    assert new[("cu134", "linux-aarch64")]["sass"] == ["8.0", "9.0", "10.0", "11.0", "12.0"]
    assert new[("cu134", "linux-x86_64")]["pypi"] and new[("cu134", "linux-x86_64")]["min_driver"] == "580.65.06"
    assert any(url.split("//")[1] in text and "bytes" in text for text in catalog["sources"].values())
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] == "2.16.0" and h100["recommendation"]["from_pypi"]
    assert any(reason.startswith("wheel facts read from the index on ") for reason in h100["reasons"])
    turing = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *TURING], tmp_path).stdout)
    assert turing["recommendation"]["release"] != "2.16.0"  # 13.4's row has no 7.5: the newest that serves it
    # Derived from other facts than this pickvariant ships (an upgrade since): set aside, the shipped ones answer.
    cached = tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json"
    cached.write_text(cached.read_text().replace(catalog["based_on"], "0" * 64))
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] != "2.16.0"
    cached.write_text("{ damaged")  # a damaged cache is set aside too: the shipped catalog answers
    assert _run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).returncode == 0
    # Derived from the right facts, but a CUDA line that is a number, not text: the cache is checked against the
    # catalog's schema and set aside whole, never read into a build the rules would trip on (a traceback before).
    catalog["builds"][0]["cuda"] = 12.8
    cached.write_text(json.dumps(catalog))
    done = _run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["recommendation"]["release"] != "2.16.0"


def test_a_wheel_whose_members_lie_past_512_kb_is_refused_having_read_no_more(tmp_path: Path) -> None:
    """PyPI's x86_64 wheel rebuilt with its two members behind 13,000 entries (a 1.4 MB directory): the refresh
    stops reading it at 512 KB, naming it, and the same build is still read from PyTorch's index's wheel."""
    build_indexes(tmp_path / "www")
    wheel = next((tmp_path / "www" / "pypi" / "torch").glob("*manylinux_2_28_x86_64.whl"))
    members = {name: zipfile.ZipFile(wheel).read(name) for name in ("torch/version.py", "torch/cuda/__init__.py")}
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        _empty_members(archive, "torch/include/ATen/ops/grid_sampler_2d_backward_dispatch_", 13_000)
        for name, data in members.items():
            archive.writestr(name, data)
    sent: dict[str, int] = {}
    with range_server(tmp_path / "www", sent) as url:
        done = _run(
            ["catalog", "wheels", "--refresh", "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path
        )
    assert done.returncode == 0, done.stderr
    assert sent[wheel.name] <= 512 * 1024 < wheel.stat().st_size, sent
    assert any(wheel.name in line and "512" in line and "budget" in line for line in done.stderr.splitlines()), (
        done.stderr
    )
    catalog = json.loads((tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json").read_text())
    read = {(b["variant"], b["platform"]) for b in catalog["builds"] if b["torch"] == "2.16.0"}
    assert {("cu134", "linux-x86_64"), ("cu134", "linux-aarch64"), ("cpu", "linux-x86_64")} <= read, read


def test_a_server_that_ignores_range_leaves_the_release_unjudged_and_said(tmp_path: Path) -> None:
    build_indexes(tmp_path / "www")
    with served(tmp_path / "www") as url:  # Python's own http.server: a Range asked for, the whole file sent
        done = _run(
            ["catalog", "wheels", "--refresh", "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path
        )
    assert done.returncode == 0, done.stderr
    assert "does not answer Range requests" in done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] != "2.16.0"
    catalog = json.loads((tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json").read_text())
    assert any(row["torch"] == "2.16.0" and "Range" in row["why"] for row in catalog["left_out"])


def test_a_server_that_drips_bytes_is_stopped_at_the_deadline_not_waited_for(monkeypatch, tmp_path: Path) -> None:
    """Every read of an index is bounded in time as well as bytes: a page sent a byte at a time (each byte within
    the per-read timeout) is refused once the read's deadline passes, naming the URL."""
    import time

    from pickvariant._base.errors import OperationFailed
    from pickvariant.sources.wheels.catalog import remote

    class Drip(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            for _ in range(200):
                self.wfile.write(b"<")
                self.wfile.flush()
                time.sleep(0.05)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(remote, "DEADLINE_S", 0.5)
    monkeypatch.setattr(remote, "CHUNK", 1)
    try:
        with pytest.raises(OperationFailed, match=r"127\.0\.0\.1.*not read within 0\.5 s"):
            remote.get(f"http://127.0.0.1:{server.server_port}/simple/torch/", 1024 * 1024)
    finally:
        server.shutdown()  # read to its end (200 bytes at 50 ms), it would have returned them: refused instead


def test_a_table_that_is_not_a_literal_is_never_run_and_credentials_never_shown(tmp_path: Path) -> None:
    """What a wheel holds is data: a release table computed by a call is not evaluated (the row is left out, said),
    and an index given with user:password@ is read with its credentials sent as pip sends them, never printed or
    written into the catalog."""
    marker = tmp_path / "ran"
    hostile = f"PYTORCH_RELEASES_CODE_CC = __import__('pathlib').Path({str(marker)!r}).touch() or {{}}\n"
    build_indexes(tmp_path / "www", hostile)
    sent: dict[str, int] = {}
    with range_server(tmp_path / "www", sent) as url:
        secret = url.replace("http://", "http://reader:S3CRET@")
        done = _run(
            ["catalog", "wheels", "--refresh", "--pypi", f"{secret}/pypi", "--wheel-index", f"{secret}/whl"], tmp_path
        )
    assert done.returncode == 0, done.stderr
    assert "is not written as a literal: not read" in done.stderr and not marker.exists()
    written = (tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json").read_text()
    assert "S3CRET" not in done.stderr + done.stdout + written
    assert "as reader:S3CRET" in sent  # sent to the server as pip sends them, in the Authorization header
    catalog = json.loads(written)
    assert not [b for b in catalog["builds"] if b["torch"] == "2.16.0" and b["variant"] == "cu134"]
    assert any(row["torch"] == "2.16.0" and "literal" in row["why"] for row in catalog["left_out"])


def _shipped_as_served(root: Path, release: dict, table: str) -> None:
    """The wheels of one release of the shipped facts as PyPI and PyTorch's indexes serve them: on PyPI each
    Python's wheel for Linux (PyPI's CUDA line), Windows and macOS; on each variant index its Linux wheels. The
    wheel the refresh reads (the first by name) is a real one; the other Pythons' are listed, not read."""
    version, tags = release["torch"], release["python"]
    cuda_of = {row["variant"]: row["cuda"] for row in release["builds"]}
    platforms = {"linux-x86_64": "manylinux_2_28_x86_64", "linux-aarch64": "manylinux_2_28_aarch64",
                 "windows-amd64": "win_amd64", "macos-arm64": f"{release['macos_tag']}_arm64"}  # fmt: skip
    first = min(tag for tag in tags if not tag.endswith("t"))
    served = [("pypi", None, platform, release["pypi"][platform]) for platform in platforms]
    served += [
        ("whl", row["variant"], row["platform"], row["variant"])
        for row in release["builds"]
        if row["platform"].startswith("linux-") and row["sass_confidence"] in ("V", "D")
    ]
    for where, local, platform, variant in served:
        folder = root / "pypi" / "torch" if where == "pypi" else root / "whl" / str(local) / "torch"
        for tag in tags:
            abi = "none" if platform == "macos-arm64" else tag
            wheel_tag = f"{tag}-{abi}-{platforms[platform]}"
            if tag == first:
                torch_wheel(folder, version, local, wheel_tag, cuda_of.get(variant), table)
            else:
                shown = f"{version}+{local}" if local else version
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"torch-{shown}-{wheel_tag}.whl").write_bytes(b"listed, not read")
    write_pages(root.glob("**/torch"))


def test_the_shipped_facts_newest_release_read_from_its_wheels_reproduces_the_shipped_catalog(tmp_path) -> None:
    """The newest release of the shipped wheel facts (2.15.0) served on 127.0.0.1 as its facts say PyPI and
    PyTorch's indexes serve it (its release table the facts' SASS lists), under the next version number (a refresh
    reads only releases past the facts): the refresh derives the shipped catalog's builds of it, field for field.
    With PyTorch's index unreachable, PyPI's own wheels still give its CUDA builds, and an H100 is answered it."""
    from pickvariant.sources.wheels.catalog.facts import FACTS, read_facts

    newest = read_facts(FACTS)["releases"][-1]
    later = "2.16.0"
    rows = [row for row in newest["builds"] if row["cuda"] and row["sass_confidence"] in ("V", "D")]
    lines: dict[str, dict[str, set[int]]] = {}
    for row in rows:
        host = row["platform"].removeprefix("linux-")
        lines.setdefault(row["cuda"], {})[host] = {int(cc.replace(".", "")) for cc in row["sass"]}
    _shipped_as_served(tmp_path / "www", {**newest, "torch": later}, f"PYTORCH_RELEASES_CODE_CC = {lines!r}\n")
    # Not ptx_known: a wheel's release table names SASS only, so a build read from it has its PTX unknown (never
    # claimed), where the shipped facts verified "none" from the real wheel (W1): the refresh invents no PTX.
    fields = ("variant", "platform", "sass", "ptx", "cuda", "min_driver", "pypi", "local", "index_url")

    def builds_of(catalog: dict, release: str) -> list[dict]:
        found = [
            {key: str(b[key]).replace(release, "RELEASE") if key == "local" else b[key] for key in fields}
            for b in catalog["builds"]
            if b["torch"] == release
        ]
        return sorted(found, key=lambda b: (b["variant"], b["platform"]))

    shipped = json.loads((REPO / "pickvariant" / "sources" / "wheels" / "catalog" / "data" / "wheels.json").read_text())
    expected = builds_of(shipped, newest["torch"])
    refreshed = tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json"
    with range_server(tmp_path / "www", {}) as url:
        refresh = ["catalog", "wheels", "--refresh", "--pypi", f"{url}/pypi"]
        done = _run([*refresh, "--wheel-index", f"{url}/whl"], tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"new releases read: {later};" in done.stderr, done.stderr
        catalog = json.loads(refreshed.read_text())
        assert builds_of(catalog, later) == expected
        assert {tuple(b["python"]) for b in catalog["builds"] if b["torch"] == later} == {tuple(newest["python"])}
        assert not [b for b in catalog["builds"] if b["torch"] == later and b["ptx_known"] and b["cuda"]]
        refreshed.unlink()
        unreachable = _run([*refresh, "--wheel-index", f"{url}/blocked"], tmp_path)
    assert unreachable.returncode == 0, unreachable.stderr
    cuda_builds = [b for b in builds_of(json.loads(refreshed.read_text()), later) if b["cuda"]]
    assert cuda_builds == [b for b in expected if b["cuda"]]
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] == later and h100["recommendation"]["from_pypi"]
