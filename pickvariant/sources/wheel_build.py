"""What one of PyTorch's own wheel builds is, as the wheel rules (rules/wheel_pick.py) walk it.

A WheelBuild is one torch release of one index variant (`cpu`, `cu126`, …) for one platform: the Python tags it is
built for, the compute capabilities it carries SASS (machine code) and PTX for, its CUDA runtime and so its driver
floor, and whether PyPI's own `torch` of that platform is this build. A WheelCatalog holds them with the rows left
out (and why) and the companion releases paired with each torch release. sources/wheels/ reads the shipped catalog
(wheels.json, derived by `pickvariant catalog wheels` from sourced facts) into these records; nothing here reads
a file.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickvariant._base.records import keyword_record
from pickvariant._base.versions import ComputeCapability, DriverVersion, version_key

# The platforms the wheel catalog names, by the (os, arch) pickvariant's machine facts report.
WHEEL_PLATFORMS = {
    ("linux", "x86_64"): "linux-x86_64",
    ("linux", "aarch64"): "linux-aarch64",
    ("darwin", "aarch64"): "macos-arm64",
    ("windows", "x86_64"): "windows-amd64",
}
CPU_VARIANT = "cpu"
# Platforms whose wheels carry no local label: the macOS wheels are published as plain `torch-2.14.1-…` (PyPI's
# files, wheels.md P1) and report `torch.__version__` without one.
UNLABELLED_PLATFORMS = frozenset({"macos-arm64"})


@keyword_record
class WheelBuild:
    torch: str  # the release, "2.14.1"
    variant: str  # the index it is on: "cpu", "cu126", …
    platform: str  # one of WHEEL_PLATFORMS' values
    python: tuple[str, ...]  # the CPython tags it is built for: "cp312", "cp314t" (free-threaded)
    sass: tuple[ComputeCapability, ...]
    ptx: tuple[ComputeCapability, ...]
    ptx_known: bool  # False: no trusted PTX list, so none is assumed (a build judged by SASS alone only refuses)
    cuda: str | None  # "12.6"; None for a CPU build
    min_driver: DriverVersion | None
    pypi: bool  # PyPI's own `torch` of this platform is this build
    sources: tuple[str, ...]
    note: str = ""

    @property
    def local(self) -> str:
        """The version with its local label, as `torch.__version__` says it: "2.14.1+cu126" ("2.14.1" on macOS)."""
        return self.torch if self.platform in UNLABELLED_PLATFORMS else f"{self.torch}+{self.variant}"

    @property
    def is_cuda(self) -> bool:
        return self.cuda is not None

    @property
    def sort_key(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Newest torch first, then newest CUDA line, CPU last (as sorted(..., reverse=True) orders)."""
        return version_key(self.torch), version_key(self.cuda) if self.cuda else ()


@keyword_record
class LeftOut:
    torch: str
    variant: str
    platform: str  # a platform, or "every platform"
    why: str


@keyword_record
class PairedRelease:
    """A companion's release paired with a torch release, and the torch it requires (None: it names none).

    `pypi_only`: a pairing its maintainers state for a later torch than the release was built with (torchaudio
    2.11.0 beside torch >= 2.11), true only of PyPI's own builds, where the release is: `sources` say who said so."""

    project: str
    version: str
    requires: str | None
    pypi_only: bool = False
    sources: tuple[str, ...] = ()


@keyword_record
class WheelCatalog:
    builds: tuple[WheelBuild, ...]
    left_out: tuple[LeftOut, ...]
    # torch release -> project -> its paired release, or None where the project published none for that torch
    companions: Mapping[str, Mapping[str, PairedRelease | None]]
    index_root: str
    facts_compiled: str
    sources: Mapping[str, str]
    refreshed: str | None = None  # the date `catalog wheels --refresh` read the index, where this catalog is its
    based_on: str | None = None  # the shipped facts it was derived from (their sha256), where it is a refreshed one

    def for_platform(self, platform: str) -> tuple[WheelBuild, ...]:
        return tuple(build for build in self.builds if build.platform == platform)

    def left_out_for(self, platform: str) -> tuple[LeftOut, ...]:
        return tuple(row for row in self.left_out if row.platform in (platform, "every platform"))

    def companion(self, torch: str, project: str) -> PairedRelease | None:
        return self.companions.get(torch, {}).get(project)
