"""A local conda channel the tests write: real conda packages (.tar.bz2 with info/index.json and info/paths.json),
indexed by py-rattler's own indexer (each subdir's repodata.json), as a channel on a server would hold them."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tarfile
from pathlib import Path

STAMP = 1764000000


def package(channel: Path, subdir: str, name: str, version: str, build: str, depends: tuple[str, ...] = ()) -> None:
    """One package: a file of its own under its prefix (a marker naming it), and its metadata."""
    where = channel / subdir
    where.mkdir(parents=True, exist_ok=True)
    files = {f"share/{name}/{build}.txt": f"{name} {version} {build}\n"}
    index = {
        "name": name, "version": version, "build": build, "build_number": 0, "depends": list(depends),
        "subdir": subdir, "timestamp": STAMP * 1000, "license": "BSD-3-Clause",
    }  # fmt: skip
    paths = {
        "paths": [
            {"_path": path, "path_type": "hardlink", "sha256": hashlib.sha256(text.encode()).hexdigest(),
             "size_in_bytes": len(text.encode())}
            for path, text in files.items()
        ],
        "paths_version": 1,
    }  # fmt: skip
    with tarfile.open(where / f"{name}-{version}-{build}.tar.bz2", "w:bz2") as tar:
        for member, text in {
            "info/index.json": json.dumps(index),
            "info/paths.json": json.dumps(paths),
            **files,
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size, info.mtime = len(data), STAMP
            tar.addfile(info, io.BytesIO(data))


def indexed(channel: Path) -> Path:
    """The channel with every subdir's repodata.json written by py-rattler's indexer."""
    from rattler.index import index_fs

    (channel / "noarch").mkdir(parents=True, exist_ok=True)
    asyncio.run(index_fs(channel, write_zst=False, write_shards=False))
    return channel


def forge_channel(channel: Path) -> Path:
    """Forge's channel: torch 2.5.1 for CUDA 12.6 and for the CPU, each for Python 3.11 and 3.12, a build of a
    variant Forge's table does not hold (left out), and torchvision 0.20.1 paired with it."""
    for python in ("311", "312"):
        package(channel, "linux-64", "pytorch", "2.5.1", f"cuda126_py{python}_0")
        package(channel, "linux-64", "pytorch", "2.5.1", f"cpu_py{python}_0")
        package(channel, "linux-64", "torchvision", "0.20.1", f"py{python}_0", ("pytorch ==2.5.1",))
    package(channel, "linux-64", "pytorch", "2.5.1", "cuda130_py312_0")
    return indexed(channel)
