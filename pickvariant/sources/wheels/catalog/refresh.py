"""`catalog wheels --refresh`: the torch releases an index holds that the wheel facts do not, read from their wheels.

For each release newer than the newest the facts hold, PyPI's own Linux wheels say which CUDA line PyPI serves
(their `torch/version.py`) and which CUDA lines the release was built for (`PYTORCH_RELEASES_CODE_CC`); each
variant index under the index root (ROOT/cu132/torch/, ROOT/cpu/torch/) is then listed, and one Linux wheel per
variant and architecture is read the same way. What is read becomes facts marked W (read from the wheel), each
citing the wheel's URL and size; what cannot be read (no Range support, no table: a release before 2.13, a CUDA
line its table lacks, a table claiming code for an architecture its CUDA line cannot build, by the hardware facts)
is written with why and left out of the catalog. Where a variant index cannot be listed (a proxy that passes PyPI
only), PyPI's own Linux wheels still give their builds. The whole refresh has one wall-clock deadline and a bound on
its requests (remote.bounded). Windows wheels are not judged from the
table: its rows are per host architecture, and Windows builds differ (cu126 keeps 6.1 there). Nothing else is
guessed: companions are not paired for a release read this way (its companions' metadata is not read).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import Version

from pickvariant._base import settings
from pickvariant._base.errors import OperationFailed
from pickvariant._base.urls import public_url
from pickvariant._base.versions import version_key
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.wheels.catalog.remote import Spent, bounded
from pickvariant.sources.wheels.catalog.simple import IndexedWheel, wheels_of
from pickvariant.sources.wheels.catalog.wheelread import TABLE, WheelRead, read_wheel

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


MAX_NEW_RELEASES = 4  # an index listing more (a release every two to three months) is read oldest first, up to these
MAX_VARIANTS = 12  # CUDA lines one release's table may name (2.15 names 3): more are left out, named
MAX_REQUESTS = 400  # every request of one refresh: pages and Range reads (a real one makes about 60)


def new_releases(facts: Mapping[str, Any], pypi_wheels: list[IndexedWheel]) -> list[Version]:
    """The final releases PyPI lists that are newer than the newest the facts hold, oldest first: the first
    MAX_NEW_RELEASES of them, the ones that follow what the facts hold (a listed 99.0 crowds none of them out)."""
    newest = max(Version(release["torch"]) for release in facts["releases"])
    found = {wheel.version for wheel in pypi_wheels if not (wheel.version.is_prerelease or wheel.version.local)}
    return sorted(version for version in found if version > newest)[:MAX_NEW_RELEASES]


class Told:
    """What a refresh says as it goes, and what it could not read (a refresh with any is incomplete)."""

    def __init__(self, said: Callable[[str], None]) -> None:
        self.said = said
        self.failed: list[str] = []

    def __call__(self, line: str) -> None:
        self.said(line)

    def failure(self, line: str) -> None:
        self.failed.append(line)
        self.said(line)


def refresh(
    facts: Mapping[str, Any],
    index_root: str,
    pypi: str,
    said: Callable[[str], None],
    hardware: Hardware,
    seconds: float = settings.DEFAULT_NETWORK_TIMEOUT_S,
) -> tuple[list[dict[str, Any]], dict[str, str], list[str]]:
    """The facts of every new release (as wheel-facts.json's releases), the sources they cite, and what could not be
    read (an incomplete refresh)."""
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    sources: dict[str, str] = {"PR": f"the simple index page of torch at {public_url(pypi)}, read {today}"}
    told = Told(said)
    with bounded(seconds, MAX_REQUESTS, "catalog wheels --refresh", f"set {settings.NETWORK_TIMEOUT}"):
        pypi_wheels = wheels_of(pypi, "torch")
        releases = []
        for version in new_releases(facts, pypi_wheels):
            told(f"torch {version}: new on {public_url(pypi)}; reading its wheels")
            try:
                release = _release(facts, version, index_root, pypi_wheels, sources, told, hardware)
            except Spent as error:  # the deadline or the request bound: this release and those after it
                told.failure(f"  torch {version}: {error}; left out")
                break
            if release is not None:
                releases.append(release)
    return releases, sources, told.failed


def _release(
    facts: Mapping[str, Any],
    version: Version,
    index_root: str,
    pypi_wheels: list[IndexedWheel],
    sources: dict[str, str],
    told: Told,
    hardware: Hardware,
) -> dict[str, Any] | None:
    own = [wheel for wheel in pypi_wheels if wheel.version == version]
    found = {tag.interpreter for wheel in own for tag in wheel.tags if _PYTHON.fullmatch(tag.interpreter)}
    # As the facts order them: the regular builds by version, then the free-threaded ones (cp314t) by version.
    python = sorted(found, key=lambda tag: (tag.endswith("t"), int(tag[2:].rstrip("t"))))
    if not python:
        told(f"  torch {version}: no CPython wheel of it on PyPI; left out")
        return None
    pypi: dict[str, str | None] = dict.fromkeys(PLATFORMS)
    tables: list[dict[str, dict[str, tuple[int, ...]]]] = []
    rows: list[dict[str, Any]] = []
    pypi_reads: dict[str, WheelRead] = {}
    for platform in PLATFORMS:
        wheel = _one(own, platform)
        read = _read(wheel, told) if wheel is not None else "none on PyPI"
        if isinstance(read, WheelRead):
            pypi[platform] = _variant(read.cuda)
            tables += [read.table] if read.table else []
            if platform not in LINUX and read.cuda is None:  # PyPI's Windows and macOS torch: CPU builds
                rows.append(_row("cpu", platform, "", read, sources, hardware))
            elif platform in LINUX:
                pypi_reads[platform] = read
    # PyPI's own CUDA lines first, then the rest in order: those read where the table names more than MAX_VARIANTS.
    served = {read.cuda for read in pypi_reads.values() if read.cuda}
    lines = sorted(
        {line for table in tables for line in table}, key=lambda line: (line not in served, version_key(line))
    )
    if len(lines) > MAX_VARIANTS:
        told.failure(f"  torch {version}: its table names {len(lines)} CUDA lines; the first {MAX_VARIANTS} are read")
        lines = lines[:MAX_VARIANTS]
    shipped = {row["variant"] for release in facts["releases"][-1:] for row in release["builds"]}
    variants = sorted({"cpu", *(_variant(line) for line in lines), *shipped})
    for variant in variants:
        rows += _variant_rows(index_root, variant, version, sources, told, hardware)
    rows += _pypi_rows(pypi, pypi_reads, rows, sources, hardware)
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


def _pypi_rows(
    pypi: Mapping[str, str | None],
    reads: Mapping[str, WheelRead],
    rows: list[dict[str, Any]],
    sources: dict[str, str],
    hardware: Hardware,
) -> list[dict[str, Any]]:
    """PyPI's own Linux builds, from its own wheels, where the variant index gave no judged row of them (it could not
    be listed: a proxy that passes PyPI only). PyPI's wheel and the index's are the same build (wheels.md)."""
    judged = {(row["variant"], row["platform"]) for row in rows if row["sass_confidence"] != "U"}
    added = []
    for platform, read in reads.items():
        variant = pypi[platform]
        if variant is not None and (variant, platform) not in judged:
            rows_now = [row for row in rows if (row["variant"], row["platform"]) == (variant, platform)]
            for row in rows_now:
                rows.remove(row)
            added.append(_row(variant, platform, LINUX[platform], read, sources, hardware))
    return added


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


def _read(wheel: IndexedWheel, told: Told) -> WheelRead | str:
    try:
        read = read_wheel(wheel.url)
    except Spent:
        raise  # the whole refresh's deadline or request bound: nothing more is read
    except OperationFailed as error:
        told.failure(f"  {error}")
        return str(error)
    told(f"  {wheel.filename}: read {read.fetched} of its {read.size} bytes")
    return read


def _variant_rows(
    index_root: str, variant: str, version: Version, sources: dict[str, str], told: Told, hardware: Hardware
) -> list[dict[str, Any]]:
    try:
        listed = [
            wheel for wheel in wheels_of(f"{index_root}/{variant}", "torch") if wheel.version.public == str(version)
        ]
    except Spent:
        raise
    except OperationFailed as error:
        told.failure(f"  {variant}: {error}")
        return []
    rows = []
    for platform, host in LINUX.items():
        wheel = _one([w for w in listed if w.version.local == variant], platform)
        if wheel is not None:
            rows.append(_row(variant, platform, host, _read(wheel, told), sources, hardware))
    if variant != "cpu" and any(tag.platform == "win_amd64" for wheel in listed for tag in wheel.tags):
        why = "Windows wheels are not judged from the release table: its rows are per host architecture, and Windows builds differ (cu126 keeps 6.1 there)"
        rows.append(_unknown_row(variant, "windows-amd64", why))
    return rows


def _row(
    variant: str, platform: str, host: str, read: WheelRead | str, sources: dict[str, str], hardware: Hardware
) -> dict[str, Any]:
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
    impossible = [cc for cc in sass if not _buildable(hardware, cc, read.cuda)]
    if impossible:  # the table's word is believed only where the hardware facts allow it
        why = (
            f"its table claims code for {', '.join(impossible)}, which CUDA {read.cuda} cannot build (the hardware "
            "facts): not believed"
        )
        return {**_unknown_row(variant, platform, why), "cuda": read.cuda, "sources": [source]}
    return {**_base(variant, platform, [source]), "sass": sass, "ptx": None, "cuda": read.cuda,
            "sass_confidence": "W", "ptx_confidence": "U"}  # fmt: skip


def _buildable(hardware: Hardware, capability: str, cuda: str) -> bool:
    """Can CUDA `cuda` build code for this compute capability, by the hardware facts? One they do not know is not."""
    from pickvariant._base.errors import PickVariantError
    from pickvariant._base.versions import parse_compute_capability

    try:
        arch = hardware.arch_of(parse_compute_capability(capability))
    except PickVariantError:
        return False
    return arch is not None and arch.builds_with(cuda)


def _base(variant: str, platform: str, cited: list[str]) -> dict[str, Any]:
    return {"variant": variant, "platform": platform, "cuda": None, "sources": cited, "note": NOTE}


def _unknown_row(variant: str, platform: str, why: str) -> dict[str, Any]:
    return {**_base(variant, platform, []), "sass": None, "ptx": None, "sass_confidence": "U", "ptx_confidence": "U",
            "note": why[:400]}  # fmt: skip
