"""pickvariant's hardware facts (sources/data/hardware.json: platforms, instruction sets, GPU architectures, CUDA
releases, compiler flags, nixpkgs pins, torch sources, flag spellings, Tegra capabilities, workloads, peaks), each
built into its record and checked against the others: read alone (load_hardware, what a source of prebuilt builds is
judged by), and in every catalog of recipes (sources/flox/recipes/load.py), whose copy must be these."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache

from pickvariant._base.errors import BadInput
from pickvariant._base.schema import SchemaError
from pickvariant._base.strictjson import load_file
from pickvariant._base.versions import ComputeCapability, parse_compute_capability, parse_driver_version
from pickvariant.sources.hardware import (
    CpuIsa,
    CudaRelease,
    DriverSupport,
    GpuArch,
    HardwareCatalog,
    HardwareFacts,
    PeakThroughput,
    Platform,
    TorchSource,
    Workload,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def unique(items: Iterable[Mapping[str, Any]], key: str, where: str) -> None:
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


def _driver_support(entry: Mapping[str, Any] | None, where: str) -> DriverSupport | None:
    if entry is None:
        return None
    first = entry.get("first")
    return DriverSupport(
        parsed(parse_driver_version, first, f"{where}.first") if first else None,
        entry.get("last_branch"),
        entry["source"],
    )


def parsed(parse: Callable[[str], T], value: str, where: str) -> T:
    """A catalog value through the same parser as user input, with the field named on failure."""
    try:
        return parse(value)
    except BadInput as error:
        raise SchemaError(where, str(error)) from None


def build_hardware(data: Mapping[str, Any]) -> HardwareFacts:
    """The hardware facts of a catalog (or of hardware.json), each table built, then checked against the others."""
    for key, field in (
        ("cpu_isas", "name"),
        ("gpu_archs", "name"),
        ("platforms", "nix_system"),
        ("flag_aliases", "spelling"),
        ("cuda_releases", "cuda"),
        ("compiler_flags", "flag"),
        ("nixpkgs_pins", "rev"),
        ("torch_sources", "version"),
    ):
        unique(data[key], field, key)
    platforms = {
        entry["nix_system"]: Platform(entry["nix_system"], entry["os"], entry["arch"]) for entry in data["platforms"]
    }
    isas = {entry["name"]: _cpu_isa(entry) for entry in data["cpu_isas"]}
    compiler_flags = {entry["flag"]: tuple(entry["requires"]) for entry in data["compiler_flags"]}
    _check_isas(isas, {platform.arch for platform in platforms.values()}, data, compiler_flags)
    for index, entry in enumerate(data["peak_tflops"]):
        try:
            re.compile(entry["name_pattern"])
        except re.error as error:
            raise SchemaError(f"peak_tflops[{index}].name_pattern", f"not a regular expression: {error}") from None
    return HardwareFacts(
        platforms=platforms,
        isas=isas,
        gpu_archs={entry["name"]: _gpu_arch(index, entry) for index, entry in enumerate(data["gpu_archs"])},
        cuda_releases={
            entry["cuda"]: CudaRelease(
                entry["cuda"],
                parsed(parse_driver_version, entry["min_driver"], f"cuda_releases[{index}].min_driver"),
                entry["toolkit_driver"],
                entry["min_driver_source"],
            )
            for index, entry in enumerate(data["cuda_releases"])
        },
        compiler_flags=compiler_flags,
        nixpkgs_torch={entry["rev"]: entry["torch"] for entry in data["nixpkgs_pins"]},
        torch_sources={entry["version"]: _torch_source(entry) for entry in data["torch_sources"]},
    )


def _cpu_isa(entry: Mapping[str, Any]) -> CpuIsa:
    return CpuIsa(
        name=entry["name"],
        platform=entry["platform"],
        description=entry["description"],
        requires=tuple(entry["requires"]),
        compiler_flags=tuple(entry["compiler_flags"]),
        build_env=_build_env(entry, f"cpu_isas.{entry['name']}"),
        torch_cpu_capability=entry["torch_cpu_capability"],
        source=entry["source"],
    )


def _check_isas(
    isas: Mapping[str, CpuIsa],
    arches: set[str],
    data: Mapping[str, Any],
    compiler_flags: Mapping[str, tuple[str, ...]],
) -> None:
    """Each instruction set names a known platform and dispatch level, and compiler flags it can run."""
    capability_order = data["torch_cpu_capability_order"]["order"]
    for index, isa in enumerate(isas.values()):
        if isa.platform not in arches:
            raise SchemaError(f"cpu_isas[{index}].platform", f"platform {isa.platform!r} is not in platforms")
        if isa.torch_cpu_capability not in capability_order:
            raise SchemaError(
                f"cpu_isas[{index}].torch_cpu_capability",
                f"{isa.torch_cpu_capability!r} is not in torch_cpu_capability_order.order",
            )
        for flag in isa.compiler_flags:
            if flag not in compiler_flags:
                raise SchemaError(f"cpu_isas[{index}].compiler_flags", f"{flag!r} is not in compiler_flags")
            if not set(compiler_flags[flag]) <= set(isa.requires):
                raise SchemaError(
                    f"cpu_isas[{index}].compiler_flags",
                    f"{flag} needs {list(compiler_flags[flag])}, more than {isa.name} requires",
                )


def _gpu_arch(index: int, entry: Mapping[str, Any]) -> GpuArch:
    capability = parsed(parse_compute_capability, entry["compute_capability"], f"gpu_archs[{index}].compute_capability")
    if capability.sm != entry["name"]:
        raise SchemaError(
            f"gpu_archs[{index}].name", f"{entry['name']!r} does not match compute capability {capability}"
        )
    renamed = entry.get("reported_before_cuda_13")
    return GpuArch(
        name=entry["name"],
        compute_capability=capability,
        min_cuda=entry["min_cuda"],
        max_cuda=entry["max_cuda"],
        tegra=entry["tegra"],
        platforms=tuple(entry["platforms"]),
        description=entry["description"],
        products=tuple(entry["products"]),
        reported_before_cuda_13=parsed(parse_compute_capability, renamed, f"gpu_archs[{index}].reported_before_cuda_13")
        if renamed
        else None,
        build_env=_build_env(entry, f"gpu_archs[{index}]"),
        source=entry["source"],
        drivers=_driver_support(entry.get("drivers"), f"gpu_archs[{index}].drivers"),
    )


def _torch_source(entry: Mapping[str, Any]) -> TorchSource:
    return TorchSource(
        version=entry["version"],
        owner=entry["owner"],
        repo=entry["repo"],
        rev=entry["rev"],
        fetch_submodules=entry["fetch_submodules"],
        hash=entry["hash"],
        source=entry["source"],
        nixpkgs_patches=tuple((patch["name"], patch["keep"], patch["why"]) for patch in entry["nixpkgs_patches"]),
        nixpkgs_patches_source=entry["nixpkgs_patches_source"],
    )


def hardware_facts_path() -> str:
    """hardware.json, inside the package (a wheel carries it there too)."""
    return os.path.join(os.path.dirname(os.path.realpath(__file__)), "data", "hardware.json")


@cache
def load_hardware() -> HardwareCatalog:
    """pickvariant's own hardware facts on their own, with no builds: what a source that is not the recipes' judges
    its builds by (the wheels), with no catalog of recipes read. Every catalog load checks its hardware section
    against this same file (sources/flox/recipes/own_facts.py), so the facts are the same ones."""
    path = hardware_facts_path()
    data = load_file(path, "hardware facts")
    if not isinstance(data, dict):
        raise BadInput(f"hardware facts {path}: not a JSON object")
    hardware = build_hardware(data)
    return HardwareCatalog(
        file=path,
        compiled=str(data.get("facts_compiled", "")),
        platforms=hardware.platforms,
        isas=hardware.isas,
        gpu_archs=hardware.gpu_archs,
        cuda_releases=hardware.cuda_releases,
        flag_aliases=flag_aliases(data),
        tegra_capabilities=tegra_capabilities(data, hardware),
        torch_capability_order=tuple(data["torch_cpu_capability_order"]["order"]),
        workloads=workloads(data, hardware.isas),
        peaks=peaks(data),
    )


def flag_aliases(data: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {entry["spelling"]: tuple(entry["canonical"]) for entry in data["flag_aliases"]}


def peaks(data: Mapping[str, Any]) -> tuple[PeakThroughput, ...]:
    return tuple(
        PeakThroughput(
            entry["gpu"],
            entry["name_pattern"],
            {k: entry[k] for k in ("bf16", "fp16", "tf32", "fp32")},
            entry["source"],
        )
        for entry in data["peak_tflops"]
    )


def workloads(data: Mapping[str, Any], isas: Mapping[str, CpuIsa]) -> dict[str, Workload]:
    return {name: _workload(name, entry, isas) for name, entry in data["workloads"].items()}


def _workload(name: str, entry: Mapping[str, Any], isas: Mapping[str, CpuIsa]) -> Workload:
    preference = tuple(entry["isa_preference"])
    unknown = [isa for isa in preference if isa not in isas]
    missing = [isa for isa in isas if isa not in preference]
    if unknown or missing or len(set(preference)) != len(preference):
        raise SchemaError(
            f"workloads.{name}.isa_preference",
            f"must rank every CPU instruction set once (unknown: {unknown}, missing: {missing})",
        )
    return Workload(name, entry["description"], preference)


def tegra_capabilities(data: Mapping[str, Any], hardware: HardwareFacts) -> frozenset[ComputeCapability]:
    listed = frozenset(
        parsed(
            parse_compute_capability,
            entry["compute_capability"],
            f"tegra_compute_capabilities[{index}].compute_capability",
        )
        for index, entry in enumerate(data["tegra_compute_capabilities"])
    )
    return listed | frozenset(arch.compute_capability for arch in hardware.gpu_archs.values() if arch.tegra)
