"""Reading catalog.json: the file (bounded), its validation stamp, the schema, and the cross-checks the schema cannot say.

A catalog that `catalog sync` wrote carries a stamp; while the stamp still matches, the schema pass is
skipped (see below). The hardware facts of sources/data/hardware.json are checked here too, by
build_hardware, for sync and for every load alike.
"""

from __future__ import annotations

import gc
import operator
import os
import re
import zlib
from collections.abc import Mapping
from functools import cache

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.files import check_path_length, read_regular, shipped
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant._base.strictjson import MAX_DOCUMENT_BYTES, decoded, load_file
from pickvariant._base.urls import public_url
from pickvariant._base.versions import (
    parse_driver_version,
)
from pickvariant.sources.build import Branch, Catalog, Source, Variant
from pickvariant.sources.flox.recipes.companion_source import FloxCompanions
from pickvariant.sources.flox.recipes.own_facts import check_own_hardware_facts
from pickvariant.sources.flox.recipes.rows import DATA_DIR, HARDWARE_KEY, check_hardware
from pickvariant.sources.hardware import CudaLine, HardwareFacts
from pickvariant.sources.hardware_json import (
    build_hardware,
    flag_aliases,
    hardware_facts_path,
    parsed,
    peaks,
    tegra_capabilities,
    unique,
    workloads,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

CATALOG_ENV = settings.CATALOG
# The catalog `catalog sync` writes at the top of the checkout; a wheel carries it in data/ (pyproject.toml).
SHIPPED_CATALOG = shipped("sources/flox/recipes/data/catalog.json", "catalog.json")


def default_catalog_path(env: Mapping[str, str] | None = None) -> str:
    """PICKVARIANT_CATALOG if set, else the catalog that is part of the package."""
    env = os.environ if env is None else env
    stated = settings.setting(env, CATALOG_ENV)
    if stated is not None:
        check_path_length(stated, CATALOG_ENV)
        return stated
    return SHIPPED_CATALOG


def load_catalog(path: str | os.PathLike[str] | None = None) -> Catalog:
    path = default_catalog_path() if path is None else path
    raw = read_regular(path, MAX_DOCUMENT_BYTES, "catalog")
    # Tens of thousands of objects that all stay alive: the collector's passes over them while they
    # are made find nothing and cost an eighth of the load, so it waits until they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        # The stamp spares the schema pass only for the catalog shipped inside the package: anyone can recompute
        # a checksum, so a catalog from elsewhere (PICKVARIANT_CATALOG, a site share) is always checked whole.
        shipped = os.path.realpath(path) == os.path.realpath(SHIPPED_CATALOG)
        data = decoded(raw, path, "catalog")
        if not shipped:
            check_own_hardware_facts(data, path, load_file(hardware_facts_path(), "hardware facts"))
        return parse_catalog(data, path, schema_checked=shipped and schema_checked_before(raw))
    finally:
        if collecting:
            gc.enable()


@cache
def _schema_bytes() -> bytes:
    with open(os.path.join(DATA_DIR, "catalog.schema.json"), "rb") as file:
        return file.read()


def catalog_schema() -> Mapping[str, Any]:
    return load_schema(os.path.join(DATA_DIR, "catalog.schema.json"))


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


def parse_catalog(data: Any, path: str | os.PathLike[str], schema_checked: bool = False) -> Catalog:
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


def _build(data: Mapping[str, Any], path: str | os.PathLike[str]) -> Catalog:
    hardware = build_hardware(data)
    isas = hardware.isas
    unique(data["branches"], "name", "branches")
    variants_by_branch: dict[str, list[Variant]] = {entry["name"]: [] for entry in data["branches"]}
    _check_rows(data, hardware)
    for variant in map(Variant.from_row, data["variants"]):
        variants_by_branch[variant.branch].append(variant)
    branches = tuple(
        _branch(index, entry, hardware, tuple(variants_by_branch[entry["name"]]))
        for index, entry in enumerate(data["branches"])
    )
    return Catalog(
        file=os.fspath(path),
        # A catalog written by an older sync may still hold credentials in its source: never shown.
        source=Source(
            public_url(data["source"]["repo"]),
            data["source"]["commit"],
            data["source"]["date"],
            bool(data["source"].get("trusted_by_user", False)),
        ),
        platforms=hardware.platforms,
        build_hours=data["build"]["hours"],
        build_disk_gb=data["build"]["disk_gb"],
        build_memory_gb=data["build"]["memory_gb"],
        flag_aliases=flag_aliases(data),
        tegra_capabilities=tegra_capabilities(data, hardware),
        isas=isas,
        gpu_archs=hardware.gpu_archs,
        cuda_releases=hardware.cuda_releases,
        compiler_flags=hardware.compiler_flags,
        nixpkgs_torch=hardware.nixpkgs_torch,
        torch_sources=hardware.torch_sources,
        python_preference=tuple(data["python_preference"]["order"]),
        min_macos=data["apple"]["min_macos"],
        workloads=workloads(data, isas),
        branches=branches,
        peaks=peaks(data),
        torch_capability_order=tuple(data["torch_cpu_capability_order"]["order"]),
        companion_source=FloxCompanions(),
        left_out=tuple((entry["branch"], entry["path"], entry["why"]) for entry in data.get("left_out", ())),
    )


def _check_rows(data: Mapping[str, Any], hardware: HardwareFacts) -> None:
    """Every row's hardware and CUDA line, and no package twice on a branch."""
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


_LINE_KEY = operator.itemgetter("branch", "cuda", "nixpkgs_rev")
_IDENTITY = operator.itemgetter("branch", "package")


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
        min_driver = parsed(parse_driver_version, line["min_driver"], f"{where}.cuda_lines[{l_index}].min_driver")
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
