"""The shipped wheel catalog (wheels.json), read bounded into sources/prebuilt.py's records.

Read only when the wheels source is asked for (`--source wheels`): detect's default path never opens it. Any catalog
but the package's own (the one `catalog wheels --refresh` keeps in the cache, one named by path) is checked against
data/wheel-catalog.schema.json first: a value of the wrong type or shape is refused whole, never read into a record
the rules would trip on.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence

from pickvariant._base import strictjson
from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_regular
from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.sources.accelerator import GpuCode, Rocm, Xpu
from pickvariant.sources.prebuilt import LeftOut, PairedRelease, PrebuiltCatalog, published
from pickvariant.sources.runs_on import Build
from pickvariant.sources.wheels.catalog.facts import (
    CATALOG,
    DATA_DIR,
    MAX_FACTS_BYTES,
    SCHEMA_VERSION,
    facts_digest,
    refreshed_file,
)

CATALOG_SCHEMA = os.path.join(DATA_DIR, "wheel-catalog.schema.json")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_wheel_catalog(path: str | os.PathLike[str] | None = None) -> PrebuiltCatalog:
    """The wheel catalog (by default the one `catalog wheels --refresh` derived, where there is one, else the one
    shipped), or BadInput naming the file and what in it is not one."""
    if path is None:
        refreshed = refreshed_file()
        if os.path.isfile(refreshed):
            try:
                found = _load(refreshed)
            except BadInput:  # the cache is what pickvariant may lose: a damaged one is set aside, never trusted
                found = None
            # Derived from the facts this pickvariant ships, or from older ones (pickvariant upgraded since): only
            # the first is preferred; the shipped catalog answers until --refresh runs again.
            if found is not None and found.based_on is not None and found.based_on == facts_digest():
                return found
        path = CATALOG
    return _load(os.fspath(path))


@functools.cache
def _load(path: str) -> PrebuiltCatalog:
    raw = read_regular(path, MAX_FACTS_BYTES, "wheel catalog")
    try:
        document = strictjson.loads(raw.decode("utf-8"))
        # The package's own is its code; any other is checked whole first.
        if os.path.realpath(path) != os.path.realpath(CATALOG):
            from pickvariant._base.schema import load_schema, validate

            validate(document, load_schema(CATALOG_SCHEMA))
        if document.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"schema_version {document.get('schema_version')!r}, not {SCHEMA_VERSION}")
        return PrebuiltCatalog(
            builds=tuple(_build(row) for row in document["builds"]),
            left_out=tuple(LeftOut(**row) for row in document["left_out"]),
            companions={torch: _paired(projects) for torch, projects in document["companions"].items()},
            index_root=str(document["index_root"]).rstrip("/"),
            facts_compiled=str(document["facts_compiled"]),
            sources=dict(document["sources"]),
            refreshed=str(document["refreshed"]) if document.get("refreshed") else None,
            based_on=str(document["based_on"]) if document.get("based_on") else None,
        )
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, BadInput, RecursionError) as error:
        raise BadInput(
            f"wheel catalog {path}: not one ({error!s:.200}); regenerate it with `pickvariant catalog wheels`"
        ) from None


# A catalog names a score of capabilities and floors hundreds of times: each text is parsed once (the records are
# frozen, so one is shared by every build that names it; bounded, as every read is). Most of the catalog load.
_capability = functools.lru_cache(maxsize=4096)(parse_compute_capability)
_driver = functools.lru_cache(maxsize=4096)(parse_driver_version)


def _build(row: Mapping[str, Any]) -> Build:
    return published(
        source="wheels",
        torch=str(row["torch"]),
        index=str(row["variant"]),
        platform=str(row["platform"]),
        python=tuple(str(tag) for tag in row["python"]),
        sass=tuple(_capability(text) for text in row["sass"]),
        ptx=tuple(_capability(text) for text in row["ptx"]),
        ptx_known=bool(row["ptx_known"]),
        cuda=row["cuda"],
        cuda_min_driver=_driver(row["min_driver"]) if row["min_driver"] else None,
        default_index=bool(row["pypi"]),
        sources=tuple(row["sources"]),
        note=str(row["note"]),
        gpu_code=_gpu_code(row.get("gpu_code"), row["variant"]),
    )


def _gpu_code(code: Mapping[str, Any] | None, variant: str) -> GpuCode | None:
    """A ROCm or XPU build's targets; ValueError for a family the rules have no check for (never read as a CPU
    build)."""
    if code is None:
        return None
    targets, inferred = tuple(str(target) for target in code["targets"]), str(code["inferred"])
    if code["family"] == "rocm" and variant.startswith("rocm") and variant != "rocm":  # a ROCm release named
        return Rocm(stack=variant.removeprefix("rocm"), targets=targets, inferred=inferred)
    if code["family"] == "xpu" and variant == "xpu":
        return Xpu(aot=targets, inferred=inferred)
    raise ValueError(f"build {variant}: GPU code of family {code['family']!r}, which no rule judges")


def _paired(projects: Mapping[str, Any]) -> Mapping[str, PairedRelease | None]:
    return {project: None if pair is None else _pair(project, pair) for project, pair in projects.items()}


def _pair(project: str, pair: Sequence[Any]) -> PairedRelease:
    """[version, requires] from the release's own metadata, or with a third item: a pairing stated by its makers,
    true of PyPI's builds only ({"from": "pypi", "sources": [...]})."""
    stated = pair[2] if len(pair) > 2 else None
    if stated is not None and stated["from"] != "pypi":
        raise ValueError(f"{project} {pair[0]}: a stated pairing from {stated['from']!r}, not 'pypi'")
    return PairedRelease(
        project=project,
        version=str(pair[0]),
        requires=pair[1],
        pypi_only=stated is not None,
        sources=tuple(stated["sources"]) if stated is not None else (),
        python=tuple(stated.get("python", ())) if stated is not None else (),
    )
