"""`catalog wheels --refresh`: the torch releases an index holds that the wheel facts do not, read from their wheels.

For each release newer than the newest the facts hold, PyPI's own Linux wheels say which CUDA line PyPI serves
(their `torch/version.py`) and which CUDA lines the release was built for (`PYTORCH_RELEASES_CODE_CC`); each
variant index under the index root (ROOT/cu132/torch/, ROOT/cpu/torch/) is then listed, and one Linux wheel per
variant and architecture is read the same way. What is read becomes facts marked W (read from the wheel), each
citing the wheel's URL and size; what cannot be read (no Range support, no table: a release before 2.13, a CUDA
line its table lacks) is written with why and left out of the catalog. Windows wheels are not judged from the
table: its rows are per host architecture, and Windows builds differ (cu126 keeps 6.1 there). Nothing else is
guessed: companions are not paired for a release read this way (its companions' metadata is not read).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import Version

from pickvariant._base.errors import OperationFailed
from pickvariant._base.urls import public_url
from pickvariant.sources.wheels.simple import IndexedWheel, wheels_of
from pickvariant.sources.wheels.wheelread import TABLE, WheelRead, read_wheel

LINUX = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64"}  # platform: the table's host key
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-amd64", "macos-arm64")
_TAGS = {  # platform: its wheel tags' platform prefix and suffix
    "linux-x86_64": ("manylinux", "_x86_64"),
    "linux-aarch64": ("manylinux", "_aarch64"),
    "windows-amd64": ("win_amd64", "win_amd64"),
    "macos-arm64": ("macosx_", "_arm64"),
}
_PYTHON = re.compile(r"cp3[0-9]{1,2}t?")
NOTE = "read from the wheel by `pickvariant catalog wheels --refresh`"


MAX_NEW_RELEASES = 4  # an index listing more (a release every two to three months) is read newest first, up to these


def new_releases(facts: Mapping[str, Any], pypi_wheels: list[IndexedWheel]) -> list[Version]:
    """The final releases PyPI lists that are newer than the newest the facts hold, oldest first (the newest
    MAX_NEW_RELEASES of them: each costs a few requests per variant)."""
    newest = max(Version(release["torch"]) for release in facts["releases"])
    found = {wheel.version for wheel in pypi_wheels if not (wheel.version.is_prerelease or wheel.version.local)}
    return sorted(version for version in found if version > newest)[-MAX_NEW_RELEASES:]


def refresh(
    facts: Mapping[str, Any], index_root: str, pypi: str, said: Callable[[str], None]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The facts of every new release (as wheel-facts.json's releases), with the sources they cite."""
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    sources: dict[str, str] = {"PR": f"the simple index page of torch at {public_url(pypi)}, read {today}"}
    pypi_wheels = wheels_of(pypi, "torch")
    releases = []
    for version in new_releases(facts, pypi_wheels):
        said(f"torch {version}: new on {public_url(pypi)}; reading its wheels")
        release = _release(facts, version, index_root, pypi_wheels, sources, said)
        if release is not None:
            releases.append(release)
    return releases, sources


def _release(
    facts: Mapping[str, Any],
    version: Version,
    index_root: str,
    pypi_wheels: list[IndexedWheel],
    sources: dict[str, str],
    said: Callable[[str], None],
) -> dict[str, Any] | None:
    own = [wheel for wheel in pypi_wheels if wheel.version == version]
    python = sorted({tag.interpreter for wheel in own for tag in wheel.tags if _PYTHON.fullmatch(tag.interpreter)})
    if not python:
        said(f"  torch {version}: no CPython wheel of it on PyPI; left out")
        return None
    pypi: dict[str, str | None] = dict.fromkeys(PLATFORMS)
    tables: list[dict[str, dict[str, tuple[int, ...]]]] = []
    rows: list[dict[str, Any]] = []
    for platform in PLATFORMS:
        wheel = _one(own, platform)
        read = _read(wheel, said) if wheel is not None else "none on PyPI"
        if isinstance(read, WheelRead):
            pypi[platform] = _variant(read.cuda)
            tables += [read.table] if read.table else []
            if platform not in LINUX and read.cuda is None:  # PyPI's Windows and macOS torch: CPU builds
                rows.append(_row("cpu", platform, "", read, sources))
    lines = {line for table in tables for line in table}
    shipped = {row["variant"] for release in facts["releases"][-1:] for row in release["builds"]}
    variants = sorted({"cpu", *(_variant(line) for line in lines), *shipped})
    rows += [row for variant in variants for row in _variant_rows(index_root, variant, version, sources, said)]
    mac = sorted(tag.platform for wheel in own for tag in wheel.tags if tag.platform.startswith("macosx_"))
    return {
        "torch": str(version),
        "python": python,
        "pypi": pypi,
        "pypi_sources": ["PR"],
        "macos_tag": "_".join(mac[0].split("_")[:3]) if mac else "macosx_11_0",
        "companions": {"torchvision": None, "torchaudio": None},
        "builds": rows,
        "not_chosen": [],
        "unknown": [],
    }


def _variant(cuda: str | None) -> str:
    return "cpu" if cuda is None else "cu" + cuda.replace(".", "")


def _one(wheels: list[IndexedWheel], platform: str) -> IndexedWheel | None:
    """One wheel of `platform` (a regular CPython build; every tag of a release carries the same table)."""
    prefix, suffix = _TAGS[platform]
    found = [
        wheel
        for wheel in wheels
        if any(tag.platform.startswith(prefix) and tag.platform.endswith(suffix) for tag in wheel.tags)
    ]
    regular = [wheel for wheel in found if not any(tag.abi.endswith("t") for tag in wheel.tags)]
    return min(regular or found, key=lambda wheel: wheel.filename, default=None)


def _read(wheel: IndexedWheel, said: Callable[[str], None]) -> WheelRead | str:
    try:
        read = read_wheel(wheel.url)
    except OperationFailed as error:
        said(f"  {error}")
        return str(error)
    said(f"  {wheel.filename}: read {read.fetched} of its {read.size} bytes")
    return read


def _variant_rows(
    index_root: str, variant: str, version: Version, sources: dict[str, str], said: Callable[[str], None]
) -> list[dict[str, Any]]:
    try:
        listed = [
            wheel for wheel in wheels_of(f"{index_root}/{variant}", "torch") if wheel.version.public == str(version)
        ]
    except OperationFailed as error:
        said(f"  {variant}: {error}")
        return []
    rows = []
    for platform, host in LINUX.items():
        wheel = _one([w for w in listed if w.version.local == variant], platform)
        if wheel is not None:
            rows.append(_row(variant, platform, host, _read(wheel, said), sources))
    if variant != "cpu" and any(tag.platform == "win_amd64" for wheel in listed for tag in wheel.tags):
        why = "Windows wheels are not judged from the release table: its rows are per host architecture, and Windows builds differ (cu126 keeps 6.1 there)"
        rows.append(_unknown_row(variant, "windows-amd64", why))
    return rows


def _row(variant: str, platform: str, host: str, read: WheelRead | str, sources: dict[str, str]) -> dict[str, Any]:
    if isinstance(read, str):
        return _unknown_row(variant, platform, f"its wheel could not be read: {read}"[:400])
    source = f"WR{len(sources) + 1}"
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    sources[source] = (
        f"the wheel {read.url} ({read.size} bytes): torch/version.py and torch/cuda/__init__.py {TABLE}, read {today}"[
            :600
        ]
    )
    if read.cuda is None:
        return {
            **_base(variant, platform, [source]),
            "sass": [],
            "ptx": [],
            "sass_confidence": "W",
            "ptx_confidence": "W",
        }
    if read.table is None or host not in read.table.get(read.cuda, {}):
        missing = (
            "no release table in it (a release before 2.13)"
            if read.table is None
            else f"its table has no CUDA {read.cuda} row for {host}"
        )
        return {**_unknown_row(variant, platform, missing), "cuda": read.cuda, "sources": [source]}
    sass = [f"{code // 10}.{code % 10}" for code in read.table[read.cuda][host]]
    return {**_base(variant, platform, [source]), "sass": sass, "ptx": None, "cuda": read.cuda,
            "sass_confidence": "W", "ptx_confidence": "U"}  # fmt: skip


def _base(variant: str, platform: str, cited: list[str]) -> dict[str, Any]:
    return {"variant": variant, "platform": platform, "cuda": None, "sources": cited, "note": NOTE}


def _unknown_row(variant: str, platform: str, why: str) -> dict[str, Any]:
    return {**_base(variant, platform, []), "sass": None, "ptx": None, "sass_confidence": "U", "ptx_confidence": "U",
            "note": why[:400]}  # fmt: skip
