"""Issue 70: a refresh keeps every fact it read and invents none, whatever the servers send.

Real servers on 127.0.0.1: werkzeug's (Range honoured, tests/test_wheel_refresh.py) for the indexes, and a raw socket
server that answers every request with the same bytes, for what no library server sends (a bad status line, a 70 KB
header, more than 100 headers, a page shorter than its Content-Length, a redirect to ftp://, a byte every so often).
Each broken answer ends the refresh with one line naming the URL (exit 1) and leaves the refreshed catalog there as
it was; one broken wheel leaves only its own build out."""

from __future__ import annotations

import contextlib
import json
import re
import socketserver
import struct
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import cpuinfo_path
from test_wheel_refresh import H100, TABLE, _run, build_indexes, range_server

GTX_1080 = ["--gpu", "6.1", "--driver", "580.95.05", "--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4"))]
REFRESH = ["catalog", "wheels", "--refresh"]


@contextlib.contextmanager
def canned(answer: bytes, drip_s: float = 0.0) -> Iterator[str]:
    """A server that reads a request and sends `answer` (a byte at a time every `drip_s` where given), then closes."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            with contextlib.suppress(OSError):
                if drip_s:
                    for byte in answer:
                        self.request.sendall(bytes([byte]))
                        time.sleep(drip_s)
                else:
                    self.request.sendall(answer)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


HOSTILE = {
    "bad status line": b"HTTX/1.1 200 OK\r\n\r\n",
    "a 70 KB header": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
    "over 100 headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(120)) + b"\r\n",
    "PEP 691 files null": (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.pypi.simple.v1+json\r\nContent-Length: 32\r\n\r\n"
        b'{"meta": {}, "files": null}     '
    ),
    "shorter than its Content-Length": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n<a>",
    "a redirect to ftp": b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1/torch/\r\nContent-Length: 0\r\n\r\n",
}


@pytest.mark.parametrize("answer", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_index_answer_is_one_line_naming_the_url_and_the_catalog_there_is_kept(tmp_path, answer) -> None:
    cached = tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json"
    cached.parent.mkdir(parents=True)
    cached.write_text("the catalog refreshed before")
    with canned(HOSTILE[answer]) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/simple", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("pickvariant: "), done.stderr
    assert "127.0.0.1" in done.stderr and "Traceback" not in done.stderr
    assert cached.read_text() == "the catalog refreshed before"
    if answer == "a redirect to ftp":
        assert "is not followed (http to ftp)" in done.stderr, done.stderr


def test_a_redirect_from_https_to_plain_http_is_not_followed() -> None:
    """urllib's own handler would follow it (and ftp://): the credentials and the answer would travel in clear."""
    import urllib.error
    import urllib.request

    from pickvariant.sources.wheels.catalog.remote import _Redirects

    asked = urllib.request.Request("https://index.example/simple/torch/")
    with pytest.raises(urllib.error.URLError, match="not followed"):
        _Redirects().redirect_request(asked, None, 302, "Found", {}, "http://index.example/simple/torch/")
    followed = _Redirects().redirect_request(asked, None, 302, "Found", {}, "https://mirror.example/simple/torch/")
    assert followed is not None and followed.full_url == "https://mirror.example/simple/torch/"


def test_a_server_dripping_bytes_is_stopped_at_the_refreshs_own_deadline(tmp_path) -> None:
    """A page sent a byte every 0.2 s, for longer than this test waits: each byte comes within the per-read timeout,
    so only one wall-clock deadline for the whole refresh (PICKVARIANT_NETWORK_TIMEOUT, 2 s here) stops it."""
    page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + b"<" * 2000
    with canned(page, drip_s=0.2) as url:
        done = _run(
            [*REFRESH, "--pypi", f"{url}/simple", "--wheel-index", f"{url}/whl"], tmp_path,
            PICKVARIANT_NETWORK_TIMEOUT="2",
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "longer than 2 s in all" in done.stderr and "PICKVARIANT_NETWORK_TIMEOUT" in done.stderr, done.stderr


def test_pytorchs_index_unreachable_still_judges_the_release_from_pypis_own_wheels(tmp_path) -> None:
    """A proxy that passes PyPI and not PyTorch's index: the variant pages cannot be listed, said per index, and
    2.16.0's Linux builds are still judged from PyPI's own wheels (the same builds): an H100 is answered 2.16.0."""
    build_indexes(tmp_path / "www")
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/blocked"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "new releases read: 2.16.0" in done.stderr and "cu134: cannot read" in done.stderr, done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] == "2.16.0" and h100["recommendation"]["from_pypi"]


def test_a_table_claiming_code_its_cuda_line_cannot_build_is_not_believed(tmp_path) -> None:
    """A release table that claims SASS for sm_35, 5.0 and 6.1 in its CUDA 13.4 row: the hardware facts say CUDA 13
    builds none of them (nvcc refuses sm_61 from 13.0), so that build is left out, named, and a GTX 1080 is never
    handed it."""
    lying = TABLE.replace('"x86_64": {80, 86, 90, 100, 120}', '"x86_64": {35, 50, 61, 80, 86, 90, 100, 120}')
    assert lying != TABLE
    build_indexes(tmp_path / "www", lying)
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    catalog = json.loads((tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json").read_text())
    assert not [
        b for b in catalog["builds"] if b["torch"] == "2.16.0" and b["platform"] == "linux-x86_64" and b["cuda"]
    ]
    assert any("cannot build" in row["why"] and "6.1" in row["why"] for row in catalog["left_out"])
    gtx = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *GTX_1080], tmp_path).stdout)
    assert gtx["recommendation"]["release"] != "2.16.0"


def _spoil(wheel: Path, member: str, how: str) -> None:
    """Rewrite `member`'s entry in the wheel's central directory and local header as a hostile server would."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
    data = bytearray(wheel.read_bytes())
    name = member.encode()
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:
        size = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + size] == name:
            break
        at += 4
    local = info.header_offset
    for flag_at, method_at in ((at + 8, at + 10), (local + 6, local + 8)):
        if how == "encrypted":
            struct.pack_into("<H", data, flag_at, struct.unpack_from("<H", data, flag_at)[0] | 0x1)
        elif how == "flag bit 6":
            struct.pack_into("<H", data, flag_at, struct.unpack_from("<H", data, flag_at)[0] | 0x40)
        else:
            struct.pack_into("<H", data, method_at, 99)
    wheel.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["encrypted", "flag bit 6", "compression method 99"])
def test_one_wheel_zipfile_refuses_leaves_only_its_own_build_out(tmp_path, how) -> None:
    build_indexes(tmp_path / "www")
    (spoiled,) = (tmp_path / "www" / "whl" / "cu134" / "torch").glob("*x86_64.whl")
    _spoil(spoiled, "torch/version.py", how)
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "not a readable wheel" in done.stderr and "Traceback" not in done.stderr
    catalog = json.loads((tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json").read_text())
    judged = {(b["variant"], b["platform"]) for b in catalog["builds"] if b["torch"] == "2.16.0"}
    assert ("cu134", "linux-aarch64") in judged and ("cpu", "linux-x86_64") in judged


def test_a_table_of_two_thousand_cuda_lines_costs_a_bounded_number_of_requests(tmp_path) -> None:
    table = (
        "PYTORCH_RELEASES_CODE_CC = {\n"
        + "".join(f'    "{major}.{minor}": {{"x86_64": {{90}}}},\n' for major in range(30, 50) for minor in range(100))
        + '    "13.4": {"x86_64": {80, 90}, "aarch64": {90}},\n}\n'
    )
    build_indexes(tmp_path / "www", table)
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"its table names 2\d\d\d CUDA lines; the first 12 are read", done.stderr), done.stderr
    # Each line read is one variant page asked for (most of them not there): 12, and the shipped variants.
    assert len([line for line in done.stderr.splitlines() if ": cannot read" in line]) <= 12 + 4, done.stderr


def test_a_refresh_that_reads_nothing_new_writes_nothing(tmp_path) -> None:
    """PyPI lists no release newer than the facts: nothing is written, and no answer then says its facts were
    "read from the index"."""
    root = tmp_path / "www" / "pypi" / "torch"
    root.mkdir(parents=True)
    (root / "index.html").write_text("<!DOCTYPE html><html><body></body></html>\n")
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "nothing new read: nothing written" in done.stderr
    cached = tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json"
    catalog = json.loads(cached.read_text()) if cached.exists() else {"builds": []}
    assert not [b for b in catalog["builds"] if b["torch"] == "2.16.0"], done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert not any(reason.startswith("wheel facts read from the index") for reason in h100["reasons"])


def test_releases_listed_far_past_the_facts_never_crowd_out_the_next_one(tmp_path) -> None:
    """PyPI's page also lists 97.0.0 to 99.0.0 (no such releases: their links lead nowhere): the releases that follow
    the facts are read first, so 2.16.0 is judged."""
    build_indexes(tmp_path / "www")
    for major in (96, 97, 98, 99):
        (tmp_path / "www" / "pypi" / "torch" / f"torch-{major}.0.0-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(
            b"not a wheel"
        )
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi/", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] == "2.16.0"


def test_a_server_sending_more_than_its_content_range_is_not_believed(tmp_path) -> None:
    """Every range answered with 64 bytes more than its Content-Range names: what was read is not the wheel's own
    bytes, so no wheel is believed (each named), no build of 2.16.0 is kept, and an H100 is not answered 2.16.0."""
    build_indexes(tmp_path / "www")
    with range_server(tmp_path / "www", {}, excess=64) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert "Traceback" not in done.stderr
    assert re.search(r"torch-2\.16\.0[^ ]*\.whl: \d+ bytes for a range of \d+", done.stderr), done.stderr
    cached = tmp_path / "cache" / "pickvariant" / "wheels-refreshed.json"
    catalog = json.loads(cached.read_text()) if cached.exists() else {"builds": []}
    assert not [b for b in catalog["builds"] if b["torch"] == "2.16.0"], done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] != "2.16.0"


def test_a_release_candidate_on_the_index_is_not_read_and_fails_nothing(tmp_path) -> None:
    """PyPI's page also lists 2.17.0rc1 (as PyPI lists pre-releases): it is no release, so it is not read as one,
    and 2.16.0 is read and recommended as without it."""
    from test_wheel_refresh import torch_wheel
    from wheel_mirror import write_pages

    build_indexes(tmp_path / "www")
    torch_wheel(tmp_path / "www" / "pypi" / "torch", "2.17.0rc1", None, "cp312-cp312-manylinux_2_28_x86_64", "13.4")
    write_pages([tmp_path / "www" / "pypi" / "torch"])
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "new releases read: 2.16.0;" in done.stderr and "2.17.0rc1" not in done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] == "2.16.0"


def test_a_table_assigned_twice_is_read_as_python_would_run_it_the_last_one(tmp_path) -> None:
    """torch/cuda/__init__.py assigning the release table twice (an empty one, then the real one): Python would
    leave the last, so the refresh reads the last, and the release is judged by it, not left out."""
    build_indexes(tmp_path / "www", "PYTORCH_RELEASES_CODE_CC = {}\n" + TABLE)
    with range_server(tmp_path / "www", {}) as url:
        done = _run([*REFRESH, "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], tmp_path).stdout)
    assert h100["recommendation"]["release"] == "2.16.0"
    assert h100["recommendation"]["sass"] == ["8.0", "8.6", "9.0", "10.0", "12.0"]  # the last table's 13.4 row


def test_the_credentials_of_an_index_never_travel_to_where_it_redirects(tmp_path) -> None:
    """PyPI's index named with deploy:SECRET@ on one server that redirects to another host: the refresh follows the
    redirect and reads the release there, and that host never receives the Authorization header."""
    build_indexes(tmp_path / "www")
    sent: dict[str, int] = {}
    with range_server(tmp_path / "www", sent) as target:
        moved = f"HTTP/1.1 302 Found\r\nLocation: {target}/pypi/torch/\r\nContent-Length: 0\r\n\r\n".encode()
        with canned(moved) as url:
            index = url.replace("http://", "http://deploy:S3cretPw@")
            done = _run([*REFRESH, "--pypi", f"{index}/simple", "--wheel-index", f"{target}/whl"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "new releases read: 2.16.0" in done.stderr and "S3cretPw" not in done.stderr
    assert not [key for key in sent if key.startswith("as ")], sent
