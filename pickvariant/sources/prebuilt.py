"""A catalog of prebuilt builds, whichever source publishes them: PyTorch's own wheels, an organisation's own index.

Each build is the one record every source's builds are (sources/runs_on.Build), made here by `published` with what a
published build adds: the index it is on (`cu126`), whether an installer gets it with no index named (PyPI's own
`torch`), whether its PTX list is known. A PrebuiltCatalog holds them with the rows left out (and why) and the
companion releases paired with each torch release. A source reads its own files into these records (the wheels
source: sources/wheels/catalog/load.py); nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pickvariant._base.records import keyword_record
from pickvariant._base.versions import ComputeCapability, DriverVersion
from pickvariant.sources.accelerator import JUDGED, Cuda, GpuCode
from pickvariant.sources.nouns import WHEELS, Nouns
from pickvariant.sources.runs_on import Build

# The platforms a prebuilt catalog names, by the (os, arch) pickvariant's machine facts report.
PLATFORMS = MappingProxyType(
    {
        ("linux", "x86_64"): "linux-x86_64",
        ("linux", "aarch64"): "linux-aarch64",
        ("darwin", "aarch64"): "macos-arm64",
        ("windows", "x86_64"): "windows-amd64",
    }
)
# PyTorch's builds for another vendor's GPUs: the index prefix of each, by the vendor machine/othergpu.py names, and
# the stack it is built on. Kept in a catalog's rows left out, not judged yet (issue 54).
OTHER_STACKS = {"amd": ("rocm", "ROCm"), "intel": ("xpu", "XPU")}
# Platforms whose wheels carry no local label: the macOS wheels are published as plain `torch-2.14.1-…` (PyPI's
# files, wheels.md P1) and report `torch.__version__` without one.
UNLABELLED_PLATFORMS = frozenset({"macos-arm64"})


def published(
    *,
    source: str,
    torch: str,
    index: str,
    platform: str,
    python: tuple[str, ...],
    sass: tuple[ComputeCapability, ...],
    ptx: tuple[ComputeCapability, ...],
    cuda: str | None,
    cuda_min_driver: DriverVersion | None,
    ptx_known: bool = True,
    default_index: bool = False,
    sources: tuple[str, ...] = (),
    note: str = "",
    gpu_code: GpuCode | None = None,
    platforms: Mapping[tuple[str, str], str] = PLATFORMS,
    label: str | None = None,
) -> Build:
    """A build published on `index` for `platform`, one of `platforms`' values (the source's own names of the
    (os, arch) machine facts report: PLATFORMS, PyTorch's; ValueError for another). Its label is how the source names
    this build; by default as `torch.__version__` says it: "2.14.1+cu126" ("2.14.1" on macOS). A prebuilt build
    requires no instruction set: ATen picks its CPU kernels at run time."""
    machine = next((machine for machine, name in platforms.items() if name == platform), None)
    if machine is None:
        raise ValueError(f"platform {platform!r}: not one of {', '.join(platforms.values())}")
    if label is None:
        label = torch if platform in UNLABELLED_PLATFORMS else f"{torch}+{index}"
    if cuda is None and (sass or ptx):
        raise ValueError(f"{label}: SASS or PTX with no CUDA line")
    code = (
        gpu_code
        if cuda is None
        else Cuda(line=cuda, sass=sass, ptx=ptx, min_driver=cuda_min_driver, ptx_known=ptx_known)
    )
    return Build(
        source=source,
        label=label,
        torch=torch,
        os=machine[0],
        arch=machine[1],
        platform=platform,
        python=python,
        cpu_isa=None,
        code=code,
        index=index,
        default_index=default_index,
        sources=sources,
        note=note,
    )


def laid_out(layout: str, root: str, index: str) -> str:
    """Where a build on `index` is installed from, below `root`, by its source's layout (registry.Source.layout): an
    index per variant ("{root}/{index}"), or one channel holding every variant ("{root}")."""
    return root if layout == "{root}" else f"{root}/{index}"


def other_stack(version_or_index: str) -> str | None:
    """The stack of another vendor's GPUs a build is for, by its index or its version's local label: "ROCm" for
    rocm7.1 and 2.12.0+rocm7.1, "XPU" for xpu; None for any other."""
    index = version_or_index.partition("+")[2] or version_or_index
    return next((stack for prefix, stack in OTHER_STACKS.values() if index.startswith(prefix)), None)


@keyword_record
class LeftOut:
    torch: str
    variant: str  # the index it is on
    platform: str  # a platform, or "every platform"
    why: str


@keyword_record
class PairedRelease:
    """A companion's release paired with a torch release, and the torch it requires (None: it names none).

    `pypi_only`: a pairing its maintainers state for a later torch than the release was built with (torchaudio
    2.11.0 beside torch >= 2.11), true only of PyPI's own builds, where the release is: `sources` say who said so.
    `python`: the CPython tags the companion has wheels for where they are not the torch release's own (torchaudio
    2.11.0 beside torch 2.15.0 has no cp315); empty where they are."""

    project: str
    version: str
    requires: str | None
    pypi_only: bool = False
    sources: tuple[str, ...] = ()
    python: tuple[str, ...] = ()

    def serves(self, python_tag: str | None) -> bool:
        """Whether the companion has a wheel for that Python (None: none stated, any will do)."""
        return python_tag is None or not self.python or python_tag in self.python


@keyword_record
class PrebuiltCatalog:
    builds: tuple[Build, ...]
    left_out: tuple[LeftOut, ...]
    # torch release -> project -> its paired release, or None where the project published none for that torch
    companions: Mapping[str, Mapping[str, PairedRelease | None]]
    index_root: str
    facts_compiled: str
    sources: Mapping[str, str]
    refreshed: str | None = None  # the date `catalog wheels --refresh` read the index, where this catalog is its
    based_on: str | None = None  # the shipped facts it was derived from (their sha256), where it is a refreshed one
    # Who publishes these builds and what it calls them, as the rules' sentences name them, and where a build is
    # installed from: the Source's (registry.Source.catalog sets them).
    publisher: str = "PyTorch"
    nouns: Nouns = WHEELS
    layout: str = "{root}/{index}"
    # Its own names of the platforms machine facts report, by (os, arch): PyTorch's (PLATFORMS) unless it says.
    platforms: Mapping[tuple[str, str], str] = PLATFORMS

    def url(self, root: str, index: str) -> str:
        """Where a build on `index` is installed from, below `root` (an index per variant, or one channel)."""
        return laid_out(self.layout, root, index)

    def for_platform(self, platform: str) -> tuple[Build, ...]:
        return tuple(build for build in self.builds if build.platform == platform)

    def left_out_for(self, platform: str) -> tuple[LeftOut, ...]:
        return tuple(row for row in self.left_out if row.platform in (platform, "every platform"))

    def companion(self, torch: str, project: str) -> PairedRelease | None:
        return self.companions.get(torch, {}).get(project)


def judged_only(catalog: PrebuiltCatalog) -> PrebuiltCatalog:
    """The catalog with each build whose GPU code is of a family the rules cannot judge (sources/accelerator.py)
    moved to its rows left out, named: such a build is never answered, least of all as a CPU build."""
    unjudged = [build for build in catalog.builds if _family(build) not in JUDGED]
    if not unjudged:
        return catalog
    from pickvariant._base.records import replace

    rows = tuple(
        LeftOut(
            torch=build.torch,
            variant=build.index,
            platform=build.platform,
            why=f"its GPU code is of the family {_family(build)!r}, which pickvariant has no rule to judge",
        )
        for build in unjudged
    )
    kept = tuple(build for build in catalog.builds if build not in unjudged)
    return replace(catalog, builds=kept, left_out=(*catalog.left_out, *rows))


def _family(build: Build) -> str:
    try:
        return str(build.family)
    except AttributeError:  # a plug-in's record that names no family
        return "unnamed"
