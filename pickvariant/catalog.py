"""catalog.json: every hardware and release fact pickvariant decides by, validated on load."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pickvariant import settings
from pickvariant.errors import BadInput
from pickvariant.fsutil import read_regular
from pickvariant.schema import SchemaError, validate
from pickvariant.versions import ComputeCapability, DriverVersion, parse_compute_capability, parse_driver_version

CATALOG_ENV = settings.CATALOG
_PACKAGE_DIR = Path(__file__).resolve().parent
_MAX_CATALOG_BYTES = 16 * 1024 * 1024
T = TypeVar("T")


@dataclass(frozen=True)
class CpuIsa:
    name: str
    platform: str
    description: str
    requires: tuple[str, ...]
    compiler_flags: tuple[str, ...]
    build_env: Mapping[str, str]
    torch_cpu_capability: str
    source: str


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Variant:
    package: str
    branch: str
    gpu_arch: str | None
    cpu_isa: str


@dataclass(frozen=True)
class TorchSource:
    owner: str
    repo: str
    rev: str
    fetch_submodules: bool
    hash: str | None
    hash_note: str
    source: str


@dataclass(frozen=True)
class Branch:
    name: str
    torch: str
    cuda: str
    cuda_tag: str
    min_driver: DriverVersion
    min_driver_source: str
    nixpkgs_rev: str
    cuda_packages: str
    recipe: str
    pname_prefix: str
    torch_source: TorchSource | None
    variants: tuple[Variant, ...]


@dataclass(frozen=True)
class PeakThroughput:
    gpu: str
    name_pattern: str
    tflops: Mapping[str, float | None]
    source: str


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    isa_preference: tuple[str, ...]


@dataclass(frozen=True)
class Catalog:
    path: Path
    python_tag: str
    python_version: str
    python_packages_attr: str
    nix_systems: Mapping[str, str]
    build_hours: str
    build_disk_gb: float
    build_memory_gb: float
    flag_aliases: Mapping[str, tuple[str, ...]]
    tegra_capabilities: frozenset[ComputeCapability]
    isas: Mapping[str, CpuIsa]
    gpu_archs: Mapping[str, GpuArch]
    workloads: Mapping[str, Workload]
    branches: tuple[Branch, ...]
    peaks: tuple[PeakThroughput, ...]
    torch_capability_order: tuple[str, ...]

    @property
    def variants(self) -> tuple[Variant, ...]:
        return tuple(variant for branch in self.branches for variant in branch.variants)

    @cached_property
    def _branch_by_name(self) -> Mapping[str, Branch]:
        # compat.why_not asks for a variant's branch once per variant of every decision.
        return {branch.name: branch for branch in self.branches}

    def branch(self, name: str) -> Branch:
        if name in self._branch_by_name:
            return self._branch_by_name[name]
        raise BadInput(f"unknown branch {name!r}; the catalog has {', '.join(b.name for b in self.branches)}")

    def variant(self, package: str) -> Variant:
        for variant in self.variants:
            if variant.package == package:
                return variant
        raise BadInput(f"{package!r:.120} is not a package of the catalog (see `pickvariant list`)")

    def is_tegra(self, capability: ComputeCapability) -> bool:
        return capability in self.tegra_capabilities

    def canonical_flags(self, flags: Iterable[str]) -> frozenset[str]:
        """Map every spelling a tool reports (py-cpuinfo, macOS sysctl) to the kernel's name."""
        canonical: set[str] = set()
        for flag in flags:
            canonical.update(self.flag_aliases.get(flag, (flag,)))
        return frozenset(canonical)

    def peak_for(self, gpu_name: str) -> PeakThroughput | None:
        for peak in self.peaks:
            if re.search(peak.name_pattern, gpu_name, re.IGNORECASE):
                return peak
        return None


def default_catalog_path(env: Mapping[str, str] | None = None) -> Path:
    """PICKVARIANT_CATALOG if set, else the catalog installed with the package (or the checkout's)."""
    env = os.environ if env is None else env
    stated = settings.setting(env, CATALOG_ENV)
    if stated is not None:
        return Path(stated)
    installed = _PACKAGE_DIR / "catalog.json"
    return installed if installed.exists() else _PACKAGE_DIR.parent / "catalog.json"


def load_catalog(path: Path | None = None) -> Catalog:
    path = default_catalog_path() if path is None else path
    raw = read_regular(path, _MAX_CATALOG_BYTES, "catalog")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"catalog {path} is not valid JSON: {error}") from error
    except RecursionError:
        raise BadInput(f"catalog {path} is nested too deeply to be a catalog") from None
    return parse_catalog(data, path)


def parse_catalog(data: Any, path: Path) -> Catalog:
    """Validate `data` against the schema and the cross-references, then build the catalog."""
    schema = json.loads((_PACKAGE_DIR / "catalog.schema.json").read_text(encoding="utf-8"))
    try:
        validate(data, schema)
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


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _build(data: Mapping[str, Any], path: Path) -> Catalog:
    _unique(data["cpu_isas"], "name", "cpu_isas")
    _unique(data["gpu_archs"], "name", "gpu_archs")
    _unique(data["branches"], "name", "branches")
    _unique(data["platforms"], "arch", "platforms")
    _unique(data["flag_aliases"], "spelling", "flag_aliases")
    nix_systems = {entry["arch"]: entry["nix_system"] for entry in data["platforms"]}
    isas = {
        entry["name"]: CpuIsa(
            entry["name"], entry["platform"], entry["description"], tuple(entry["requires"]),
            tuple(entry["compiler_flags"]), _build_env(entry, f"cpu_isas.{entry['name']}"), entry["torch_cpu_capability"], entry["source"],
        )
        for entry in data["cpu_isas"]
    }
    capability_order = data["torch_cpu_capability_order"]["order"]
    for index, isa in enumerate(isas.values()):
        if isa.platform not in nix_systems:
            raise SchemaError(f"cpu_isas[{index}].platform", f"platform {isa.platform!r} is not in platforms")
        if isa.torch_cpu_capability not in capability_order:
            raise SchemaError(f"cpu_isas[{index}].torch_cpu_capability", f"{isa.torch_cpu_capability!r} is not in torch_cpu_capability_order.order")
    for index, entry in enumerate(data["peak_tflops"]):
        try:
            re.compile(entry["name_pattern"])
        except re.error as error:
            raise SchemaError(f"peak_tflops[{index}].name_pattern", f"not a regular expression: {error}") from None
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
    branches = tuple(_branch(index, entry, data, isas, gpu_archs) for index, entry in enumerate(data["branches"]))
    packages: set[str] = set()
    for b_index, branch in enumerate(branches):
        for v_index, variant in enumerate(branch.variants):
            if variant.package in packages:
                raise SchemaError(f"branches[{b_index}].variants[{v_index}].package", f"duplicate package {variant.package!r}")
            packages.add(variant.package)
    return Catalog(
        path=path,
        python_tag=data["python"]["tag"],
        python_version=data["python"]["version"],
        python_packages_attr=data["python"]["packages_attr"],
        nix_systems=nix_systems,
        build_hours=data["build"]["hours"],
        build_disk_gb=data["build"]["disk_gb"],
        build_memory_gb=data["build"]["memory_gb"],
        flag_aliases={entry["spelling"]: tuple(entry["canonical"]) for entry in data["flag_aliases"]},
        tegra_capabilities=frozenset(
            _parsed(parse_compute_capability, entry["compute_capability"], f"tegra_compute_capabilities[{index}].compute_capability")
            for index, entry in enumerate(data["tegra_compute_capabilities"])
        )
        | frozenset(arch.compute_capability for arch in gpu_archs.values() if arch.tegra),
        isas=isas,
        gpu_archs=gpu_archs,
        workloads=workloads,
        branches=branches,
        peaks=tuple(
            PeakThroughput(entry["gpu"], entry["name_pattern"], {k: entry[k] for k in ("bf16", "fp16", "tf32", "fp32")}, entry["source"])
            for entry in data["peak_tflops"]
        ),
        torch_capability_order=tuple(data["torch_cpu_capability_order"]["order"]),
    )


def _branch(index: int, entry: Mapping[str, Any], data: Mapping[str, Any], isas: Mapping[str, CpuIsa], gpu_archs: Mapping[str, GpuArch]) -> Branch:
    where = f"branches[{index}]"
    if entry["cuda_tag"] != entry["cuda"].replace(".", "_"):
        raise SchemaError(f"{where}.cuda_tag", f"{entry['cuda_tag']!r} does not match cuda {entry['cuda']!r}")
    variants = []
    for v_index, raw in enumerate(entry["variants"]):
        v_where = f"{where}.variants[{v_index}]"
        if raw["cpu_isa"] not in isas:
            raise SchemaError(f"{v_where}.cpu_isa", f"unknown CPU instruction set {raw['cpu_isa']!r}")
        isa = isas[raw["cpu_isa"]]
        gpu = raw["gpu_arch"]
        if gpu is not None:
            if gpu not in gpu_archs:
                raise SchemaError(f"{v_where}.gpu_arch", f"unknown GPU architecture {gpu!r}")
            arch = gpu_archs[gpu]
            cuda = _version_key(entry["cuda"])
            if cuda < _version_key(arch.min_cuda) or (arch.max_cuda and cuda > _version_key(arch.max_cuda)):
                raise SchemaError(f"{v_where}.gpu_arch", f"{gpu} cannot be built with CUDA {entry['cuda']} (needs {arch.min_cuda}..{arch.max_cuda or ''})")
            if isa.platform not in arch.platforms:
                raise SchemaError(f"{v_where}.cpu_isa", f"{gpu} has no {isa.platform} host (platforms {list(arch.platforms)})")
            expected = f"pytorch-{data['python']['tag']}-cuda{entry['cuda_tag']}-{gpu}-{isa.name}"
        else:
            expected = f"pytorch-{data['python']['tag']}-cpu-{isa.name}"
        if raw["package"] != expected:
            raise SchemaError(f"{v_where}.package", f"{raw['package']!r} should be {expected!r}")
        variants.append(Variant(raw["package"], entry["name"], gpu, isa.name))
    source = entry["torch_source"]
    if source is None and any(variant.gpu_arch is None for variant in variants):
        raise SchemaError(f"{where}.torch_source", "a branch with CPU-only variants must give the PyTorch source (the CPU recipe upgrades it)")
    return Branch(
        name=entry["name"], torch=entry["torch"], cuda=entry["cuda"], cuda_tag=entry["cuda_tag"],
        min_driver=_parsed(parse_driver_version, entry["min_driver"], f"{where}.min_driver"), min_driver_source=entry["min_driver_source"],
        nixpkgs_rev=entry["nixpkgs_rev"], cuda_packages=entry["cuda_packages"], recipe=entry["recipe"],
        pname_prefix=entry["pname_prefix"],
        torch_source=None if source is None else TorchSource(
            source["owner"], source["repo"], source["rev"], source["fetch_submodules"], source["hash"],
            source.get("hash_note", ""), source["source"],
        ),
        variants=tuple(variants),
    )
