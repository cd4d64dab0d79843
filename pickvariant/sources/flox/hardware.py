"""A catalog's hardware facts (hardware.json's tables: platforms, instruction sets, GPU architectures, CUDA
releases, compiler flags, nixpkgs pins, torch sources), each built into its record and checked against the others."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from pickvariant._base.errors import BadInput
from pickvariant._base.schema import SchemaError
from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.sources.hardware import (
    CpuIsa,
    CudaRelease,
    DriverSupport,
    GpuArch,
    HardwareFacts,
    Platform,
    TorchSource,
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
