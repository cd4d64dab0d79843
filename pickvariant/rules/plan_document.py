"""A cluster plan read back (`plan --format json`, as `install --plan` and `fleet` take it): parsed and checked against
its schema before any field is used, since a plan file travels to every node and may have been edited on the way."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pickvariant._base import strictjson
from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant._base.text import visible

SCHEMA = Path(__file__).resolve().with_name("cluster-plan.schema.json")
# A plan takes about 30 times its size in memory once parsed (885 MB for 30 MB): 24 MiB (about 100,000 nodes, under
# 800 MB parsed) is the most read; a larger file is refused before it is parsed, naming the bound (issue 51).
MAX_PLAN_BYTES = 24 * 1024 * 1024


@keyword_record
class PlannedNode:
    label: str
    package: str | None  # None: the plan serves it no variant
    branch: str | None
    why: str | None
    profile: Mapping[str, Any] | None  # the facts it was planned for (rules/node_facts.py); None: unreadable


@keyword_record
class PlanDocument:
    where: str  # the file, as named
    catalog: Mapping[str, str]
    nodes: tuple[PlannedNode, ...]
    # Made with --with: each variant's (branch, package) -> its companions as (project, package), installed with it.
    sets: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] = MappingProxyType({})

    def by_label(self) -> dict[str, list[PlannedNode]]:
        found: dict[str, list[PlannedNode]] = {}
        for node in self.nodes:
            found.setdefault(node.label, []).append(node)
        return found


def parse_plan(raw: bytes, where: str) -> PlanDocument:
    """The plan in `raw`, or BadInput naming the file and the first field that is not a plan's."""
    shown = visible(where)
    try:
        document = strictjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise BadInput(f"plan {shown}: not JSON ({error!s:.120})") from None
    except MemoryError:
        raise BadInput(f"plan {shown}: too large to read in this machine's memory") from None
    if isinstance(document, dict) and document.get("source") == "wheels":
        raise BadInput(
            f"plan {shown} is a plan of PyTorch's wheels: each node runs the pip command it prints "
            "(install --plan carries out a Flox plan)"
        )
    try:
        validate(document, load_schema(SCHEMA))
    except SchemaError as error:
        raise BadInput(
            f"plan {shown}: not a plan `pickvariant plan --format json` wrote ({visible(str(error))})"
        ) from None
    profiles = document["profiles"]
    nodes = []
    for entry in document["nodes"]:
        if entry["profile"] >= len(profiles):
            raise BadInput(
                f"plan {shown}: node {visible(entry['label'])!r} names profile {entry['profile']}, not in it"
            )
        if (entry["package"] is None) != (entry["branch"] is None):
            raise BadInput(
                f"plan {shown}: node {visible(entry['label'])!r} has a package without a branch, or the reverse"
            )
        profile = profiles[entry["profile"]]
        nodes.append(
            PlannedNode(
                label=entry["label"],
                package=entry["package"],
                branch=entry["branch"],
                why=entry["why"],
                profile=MappingProxyType(profile) if profile is not None else None,
            )
        )
    sets = {
        (variant["branch"], variant["package"]): tuple((c["project"], c["package"]) for c in variant["companions"])
        for variant in document.get("variants", ())
        if variant.get("companions")
    }
    return PlanDocument(
        where=where,
        catalog=MappingProxyType(dict(document["catalog"])),
        nodes=tuple(nodes),
        sets=MappingProxyType(sets),
    )
