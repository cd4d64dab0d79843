"""catalog.json: the build repository's variants joined with pickvariant's hardware facts, validated on load.

`pickvariant catalog sync` writes it (pickvariant/catalog/sync.py); nothing here touches git.
A variant is identified by (branch, package): the same package name is built on
several branches with different PyTorch versions.
"""

from __future__ import annotations

import gc
import json
import operator
import os
import re
import zlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from functools import cache, cached_property
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_regular
from pickvariant._base.records import record
from pickvariant.catalog.schema import SchemaError, validate
from pickvariant._base.versions import ComputeCapability, DriverVersion, parse_compute_capability, parse_driver_version, version_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")
    K = TypeVar("K")

CATALOG_ENV = settings.CATALOG
SCHEMA_VERSION = 2
MPS = "mps"
DATA_DIR = Path(__file__).resolve().parent / "data"
_MAX_CATALOG_BYTES = 16 * 1024 * 1024


def _grouped(variants: Iterable[Variant], key: Callable[[Variant], K]) -> Mapping[K, tuple[Variant, ...]]:
    """Variants by a key, each group in catalog order."""
    groups: dict[K, list[Variant]] = {}
    for variant in variants:
        groups.setdefault(key(variant), []).append(variant)
    return {name: tuple(found) for name, found in groups.items()}


@record
class Platform:
    nix_system: str
    os: str
    arch: str


@record
class CpuIsa:
    name: str
    platform: str
    description: str
    requires: tuple[str, ...]
    compiler_flags: tuple[str, ...]
    build_env: Mapping[str, str]
    torch_cpu_capability: str
    source: str


@record
class GpuArch:
    name: str
    compute_capability: ComputeCapability
    min_cuda: str
    max_cuda: str | None
    tegra: bool
    platforms: tuple[str, ...]
    description: str
    products: tuple[str, ...]
    reported_before_cuda_13: ComputeCapability | None
    build_env: Mapping[str, str]
    source: str

    @property
    def sm_dotted(self) -> str:
        return str(self.compute_capability)


@record
class CudaRelease:
    cuda: str
    min_driver: DriverVersion
    toolkit_driver: str
    source: str


@record
class CudaLine:
    """One CUDA release as a branch builds it: its own nixpkgs pin and CUDA package set."""

    branch: str
    cuda: str
    cuda_packages: str
    nixpkgs_rev: str
    min_driver: DriverVersion
    min_driver_source: str

    @property
    def tag(self) -> str:
        return self.cuda.replace(".", "_")


@record
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
        return {"package": self.package, "branch": self.branch, "torch": self.torch, "python": self.python, "cuda": self.cuda,
                "gpu_arch": self.gpu_arch, "cpu_isa": self.cpu_isa, "platform": self.platform, "nixpkgs_rev": self.nixpkgs_rev,
                "cudnn": self.cudnn}

    @property
    def is_cuda(self) -> bool:
        return self.cuda is not None

    @property
    def is_mps(self) -> bool:
        return self.gpu_arch == MPS

    @property
    def label(self) -> str:
        return f"{self.package} ({self.branch})"


@record
class TorchSource:
    version: str
    owner: str
    repo: str
    rev: str
    fetch_submodules: bool
    hash: str
    source: str
    # nixpkgs' own torch patches, by file name: (name, keep, why); a dropped one says why.
    nixpkgs_patches: tuple[tuple[str, bool, str], ...] = ()
    nixpkgs_patches_source: str = ""

    @property
    def dropped_patches(self) -> tuple[str, ...]:
        return tuple(name for name, keep, _ in self.nixpkgs_patches if not keep)


@record
class Branch:
    name: str
    commit: str
    torch: str
    python: str
    aligned_with: str | None  # e.g. "vllm 0.15.1": chosen only when named with --branch
    cuda_lines: tuple[CudaLine, ...]
    variants: tuple[Variant, ...]

    @property
    def general(self) -> bool:
        return self.aligned_with is None

    def variants_for(self, nix_system: str, gpu_arch: str | None) -> tuple[Variant, ...]:
        """This branch's variants for one Nix system and GPU architecture (None: CPU-only), in catalog order.

        decide asks only for the architectures that can run on the machine: a CPU-only host looks at
        a dozen variants of a branch rather than every CUDA build of it."""
        return self._by_hardware.get((nix_system, gpu_arch), ())

    @cached_property
    def _by_hardware(self) -> Mapping[tuple[str, str | None], tuple[Variant, ...]]:
        return _grouped(self.variants, operator.attrgetter("platform", "gpu_arch"))


@record
class PeakThroughput:
    gpu: str
    name_pattern: str
    tflops: Mapping[str, float | None]
    source: str


@record
class Workload:
    name: str
    description: str
    isa_preference: tuple[str, ...]


@record
class Source:
    repo: str
    commit: str
    date: str


@record
class Catalog:
    path: Path
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

    @cached_property
    def variants(self) -> tuple[Variant, ...]:
        return tuple(variant for branch in self.branches for variant in branch.variants)

    def derive(self, key: Hashable, compute: Callable[[], T]) -> T:
        """compute(), an answer that depends only on this catalog and `key`, computed once per catalog.

        decide and compat keep here what they would otherwise work out on every call (the branches
        the pins leave, static ranks, which GPU architectures run on which compute capability): a
        catalog never changes, so these never go stale, and a long-lived caller pays for them once."""
        try:
            value: T = self._derived[key]
        except KeyError:
            value = self._derived[key] = compute()
        return value

    @cached_property
    def _derived(self) -> dict[Hashable, Any]:
        return {}

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

    def is_tegra(self, capability: ComputeCapability) -> bool:
        return capability in self.tegra_capabilities

    def nix_system(self, os_name: str, arch: str) -> str | None:
        return self._systems.get((os_name, arch))

    @cached_property
    def _systems(self) -> Mapping[tuple[str, str], str]:
        # The first platform of an (os, arch) pair wins, as the catalog lists them.
        systems: dict[tuple[str, str], str] = {}
        for platform in self.platforms.values():
            systems.setdefault((platform.os, platform.arch), platform.nix_system)
        return systems

    def canonical_flags(self, flags: Iterable[str]) -> frozenset[str]:
        """Map every spelling a tool reports (py-cpuinfo, macOS sysctl) to the kernel's name."""
        flags = flags if isinstance(flags, (set, frozenset)) else frozenset(flags)
        aliased = flags & self.flag_aliases.keys()
        if not aliased:
            return frozenset(flags)
        canonical = set(flags - aliased)
        for flag in aliased:
            canonical.update(self.flag_aliases[flag])
        return frozenset(canonical)

    def peak_for(self, gpu_name: str) -> PeakThroughput | None:
        for peak in self.peaks:
            if re.search(peak.name_pattern, gpu_name, re.IGNORECASE):
                return peak
        return None


def default_catalog_path(env: Mapping[str, str] | None = None) -> Path:
    """PICKVARIANT_CATALOG if set, else the catalog that is part of the package."""
    env = os.environ if env is None else env
    stated = settings.setting(env, CATALOG_ENV)
    if stated is not None:
        return Path(stated)
    return DATA_DIR / "catalog.json"


def hardware_facts_path() -> Path:
    return DATA_DIR / "hardware.json"


def load_json(path: Path, what: str) -> Any:
    return _decoded(read_regular(path, _MAX_CATALOG_BYTES, what), path, what)


def _decoded(raw: bytes, path: Path, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"{what} {path} is not valid JSON: {error}") from error
    except RecursionError:
        raise BadInput(f"{what} {path} is nested too deeply to be a {what}") from None


def load_catalog(path: Path | None = None) -> Catalog:
    path = default_catalog_path() if path is None else path
    raw = read_regular(path, _MAX_CATALOG_BYTES, "catalog")
    # Tens of thousands of objects that all stay alive: the collector's passes over them while they
    # are made find nothing and cost an eighth of the load, so it waits until they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return parse_catalog(_decoded(raw, path, "catalog"), path, schema_checked=schema_checked_before(raw))
    finally:
        if collecting:
            gc.enable()


@cache
def _schema_bytes() -> bytes:
    return (DATA_DIR / "catalog.schema.json").read_bytes()


def catalog_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_schema_bytes().decode("utf-8"))
    return schema


# `catalog sync` validates what it writes and says so on the file's second line: the CRC-32 of
# everything after that line, and of the schema it was checked against. While both still match,
# loading skips the schema pass (half of loading the shipped catalog; the cross-reference checks in
# _build still run). A checksum is the tool for accidental change, which is all this guards
# against: whoever can rewrite the catalog can rewrite the code beside it.
_STAMP = re.compile(rb' "validated": "crc32 ([0-9a-f]{8}) under schema crc32 ([0-9a-f]{8})",')


def stamp(text: str) -> str:
    """A rendered catalog (it starts with "{" and a newline) with the line that records its validation."""
    if not text.startswith("{\n"):
        raise ValueError("a rendered catalog starts with '{' on a line of its own")
    body = text[2:]
    return f'{{\n "validated": "crc32 {zlib.crc32(body.encode("utf-8")):08x} under schema crc32 {zlib.crc32(_schema_bytes()):08x}",\n{body}'


def schema_checked_before(raw: bytes) -> bool:
    """Does this catalog file carry a stamp that still matches its content and this schema?"""
    if not raw.startswith(b"{\n"):
        return False
    line, newline, body = raw[2:].partition(b"\n")
    match = _STAMP.fullmatch(line)
    return bool(match and newline) and int(match[1], 16) == zlib.crc32(body) and int(match[2], 16) == zlib.crc32(_schema_bytes())


def parse_catalog(data: Any, path: Path, schema_checked: bool = False) -> Catalog:
    """Validate `data` against the schema (unless `schema_checked`) and the cross-references, then build the catalog."""
    if isinstance(data, dict) and data.get("schema_version") == 1:
        raise BadInput(
            f"catalog {path} is schema_version 1 (pickvariant < 0.3); regenerate it with "
            "`pickvariant catalog sync REPO -o FILE` from the build repository or your fork"
        )
    try:
        if not schema_checked:
            validate(data, catalog_schema())
        return _build(data, path)
    except SchemaError as error:
        raise BadInput(f"catalog {path}: {error}") from error
    except RecursionError:
        raise BadInput(f"catalog {path} is nested too deeply to be a catalog") from None


def _unique(items: Iterable[Mapping[str, Any]], key: str, where: str) -> None:
    seen: set[Any] = set()
    for index, item in enumerate(items):
        if item[key] in seen:
            raise SchemaError(f"{where}[{index}].{key}", f"duplicate {item[key]!r}")
        seen.add(item[key])


def _build_env(entry: Mapping[str, Any], where: str) -> dict[str, str]:
    env = dict(entry.get("build_env", {}))
    for name in env:
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            raise SchemaError(f"{where}.build_env.{name}", "not an environment variable name")
    return env


def _parsed(parse: Callable[[str], T], value: str, where: str) -> T:
    """A catalog value through the same parser as user input, with the field named on failure."""
    try:
        return parse(value)
    except BadInput as error:
        raise SchemaError(where, str(error)) from None


@record
class HardwareFacts:
    """The part of the catalog that is pickvariant's own (hardware.json), checked for consistency."""

    platforms: Mapping[str, Platform]
    isas: Mapping[str, CpuIsa]
    gpu_archs: Mapping[str, GpuArch]
    cuda_releases: Mapping[str, CudaRelease]
    compiler_flags: Mapping[str, tuple[str, ...]]
    nixpkgs_torch: Mapping[str, str]
    torch_sources: Mapping[str, TorchSource]


def build_hardware(data: Mapping[str, Any]) -> HardwareFacts:
    for key, field in (("cpu_isas", "name"), ("gpu_archs", "name"), ("platforms", "nix_system"), ("flag_aliases", "spelling"),
                       ("cuda_releases", "cuda"), ("compiler_flags", "flag"), ("nixpkgs_pins", "rev"), ("torch_sources", "version")):
        _unique(data[key], field, key)
    platforms = {entry["nix_system"]: Platform(entry["nix_system"], entry["os"], entry["arch"]) for entry in data["platforms"]}
    arches = {platform.arch for platform in platforms.values()}
    isas = {
        entry["name"]: CpuIsa(
            entry["name"], entry["platform"], entry["description"], tuple(entry["requires"]),
            tuple(entry["compiler_flags"]), _build_env(entry, f"cpu_isas.{entry['name']}"), entry["torch_cpu_capability"], entry["source"],
        )
        for entry in data["cpu_isas"]
    }
    capability_order = data["torch_cpu_capability_order"]["order"]
    for index, isa in enumerate(isas.values()):
        if isa.platform not in arches:
            raise SchemaError(f"cpu_isas[{index}].platform", f"platform {isa.platform!r} is not in platforms")
        if isa.torch_cpu_capability not in capability_order:
            raise SchemaError(f"cpu_isas[{index}].torch_cpu_capability", f"{isa.torch_cpu_capability!r} is not in torch_cpu_capability_order.order")
    gpu_archs: dict[str, GpuArch] = {}
    for index, entry in enumerate(data["gpu_archs"]):
        capability = _parsed(parse_compute_capability, entry["compute_capability"], f"gpu_archs[{index}].compute_capability")
        if capability.sm != entry["name"]:
            raise SchemaError(f"gpu_archs[{index}].name", f"{entry['name']!r} does not match compute capability {capability}")
        renamed = entry.get("reported_before_cuda_13")
        gpu_archs[entry["name"]] = GpuArch(
            entry["name"], capability, entry["min_cuda"], entry["max_cuda"], entry["tegra"],
            tuple(entry["platforms"]), entry["description"], tuple(entry["products"]),
            _parsed(parse_compute_capability, renamed, f"gpu_archs[{index}].reported_before_cuda_13") if renamed else None,
            _build_env(entry, f"gpu_archs[{index}]"), entry["source"],
        )
    cuda_releases = {
        entry["cuda"]: CudaRelease(
            entry["cuda"], _parsed(parse_driver_version, entry["min_driver"], f"cuda_releases[{index}].min_driver"),
            entry["toolkit_driver"], entry["min_driver_source"],
        )
        for index, entry in enumerate(data["cuda_releases"])
    }
    compiler_flags = {entry["flag"]: tuple(entry["requires"]) for entry in data["compiler_flags"]}
    for index, isa in enumerate(isas.values()):
        for flag in isa.compiler_flags:
            if flag not in compiler_flags:
                raise SchemaError(f"cpu_isas[{index}].compiler_flags", f"{flag!r} is not in compiler_flags")
            if not set(compiler_flags[flag]) <= set(isa.requires):
                raise SchemaError(f"cpu_isas[{index}].compiler_flags", f"{flag} needs {list(compiler_flags[flag])}, more than {isa.name} requires")
    for index, entry in enumerate(data["peak_tflops"]):
        try:
            re.compile(entry["name_pattern"])
        except re.error as error:
            raise SchemaError(f"peak_tflops[{index}].name_pattern", f"not a regular expression: {error}") from None
    return HardwareFacts(
        platforms, isas, gpu_archs, cuda_releases, compiler_flags,
        {entry["rev"]: entry["torch"] for entry in data["nixpkgs_pins"]},
        {entry["version"]: TorchSource(entry["version"], entry["owner"], entry["repo"], entry["rev"], entry["fetch_submodules"], entry["hash"], entry["source"],
                                       tuple((patch["name"], patch["keep"], patch["why"]) for patch in entry["nixpkgs_patches"]),
                                       entry["nixpkgs_patches_source"])
         for entry in data["torch_sources"]},
    )


def _build(data: Mapping[str, Any], path: Path) -> Catalog:
    hardware = build_hardware(data)
    isas = hardware.isas
    workloads: dict[str, Workload] = {}
    for name, entry in data["workloads"].items():
        preference = tuple(entry["isa_preference"])
        unknown = [isa for isa in preference if isa not in isas]
        missing = [isa for isa in isas if isa not in preference]
        if unknown or missing or len(set(preference)) != len(preference):
            raise SchemaError(
                f"workloads.{name}.isa_preference",
                f"must rank every CPU instruction set once (unknown: {unknown}, missing: {missing})",
            )
        workloads[name] = Workload(name, entry["description"], preference)
    _unique(data["branches"], "name", "branches")
    variants_by_branch: dict[str, list[Variant]] = {entry["name"]: [] for entry in data["branches"]}
    lines = {entry["name"]: {line["cuda"]: line for line in entry["cuda_lines"]} for entry in data["branches"]}
    rows = data["variants"]
    # A thousand rows share a few hundred hardware combinations and a few dozen CUDA lines:
    # each distinct combination is checked once, at the first row that has it, so that an
    # error names that row.
    first_rows: dict[tuple[Any, ...], int] = {}
    for index, key in enumerate(map(_HARDWARE_KEY, rows)):
        first_rows.setdefault(key, index)
    for index in sorted(first_rows.values()):
        _check_hardware(f"variants[{index}]", rows[index], hardware)
    first_rows = {}
    for index, key in enumerate(map(_LINE_KEY, rows)):
        first_rows.setdefault(key, index)
    for index in sorted(first_rows.values()):
        _check_line(f"variants[{index}]", rows[index], lines)
    identities = list(map(_IDENTITY, rows))
    if len(set(identities)) != len(identities):
        seen: set[tuple[str, str]] = set()
        for index, (branch_name, package) in enumerate(identities):
            if (branch_name, package) in seen:
                raise SchemaError(f"variants[{index}].package", f"duplicate {package!r} on branch {branch_name}")
            seen.add((branch_name, package))
    for variant in map(Variant.from_row, rows):
        variants_by_branch[variant.branch].append(variant)
    branches = tuple(_branch(index, entry, hardware, tuple(variants_by_branch[entry["name"]])) for index, entry in enumerate(data["branches"]))
    return Catalog(
        path=path,
        source=Source(data["source"]["repo"], data["source"]["commit"], data["source"]["date"]),
        platforms=hardware.platforms,
        build_hours=data["build"]["hours"],
        build_disk_gb=data["build"]["disk_gb"],
        build_memory_gb=data["build"]["memory_gb"],
        flag_aliases={entry["spelling"]: tuple(entry["canonical"]) for entry in data["flag_aliases"]},
        tegra_capabilities=frozenset(
            _parsed(parse_compute_capability, entry["compute_capability"], f"tegra_compute_capabilities[{index}].compute_capability")
            for index, entry in enumerate(data["tegra_compute_capabilities"])
        )
        | frozenset(arch.compute_capability for arch in hardware.gpu_archs.values() if arch.tegra),
        isas=isas,
        gpu_archs=hardware.gpu_archs,
        cuda_releases=hardware.cuda_releases,
        compiler_flags=hardware.compiler_flags,
        nixpkgs_torch=hardware.nixpkgs_torch,
        torch_sources=hardware.torch_sources,
        python_preference=tuple(data["python_preference"]["order"]),
        min_macos=data["apple"]["min_macos"],
        workloads=workloads,
        branches=branches,
        peaks=tuple(
            PeakThroughput(entry["gpu"], entry["name_pattern"], {k: entry[k] for k in ("bf16", "fp16", "tf32", "fp32")}, entry["source"])
            for entry in data["peak_tflops"]
        ),
        torch_capability_order=tuple(data["torch_cpu_capability_order"]["order"]),
    )


_HARDWARE_KEY = operator.itemgetter("platform", "gpu_arch", "cpu_isa", "cuda")
_LINE_KEY = operator.itemgetter("branch", "cuda", "nixpkgs_rev")
_IDENTITY = operator.itemgetter("branch", "package")


def _check_hardware(where: str, raw: Mapping[str, Any], hardware: HardwareFacts) -> None:
    platform = hardware.platforms.get(raw["platform"])
    if platform is None:
        raise SchemaError(f"{where}.platform", f"{raw['platform']!r} is not in platforms")
    gpu, isa_name, cuda = raw["gpu_arch"], raw["cpu_isa"], raw["cuda"]
    if gpu == MPS:
        if isa_name is not None or cuda is not None or platform.os != "darwin":
            raise SchemaError(where, "an MPS variant has no CPU instruction set and no CUDA line, and is built for darwin")
        return
    if isa_name not in hardware.isas:
        raise SchemaError(f"{where}.cpu_isa", f"unknown CPU instruction set {isa_name!r}")
    isa = hardware.isas[isa_name]
    if platform.os != "linux" or platform.arch != isa.platform:
        raise SchemaError(f"{where}.platform", f"{raw['platform']} cannot run {isa_name} ({isa.platform} Linux)")
    if (gpu is None) != (cuda is None):
        raise SchemaError(where, "a CUDA variant has both gpu_arch and cuda; a CPU-only one has neither")
    if gpu is None:
        return
    if gpu not in hardware.gpu_archs:
        raise SchemaError(f"{where}.gpu_arch", f"unknown GPU architecture {gpu!r}")
    arch = hardware.gpu_archs[gpu]
    if version_key(cuda) < version_key(arch.min_cuda) or (arch.max_cuda and version_key(cuda) > version_key(arch.max_cuda)):
        raise SchemaError(f"{where}.gpu_arch", f"{gpu} cannot be built with CUDA {cuda} (needs {arch.min_cuda}..{arch.max_cuda or ''})")
    if isa.platform not in arch.platforms:
        raise SchemaError(f"{where}.cpu_isa", f"{gpu} has no {isa.platform} host (platforms {list(arch.platforms)})")


def _check_line(where: str, raw: Mapping[str, Any], lines: Mapping[str, Mapping[str, Any]]) -> None:
    branch_name, cuda = raw["branch"], raw["cuda"]
    if branch_name not in lines:
        raise SchemaError(f"{where}.branch", f"unknown branch {branch_name!r}")
    if cuda is None:
        return
    if cuda not in lines[branch_name]:
        raise SchemaError(f"{where}.cuda", f"branch {branch_name} has no CUDA {cuda} line")
    if lines[branch_name][cuda]["nixpkgs_rev"] != raw["nixpkgs_rev"]:
        raise SchemaError(f"{where}.nixpkgs_rev", f"differs from the pin of branch {branch_name}'s CUDA {cuda} line")


def _branch(index: int, entry: Mapping[str, Any], hardware: HardwareFacts, variants: tuple[Variant, ...]) -> Branch:
    where = f"branches[{index}]"
    cuda_lines = []
    for l_index, line in enumerate(entry["cuda_lines"]):
        release = hardware.cuda_releases.get(line["cuda"])
        if release is None:
            raise SchemaError(f"{where}.cuda_lines[{l_index}].cuda", f"no driver minimum is known for CUDA {line['cuda']} (cuda_releases)")
        min_driver = _parsed(parse_driver_version, line["min_driver"], f"{where}.cuda_lines[{l_index}].min_driver")
        if min_driver != release.min_driver:
            raise SchemaError(f"{where}.cuda_lines[{l_index}].min_driver", f"{min_driver} differs from cuda_releases ({release.min_driver})")
        cuda_lines.append(CudaLine(entry["name"], line["cuda"], line["cuda_packages"], line["nixpkgs_rev"], min_driver, release.source))
    for variant in variants:
        if variant.torch != entry["torch"] or variant.python != entry["python"]:
            raise SchemaError(f"{where}", f"variant {variant.package} has PyTorch {variant.torch}/Python {variant.python}, the branch {entry['torch']}/{entry['python']}")
    return Branch(entry["name"], entry["commit"], entry["torch"], entry["python"], entry["aligned_with"], tuple(cuda_lines), variants)
