"""What a build is, and a catalog of builds as the rules walk it, whichever source made it.

A Variant is one PyTorch build: its platform, Python, release (torch), CUDA line (whose driver floor the catalog's
CUDA line gives), the GPU architectures it carries as SASS and as PTX, its CPU instruction set (or none: ATen
dispatches at run time), grouped in Branches (a release line) with their Companions. A field only one source has
(a Flox branch's nixpkgs pin) another source leaves empty. A Catalog joins them with pickvariant's hardware facts
(sources/hardware.py) and carries its CompanionSource: the published companions and those built on a variant.
Each source fills these records: sources/flox/ from catalog.json (the build repository's recipes).

sources/flox/recipes/load.py reads and checks catalog.json into these records; `pickvariant catalog sync`
(sources/flox/recipes/sync.py) writes it. Nothing here reads a file or touches git.
A variant is identified by (branch, package): the same package name is built on
several branches with different PyTorch versions.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record, record
from pickvariant._base.versions import ComputeCapability
from pickvariant.sources.hardware import (
    CpuIsa,
    CudaLine,
    CudaRelease,
    GpuArch,
    Hardware,
    HardwareFacts,
    PeakThroughput,
    Platform,
    TorchSource,
    Workload,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path
    from typing import Any, Literal, Protocol, TypeVar

    T = TypeVar("T")
    K = TypeVar("K")

    # How a companion's torch relates to a PyTorch variant (closed: the rules branch on each).
    TorchRelation = Literal["identical", "separate", "unknown", "generated"]

    # Declared for the type checker alone: a Protocol class would import typing on detect's path.
    class CompanionSource(Protocol):
        """Where a catalog's companions come from, as the companion stage (rules/pairing.py) asks: those its
        source publishes, and those that can be built on a variant's own recipe (a source without recipes has none)."""

        def published(self, catalog: Catalog) -> tuple[Companion, ...]: ...

        def generated_projects(self) -> Collection[str]: ...

        def why_not_generated(self, project: str, variant: Variant, pin_torch: str | None) -> str | None: ...

        def generated_companion(self, project: str, variant: Variant) -> Companion: ...


SCHEMA_VERSION = 2

# What a catalog's names must be where they become a file name, a command-line argument or Nix code. The schema
# says the same, but a catalog from elsewhere may not have been checked by it: these are checked where they are used.
# (Patterns as text: compiled by `re`'s own cache where first used, never on detect's path.)
_PACKAGE_NAME = r"[a-z0-9][a-z0-9_.-]{0,127}"
_NIX_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"


# What must be the same for a companion and a PyTorch variant to be one PyTorch: Python, CUDA line, GPU
# architecture, ISA, platform. The one place the axes are listed.
AXES = ("python", "cuda", "gpu_arch", "cpu_isa", "platform")
if TYPE_CHECKING:
    Axes = tuple[str, str | None, str | None, str | None, str]


def axes_of(build: Variant | Companion | Mapping[str, Any]) -> Axes:
    """A variant's, a companion's or a catalog row's axes, in AXES' order."""
    return tuple(build[name] if isinstance(build, Mapping) else getattr(build, name) for name in AXES)


def checked_package(name: str) -> str:
    """`name` where it is a package name (a file name, a flox argument); BadInput where it could be anything else."""
    if not re.fullmatch(_PACKAGE_NAME, name):
        raise BadInput(
            f"the catalog's package name {name!r:.80} is not one (it would name a path or an option): refusing it"
        )
    return name


def checked_identifier(name: str, what: str) -> str:
    """`name` where it is a Nix identifier; BadInput where it would be Nix code of its own in a recipe."""
    if not re.fullmatch(_NIX_IDENTIFIER, name):
        raise BadInput(
            f"the catalog's {what} {name!r:.80} is not a Nix identifier (it would be Nix code in the recipe): refusing it"
        )
    return name


MPS = "mps"
# The repository a companion generated on a variant's own recipe names (sources/flox/recipes/generated.py makes them; the
# plan's wording names them apart from published ones).
GENERATED_BY = "pickvariant (generated on the variant's recipe)"


def _grouped(variants: Iterable[Variant], key: Callable[[Variant], K]) -> Mapping[K, tuple[Variant, ...]]:
    """Variants by a key, each group in catalog order."""
    groups: dict[K, list[Variant]] = {}
    for variant in variants:
        groups.setdefault(key(variant), []).append(variant)
    return {name: tuple(found) for name, found in groups.items()}


@keyword_record
class Variant:
    package: str
    branch: str
    path: str
    torch: str
    python: str
    gpu_arch: str | None  # "sm90", "mps", or None for CPU-only
    cpu_isa: str | None  # None for MPS: the Apple CPU is not chosen by flags
    cuda: str | None
    platform: str  # the Nix system
    nixpkgs_rev: str
    cudnn: bool

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Variant:
        """A variant from a validated catalog row whose keys are exactly the fields.

        The frozen dataclass __init__ sets each field through object.__setattr__, which
        costs a third of loading a thousand-variant catalog; filling __dict__ at once
        gives the same immutable object.
        """
        variant = object.__new__(cls)
        variant.__dict__.update(row)
        return variant

    def identity(self) -> dict[str, Any]:
        """What `detect`'s recommendation and `list` both show of a variant (JSON schema_version 2)."""
        return {
            "package": self.package,
            "branch": self.branch,
            "torch": self.torch,
            "python": self.python,
            "cuda": self.cuda,
            "gpu_arch": self.gpu_arch,
            "cpu_isa": self.cpu_isa,
            "platform": self.platform,
            "nixpkgs_rev": self.nixpkgs_rev,
            "cudnn": self.cudnn,
        }

    @property
    def is_mps(self) -> bool:
        return self.gpu_arch == MPS

    @property
    def sass_archs(self) -> tuple[str, ...]:
        """The GPU architectures the build carries machine code (SASS) for. A Flox variant is built for one: its
        recipe's only GPU target, proven by classification (sources/flox/recipes/classify.py)."""
        return (self.gpu_arch,) if self.gpu_arch is not None and self.gpu_arch != MPS else ()

    @property
    def ptx_archs(self) -> tuple[str, ...]:
        """The GPU architectures the build carries PTX for, which a newer GPU's driver compiles when it starts. A
        Flox variant has none: a recipe whose target adds +PTX is not classified (targets_disagreement)."""
        return ()

    @property
    def label(self) -> str:
        return f"{self.package} ({self.branch})"


@keyword_record
class Companion:
    """A torchvision, torchaudio or vLLM recipe, with the PyTorch it builds against.

    torch_relation: "identical" (it imports the PyTorch recipe `torch_of` of its branch: the same derivation),
    "separate" (its own build of torch `torch` from nixpkgs `torch_pin`), "unknown" (no pin: its torch is whatever
    the nixpkgs Flox builds it with gives)."""

    project: str
    repo: str
    branch: str
    package: str
    path: str
    version: str | None
    python: str
    gpu_arch: str | None
    cpu_isa: str | None
    cuda: str | None
    platform: str
    torch: str | None
    torch_pin: str | None
    torch_relation: TorchRelation
    torch_of: str | None
    # Build options its name ends with ("nomagma": built without MAGMA); none for most.
    build_options: tuple[str, ...] = ()
    # A companion built on the variant's own recipe: what building it costs (its source's words), else None.
    generation_cost: str | None = None
    # Its repository's recipes the user trusted whole (`catalog sync --trust-recipes`): classified by name, not proven.
    trusted_by_user: bool = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Companion:
        companion = object.__new__(cls)
        companion.__dict__.update(row)
        companion.__dict__["build_options"] = tuple(row.get("build_options", ()))
        companion.__dict__["generation_cost"] = None
        companion.__dict__["trusted_by_user"] = bool(row.get("trusted_by_user", False))
        return companion

    def identity(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "package": self.package,
            "repo": self.repo,
            "branch": self.branch,
            "version": self.version,
            "python": self.python,
            "cuda": self.cuda,
            "gpu_arch": self.gpu_arch,
            "cpu_isa": self.cpu_isa,
            "platform": self.platform,
            "torch": self.torch,
            "torch_pin": self.torch_pin,
            "torch_relation": self.torch_relation,
            "torch_of": self.torch_of,
            "build_options": list(self.build_options),
        }

    @property
    def axes(self) -> Axes:
        return axes_of(self)

    @property
    def label(self) -> str:
        return f"{self.package} ({self.repo} {self.branch})"


@keyword_record
class Branch:
    name: str
    commit: str
    torch: str
    python: str
    aligned_with: str | None  # e.g. "vllm 0.15.1": chosen only when named with --branch
    cuda_lines: tuple[CudaLine, ...]
    variants: tuple[Variant, ...]

    def variants_for(self, nix_system: str, gpu_arch: str | None) -> tuple[Variant, ...]:
        """This branch's variants for one Nix system and GPU architecture (None: CPU-only), in catalog order.

        decide asks only for the architectures that can run on the machine: a CPU-only host looks at
        a dozen variants of a branch rather than every CUDA build of it."""
        return self._by_hardware.get((nix_system, gpu_arch), ())

    @cached_property
    def _by_hardware(self) -> Mapping[tuple[str, str | None], tuple[Variant, ...]]:
        return _grouped(self.variants, operator.attrgetter("platform", "gpu_arch"))


@record
class Source:
    repo: str
    commit: str
    date: str
    # The user said to trust this repository's recipes (`catalog sync --trust-recipes`): classified by their names and
    # declared values, not held against the trusted upstream; every answer that uses one says so.
    trusted_by_user: bool = False


@keyword_record
class Catalog(Hardware):
    file: str  # the file it was read from, as text (`path` gives it as a Path)
    source: Source
    platforms: Mapping[str, Platform]
    build_hours: str
    build_disk_gb: float
    build_memory_gb: float
    flag_aliases: Mapping[str, tuple[str, ...]]
    tegra_capabilities: frozenset[ComputeCapability]
    isas: Mapping[str, CpuIsa]
    gpu_archs: Mapping[str, GpuArch]
    cuda_releases: Mapping[str, CudaRelease]
    compiler_flags: Mapping[str, tuple[str, ...]]
    nixpkgs_torch: Mapping[str, str]
    torch_sources: Mapping[str, TorchSource]
    python_preference: tuple[str, ...]
    min_macos: str
    workloads: Mapping[str, Workload]
    branches: tuple[Branch, ...]
    peaks: tuple[PeakThroughput, ...]
    torch_capability_order: tuple[str, ...]
    companion_source: CompanionSource
    # (branch, path, why) of each of the build repository's recipes sync left out (`list --all` shows them)
    left_out: tuple[tuple[str, str, str], ...] = ()

    @property
    def path(self) -> Path:
        """The file it was read from (pathlib is imported only where this is asked: detect never asks)."""
        from pathlib import Path

        return Path(self.file)

    @cached_property
    def hardware(self) -> HardwareFacts:
        """The hardware facts this catalog's rows were derived with (what `recipe --repo` classifies a recipe by)."""
        return HardwareFacts(
            platforms=self.platforms,
            isas=self.isas,
            gpu_archs=self.gpu_archs,
            cuda_releases=self.cuda_releases,
            compiler_flags=self.compiler_flags,
            nixpkgs_torch=self.nixpkgs_torch,
            torch_sources=self.torch_sources,
        )

    @cached_property
    def variants(self) -> tuple[Variant, ...]:
        return tuple(variant for branch in self.branches for variant in branch.variants)

    @cached_property
    def built_for(self) -> tuple[str, ...]:
        """The Nix systems some variant is built for, sorted."""
        return tuple(sorted({variant.platform for variant in self.variants}))

    @cached_property
    def _branch_by_name(self) -> Mapping[str, Branch]:
        return {branch.name: branch for branch in self.branches}

    @cached_property
    def _variants_by_package(self) -> Mapping[str, tuple[Variant, ...]]:
        return _grouped(self.variants, operator.attrgetter("package"))

    def branch(self, name: str) -> Branch:
        if name in self._branch_by_name:
            return self._branch_by_name[name]
        raise BadInput(f"unknown branch {name!r:.80}; the catalog has {', '.join(b.name for b in self.branches)}")

    def variant(self, package: str, branch: str | None = None) -> Variant:
        """The variant of that name, on `branch` when given; a name built on several branches needs one."""
        found = self._variants_by_package.get(package, ())
        if not found:
            raise BadInput(f"{package!r:.120} is not a package of the catalog (see `pickvariant list`)")
        if branch is not None:
            self.branch(branch)
            for variant in found:
                if variant.branch == branch:
                    return variant
            raise BadInput(f"{package} is not built on branch {branch}; it is on {', '.join(v.branch for v in found)}")
        if len(found) > 1:
            listing = ", ".join(f"{v.branch} (PyTorch {v.torch})" for v in found)
            raise BadInput(f"{package} is built on {len(found)} branches: {listing}; name one with --branch")
        return found[0]

    def cuda_line(self, variant: Variant) -> CudaLine | None:
        return None if variant.cuda is None else self._lines[variant.branch, variant.cuda]

    @cached_property
    def _lines(self) -> Mapping[tuple[str, str], CudaLine]:
        return {(branch.name, line.cuda): line for branch in self.branches for line in branch.cuda_lines}
