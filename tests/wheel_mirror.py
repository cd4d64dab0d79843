"""A mirror of PyTorch's wheel indexes made for a test: small wheels named and tagged as PyTorch's are
(`torch-2.14.1+cu126-cp312-cp312-manylinux_2_28_x86_64.whl`), in PEP 503 simple pages (ROOT/cu126/torch/), served on
127.0.0.1, with decoys (another variant's torch in the same index, another Python tag) that only a pin with the local
label and the real installers' tag matching keep out. Each wheel's package raises on import: what reads an installed
version without importing torch is told apart from what imports it."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import http.server
import threading
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from packaging.tags import sys_tags


def interpreter_tag() -> str:
    """The running interpreter's most specific CPython tag with a manylinux platform, as PyTorch tags its wheels."""
    for tag in sys_tags():
        if (
            tag.interpreter.startswith("cp")
            and tag.abi == tag.interpreter
            and tag.platform.startswith("manylinux_2_28")
        ):
            return str(tag)
    tag = next(iter(sys_tags()))
    return str(tag)


def make_wheel(folder: Path, project: str, version: str, tag: str, padding: int = 0) -> Path:
    """A wheel of `project` at `version` (local label included) for `tag`; importing it raises. `padding`: that many
    more files of 4 KiB each (a real torch has about 4,000), so that an installer takes a while to write it."""
    name = f"{project}-{version}-{tag}.whl"
    dist_info = f"{project}-{version}.dist-info"
    files = {
        f"{project}/__init__.py": f"raise ImportError('the test mirror\\'s {project} {version} is not meant to be imported')\n",
        **{
            f"{project}/lib/part{index:05d}.py": f"# {version} {index}\n" + "#" * 4096 + "\n"
            for index in range(padding)
        },
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: pickvariant-tests\nRoot-Is-Purelib: false\nTag: {tag}\n",
    }
    record = []
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{member},sha256={digest},{len(data)}")
            archive.writestr(member, data)
        archive.writestr(f"{dist_info}/RECORD", "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n")
    return path


def build_mirror(root: Path, releases: dict[str, list[tuple[str, str]]], padding: int = 0) -> None:
    """ROOT/<variant>/<project>/ with its wheels and a PEP 503 index page; `releases`: variant -> (project, version)
    pairs, each built for this interpreter's tag and, as a decoy, for a Python tag no interpreter has."""
    tag = interpreter_tag()
    decoy_tag = tag.replace(tag.split("-")[0], "cp399", 1).replace(tag.split("-")[1], "cp399", 1)
    for variant, pairs in releases.items():
        for project, version in pairs:
            folder = root / variant / project
            folder.mkdir(parents=True, exist_ok=True)
            make_wheel(folder, project, version, tag, padding)
            make_wheel(folder, project, version, decoy_tag)
    write_pages(root.glob("*/*"))


def write_pages(folders: Iterable[Path]) -> None:
    """Each folder's PEP 503 page (index.html): a link to each of its wheels."""
    for page_folder in folders:
        links = "".join(
            f'<a href="{html.escape(wheel.name)}">{html.escape(wheel.name)}</a><br>\n'
            for wheel in sorted(page_folder.glob("*.whl"))
        )
        (page_folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


@contextlib.contextmanager
def served(root: Path) -> Iterator[str]:
    """The mirror on 127.0.0.1 (a free port) while the block runs: its root URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)) as url:
        yield url


@contextlib.contextmanager
def serving(server: Any) -> Iterator[str]:
    """A server (http.server's, or werkzeug's) answering on a thread while the block runs: its root URL."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
