"""Reading catalog.json: the file (bounded), its validation stamp, the schema, and the cross-checks the schema cannot say.

A catalog that `catalog sync` wrote carries a stamp; while the stamp still matches, the schema pass is
skipped (see below). The hardware facts of catalog/data/hardware.json are checked here too, by
build_hardware, for sync and for every load alike.
"""

from __future__ import annotations

import gc
import json
import operator
import os
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.files import check_path_length, read_regular, shipped
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant._base.urls import public_url
from pickvariant._base.versions import (
    parse_compute_capability,
    parse_driver_version,
)
from pickvariant.catalog.model import (
    MPS,
    Branch,
    Catalog,
    CpuIsa,
    CudaLine,
    CudaRelease,
    DriverSupport,
    GpuArch,
    HardwareFacts,
    PeakThroughput,
    Platform,
    Source,
    TorchSource,
    Variant,
    Workload,
)
from pickvariant.catalog.own_facts import check_own_hardware_facts

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

CATALOG_ENV = settings.CATALOG
DATA_DIR = Path(__file__).resolve().parent / "data"
# The catalog `catalog sync` writes at the top of the checkout; a wheel carries it in data/ (pyproject.toml).
SHIPPED_CATALOG = shipped("catalog/data/catalog.json", "catalog.json")
MAX_CATALOG_BYTES = 16 * 1024 * 1024


def default_catalog_path(env: Mapping[str, str] | None = None) -> Path:
    """PICKVARIANT_CATALOG if set, else the catalog that is part of the package."""
    env = os.environ if env is None else env
    stated = settings.setting(env, CATALOG_ENV)
    if stated is not None:
        check_path_length(stated, CATALOG_ENV)
        return Path(stated)
    return SHIPPED_CATALOG


def hardware_facts_path() -> Path:
    return DATA_DIR / "hardware.json"


def load_json(path: Path, what: str) -> Any:
    return _decoded(read_regular(path, MAX_CATALOG_BYTES, what), path, what)


def _decoded(raw: bytes, path: Path, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"{what} {path} is not valid JSON: {error}") from error
    except RecursionError:
        raise BadInput(f"{what} {path} is nested too deeply to be a {what}") from None


def load_catalog(path: Path | None = None) -> Catalog:
    path = default_catalog_path() if path is None else path
    raw = read_regular(path, MAX_CATALOG_BYTES, "catalog")
    # Tens of thousands of objects that all stay alive: the collector's passes over them while they
    # are made find nothing and cost an eighth of the load, so it waits until they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        # The stamp spares the schema pass only for the catalog shipped inside the package: anyone can recompute
        # a checksum, so a catalog from elsewhere (PICKVARIANT_CATALOG, a site share) is always checked whole.
        shipped = path.resolve() == SHIPPED_CATALOG.resolve()
        data = _decoded(raw, path, "catalog")
        if not shipped:
            check_own_hardware_facts(data, path, load_json(hardware_facts_path(), "hardware facts"))
        return parse_catalog(data, path, schema_checked=shipped and schema_checked_before(raw))
    finally:
        if collecting:
            gc.enable()


@cache
def _schema_bytes() -> bytes:
    return (DATA_DIR / "catalog.schema.json").read_bytes()


def catalog_schema() -> Mapping[str, Any]:
    return load_schema(DATA_DIR / "catalog.schema.json")


# `catalog sync` validates what it writes and says so on the file's second line: the CRC-32 of
# everything after that line, and of the schema it was checked against. While both still match,
# loading the catalog shipped inside the package skips the schema pass (half of loading it; the
# cross-reference checks in _build still run). A checksum is the tool for accidental change, which
# is all this guards against there: whoever can rewrite that file can rewrite the code beside it. A
# catalog from anywhere else is checked whole, stamp or not.
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
    if match is None or not newline:
        return False
    return int(match[1], 16) == zlib.crc32(body) and int(match[2], 16) == zlib.crc32(_schema_bytes())


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


def _driver_support(entry: Mapping[str, Any] | None, where: str) -> DriverSupport | None:
    if entry is None:
        return None
    first = entry.get("first")
    return DriverSupport(
        _parsed(parse_driver_version, first, f"{where}.first") if first else None,
        entry.get("last_branch"),
        entry["source"],
    )


def _parsed(parse: Callable[[str], T], value: str, where: str) -> T:
    """A catalog value through the same parser as user input, with the field named on failure."""
    try:
        return parse(value)
    except BadInput as error:
        raise SchemaError(where, str(error)) from None


def build_hardware(data: Mapping[str, Any]) -> HardwareFacts:
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
        _unique(data[key], field, key)
    platforms = {
        entry["nix_system"]: Platform(entry["nix_system"], entry["os"], entry["arch"]) for entry in data["platforms"]
    }
    arches = {platform.arch for platform in platforms.values()}
    isas = {
        entry["name"]: CpuIsa(
            name=entry["name"],
            platform=entry["platform"],
            description=entry["description"],
            requires=tuple(entry["requires"]),
            compiler_flags=tuple(entry["compiler_flags"]),
            build_env=_build_env(entry, f"cpu_isas.{entry['name']}"),
            torch_cpu_capability=entry["torch_cpu_capability"],
            source=entry["source"],
        )
        for entry in data["cpu_isas"]
    }
    capability_order = data["torch_cpu_capability_order"]["order"]
    for index, isa in enumerate(isas.values()):
        if isa.platform not in arches:
            raise SchemaError(f"cpu_isas[{index}].platform", f"platform {isa.platform!r} is not in platforms")
        if isa.torch_cpu_capability not in capability_order:
            raise SchemaError(
                f"cpu_isas[{index}].torch_cpu_capability",
                f"{isa.torch_cpu_capability!r} is not in torch_cpu_capability_order.order",
            )
    gpu_archs: dict[str, GpuArch] = {}
    for index, entry in enumerate(data["gpu_archs"]):
        capability = _parsed(
            parse_compute_capability, entry["compute_capability"], f"gpu_archs[{index}].compute_capability"
        )
        if capability.sm != entry["name"]:
            raise SchemaError(
                f"gpu_archs[{index}].name", f"{entry['name']!r} does not match compute capability {capability}"
            )
        renamed = entry.get("reported_before_cuda_13")
        gpu_archs[entry["name"]] = GpuArch(
            name=entry["name"],
            compute_capability=capability,
            min_cuda=entry["min_cuda"],
            max_cuda=entry["max_cuda"],
            tegra=entry["tegra"],
            platforms=tuple(entry["platforms"]),
            description=entry["description"],
            products=tuple(entry["products"]),
            reported_before_cuda_13=_parsed(
                parse_compute_capability, renamed, f"gpu_archs[{index}].reported_before_cuda_13"
            )
            if renamed
            else None,
            build_env=_build_env(entry, f"gpu_archs[{index}]"),
            source=entry["source"],
            drivers=_driver_support(entry.get("drivers"), f"gpu_archs[{index}].drivers"),
        )
    cuda_releases = {
        entry["cuda"]: CudaRelease(
            entry["cuda"],
            _parsed(parse_driver_version, entry["min_driver"], f"cuda_releases[{index}].min_driver"),
            entry["toolkit_driver"],
            entry["min_driver_source"],
        )
        for index, entry in enumerate(data["cuda_releases"])
    }
    compiler_flags = {entry["flag"]: tuple(entry["requires"]) for entry in data["compiler_flags"]}
    for index, isa in enumerate(isas.values()):
        for flag in isa.compiler_flags:
            if flag not in compiler_flags:
                raise SchemaError(f"cpu_isas[{index}].compiler_flags", f"{flag!r} is not in compiler_flags")
            if not set(compiler_flags[flag]) <= set(isa.requires):
                raise SchemaError(
                    f"cpu_isas[{index}].compiler_flags",
                    f"{flag} needs {list(compiler_flags[flag])}, more than {isa.name} requires",
                )
    for index, entry in enumerate(data["peak_tflops"]):
        try:
            re.compile(entry["name_pattern"])
        except re.error as error:
            raise SchemaError(f"peak_tflops[{index}].name_pattern", f"not a regular expression: {error}") from None
    return HardwareFacts(
        platforms=platforms,
        isas=isas,
        gpu_archs=gpu_archs,
        cuda_releases=cuda_releases,
        compiler_flags=compiler_flags,
        nixpkgs_torch={entry["rev"]: entry["torch"] for entry in data["nixpkgs_pins"]},
        torch_sources={
            entry["version"]: TorchSource(
                version=entry["version"],
                owner=entry["owner"],
                repo=entry["repo"],
                rev=entry["rev"],
                fetch_submodules=entry["fetch_submodules"],
                hash=entry["hash"],
                source=entry["source"],
                nixpkgs_patches=tuple(
                    (patch["name"], patch["keep"], patch["why"]) for patch in entry["nixpkgs_patches"]
                ),
                nixpkgs_patches_source=entry["nixpkgs_patches_source"],
            )
            for entry in data["torch_sources"]
        },
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
    for index, key in enumerate(map(HARDWARE_KEY, rows)):
        first_rows.setdefault(key, index)
    for index in sorted(first_rows.values()):
        check_hardware(f"variants[{index}]", rows[index], hardware)
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
    branches = tuple(
        _branch(index, entry, hardware, tuple(variants_by_branch[entry["name"]]))
        for index, entry in enumerate(data["branches"])
    )
    return Catalog(
        path=path,
        # A catalog written by an older sync may still hold credentials in its source: never shown.
        source=Source(public_url(data["source"]["repo"]), data["source"]["commit"], data["source"]["date"]),
        platforms=hardware.platforms,
        build_hours=data["build"]["hours"],
        build_disk_gb=data["build"]["disk_gb"],
        build_memory_gb=data["build"]["memory_gb"],
        flag_aliases={entry["spelling"]: tuple(entry["canonical"]) for entry in data["flag_aliases"]},
        tegra_capabilities=frozenset(
            _parsed(
                parse_compute_capability,
                entry["compute_capability"],
                f"tegra_compute_capabilities[{index}].compute_capability",
            )
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
            PeakThroughput(
                entry["gpu"],
                entry["name_pattern"],
                {k: entry[k] for k in ("bf16", "fp16", "tf32", "fp32")},
                entry["source"],
            )
            for entry in data["peak_tflops"]
        ),
        torch_capability_order=tuple(data["torch_cpu_capability_order"]["order"]),
        left_out=tuple((entry["branch"], entry["path"], entry["why"]) for entry in data.get("left_out", ())),
    )


HARDWARE_KEY = operator.itemgetter("platform", "gpu_arch", "cpu_isa", "cuda")
_LINE_KEY = operator.itemgetter("branch", "cuda", "nixpkgs_rev")
_IDENTITY = operator.itemgetter("branch", "package")


def check_hardware(where: str, raw: Mapping[str, Any], hardware: HardwareFacts) -> None:
    platform = hardware.platforms.get(raw["platform"])
    if platform is None:
        raise SchemaError(f"{where}.platform", f"{raw['platform']!r} is not in platforms")
    gpu, isa_name, cuda = raw["gpu_arch"], raw["cpu_isa"], raw["cuda"]
    if gpu == MPS:
        if isa_name is not None or cuda is not None or platform.os != "darwin":
            raise SchemaError(
                where, "an MPS variant has no CPU instruction set and no CUDA line, and is built for darwin"
            )
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
    if not arch.builds_with(cuda):
        raise SchemaError(
            f"{where}.gpu_arch",
            f"{gpu} cannot be built with CUDA {cuda} (needs {arch.min_cuda}..{arch.max_cuda or ''})",
        )
    if not arch.has_host(isa.platform):
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
            raise SchemaError(
                f"{where}.cuda_lines[{l_index}].cuda",
                f"no driver minimum is known for CUDA {line['cuda']} (cuda_releases)",
            )
        min_driver = _parsed(parse_driver_version, line["min_driver"], f"{where}.cuda_lines[{l_index}].min_driver")
        if min_driver != release.min_driver:
            raise SchemaError(
                f"{where}.cuda_lines[{l_index}].min_driver",
                f"{min_driver} differs from cuda_releases ({release.min_driver})",
            )
        cuda_lines.append(
            CudaLine(
                branch=entry["name"],
                cuda=line["cuda"],
                cuda_packages=line["cuda_packages"],
                nixpkgs_rev=line["nixpkgs_rev"],
                min_driver=min_driver,
                min_driver_source=release.source,
            )
        )
    for variant in variants:
        if variant.torch != entry["torch"] or variant.python != entry["python"]:
            raise SchemaError(
                f"{where}",
                f"variant {variant.package} has PyTorch {variant.torch}/Python {variant.python}, the branch {entry['torch']}/{entry['python']}",
            )
    return Branch(
        name=entry["name"],
        commit=entry["commit"],
        torch=entry["torch"],
        python=entry["python"],
        aligned_with=entry["aligned_with"],
        cuda_lines=tuple(cuda_lines),
        variants=variants,
    )
