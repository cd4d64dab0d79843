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
from pickvariant._base.urls import without_credentials
from pickvariant.sources.registry import RECIPES

# One schema for every source's plan: a plan of recipes and one of prebuilt builds, told apart by its source.
SCHEMA = Path(__file__).resolve().with_name("cluster-plan.schema.json")
# A plan takes about 30 times its size in memory once parsed (885 MB for 30 MB): 24 MiB (about 100,000 nodes, under
# 800 MB parsed) is the most read; a larger file is refused before it is parsed, naming the bound (issue 51).
MAX_PLAN_BYTES = 24 * 1024 * 1024


@keyword_record
class PlannedNode:
    """One node's assignment. A wheel plan's names its build as `package` (the torch version, local label and all:
    what `torch.__version__` says) and `branch` (the index it is on, "cu126"), so that fleet and install --plan judge
    it by the same two fields."""

    label: str
    package: str | None  # None: the plan serves it no variant
    branch: str | None
    why: str | None
    profile: Mapping[str, Any] | None  # the facts it was planned for (rules/node_facts.py); None: unreadable
    platform: str | None = None  # a wheel's platform ("linux-x86_64")


@keyword_record
class PlanDocument:
    where: str  # the file, as named
    catalog: Mapping[str, str]
    nodes: tuple[PlannedNode, ...]
    # Made with --with: each variant's (branch, package) -> its companions as (project, package), installed with it;
    # a wheel plan's: (variant, torch) -> (project, version).
    sets: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] = MappingProxyType({})
    source: str = RECIPES  # the source it was planned from: flox, wheels, or one registered (sources/registry.py)
    index_root: str | None = None  # a wheel plan's: the root of the indexes its wheels come from
    pypi_first: bool = False  # a wheel plan's made with no index named: PyPI's own builds are installed from PyPI

    @property
    def prebuilt(self) -> bool:
        """A plan of prebuilt builds (wheels, or a registered source's), in that shape of cluster-plan.schema.json."""
        return self.source != RECIPES

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
    # A plan of Flox builds may name no source (plans written before there was another).
    wheels = isinstance(document, dict) and document.get("source", RECIPES) != RECIPES
    try:
        validate(document, load_schema(SCHEMA))
    except SchemaError as error:
        raise BadInput(
            f"plan {shown}: not a plan `pickvariant plan --format json` wrote ({visible(without_credentials(str(error)))})"
        ) from None
    return PlanDocument(
        where=where,
        catalog=MappingProxyType(dict(document["catalog"])),
        nodes=_nodes(document, shown, wheels),
        sets=MappingProxyType(_sets(document, wheels)),
        source=document.get("source", RECIPES),
        index_root=document.get("index_root") if wheels else None,
        pypi_first=bool(document.get("pypi_first")) if wheels else False,
    )


# The names for a node's build in a plan: the build, its branch or index, and (prebuilt builds) its platform.
_FIELDS = {False: ("package", "branch", None), True: ("torch", "variant", "platform")}


def _nodes(document: Mapping[str, Any], shown: str, prebuilt: bool) -> tuple[PlannedNode, ...]:
    """Every node of a plan checked against its schema, as PlannedNodes: a wheel plan's torch as `package` and its
    index as `branch`, so that install --plan and fleet judge both by the same two fields."""
    name, branch, platform = _FIELDS[prebuilt]
    nodes = []
    for entry in document["nodes"]:
        fields = [key for key in (name, branch, platform) if key is not None]
        if len({entry[key] is None for key in fields}) > 1:
            raise BadInput(
                f"plan {shown}: node {visible(entry['label'])!r} has a {', '.join(fields[:-1])} or {fields[-1]} "
                "without the others"
            )
        nodes.append(
            PlannedNode(
                label=entry["label"],
                package=entry[name],
                branch=entry[branch],
                why=entry["why"],
                profile=_profile(document, entry, shown),
                platform=entry[platform] if platform else None,
            )
        )
    return tuple(nodes)


def _sets(document: Mapping[str, Any], prebuilt: bool) -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """Made with --with: each build's companions, installed with it (Flox: packages; wheels: released versions)."""
    if prebuilt:
        return {
            (build["variant"], build["torch"]): tuple((c["project"], c["version"]) for c in build["companions"])
            for build in document["builds"]
            if build["companions"]
        }
    return {
        (variant["branch"], variant["package"]): tuple((c["project"], c["package"]) for c in variant["companions"])
        for variant in document.get("variants", ())
        if variant.get("companions")
    }


def _profile(document: Mapping[str, Any], entry: Mapping[str, Any], shown: str) -> Mapping[str, Any] | None:
    profiles = document["profiles"]
    if entry["profile"] >= len(profiles):
        raise BadInput(f"plan {shown}: node {visible(entry['label'])!r} names profile {entry['profile']}, not in it")
    profile = profiles[entry["profile"]]
    return MappingProxyType(profile) if profile is not None else None
