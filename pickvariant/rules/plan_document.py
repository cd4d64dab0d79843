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
from pickvariant.sources.registry import DEFAULT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# One schema for every source's plan: one shape per kind of source, told apart by its source.
SCHEMA = Path(__file__).resolve().with_name("cluster-plan.schema.json")
# A plan takes about 30 times its size in memory once parsed (885 MB for 30 MB): 24 MiB (about 100,000 nodes, under
# 800 MB parsed) is the most read; a larger file is refused before it is parsed, naming the bound (issue 51).
MAX_PLAN_BYTES = 24 * 1024 * 1024


@keyword_record
class PlanShape:
    """How one kind of source's plan names a node's build (rules/cluster-plan.schema.json's shape for it) and how a
    node's verify line names the build it probed: declared by that kind's pipeline (pipelines/), read here and by
    fleet (rules/fleet.py) by these names alone."""

    build: str  # a node's field naming its build: Flox's "package"; a prebuilt build's "torch" (its version, labelled)
    line: str  # the field naming where it is from: Flox's "branch"; a prebuilt build's "variant" (its index)
    platform: str | None  # the field naming the platform it was built for (a prebuilt build's); None: none
    sets: str  # the list naming each build's companions (`--with`): "variants", "builds"
    companion: str  # a companion's field naming what is installed: "package" (Flox), "version" (a release)
    indexed: bool  # its builds are installed from indexes below the plan's index_root (it may name pypi_first)
    probed: tuple[str, ...]  # the verify line's fields naming the build it probed, in the order of (build, line)
    # How fleet names a probed build and a planned one in words (str.format of the fields, values never a template).
    probed_said: str
    planned_said: str


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
    source: str  # the source it was planned from: flox, wheels, or one installed (sources/registry.py)
    shape: PlanShape  # how that source's plans name a build (its pipeline's)
    # Made with --with: each variant's (branch, package) -> its companions as (project, package), installed with it;
    # a wheel plan's: (variant, torch) -> (project, version).
    sets: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] = MappingProxyType({})
    index_root: str | None = None  # a prebuilt plan's: the root of the indexes its builds come from
    pypi_first: bool = False  # a prebuilt plan's made with no index named: PyPI's own builds are installed from PyPI

    def by_label(self) -> dict[str, list[PlannedNode]]:
        found: dict[str, list[PlannedNode]] = {}
        for node in self.nodes:
            found.setdefault(node.label, []).append(node)
        return found


def parse_plan(raw: bytes, where: str, shape_of: Callable[[str], PlanShape]) -> PlanDocument:
    """The plan in `raw`, or BadInput naming the file and the first field that is not a plan's; `shape_of` gives the
    shape of a source's plans, by its name (its pipeline's), or BadInput where no source of that name is here."""
    shown = visible(where)
    try:
        document = strictjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise BadInput(f"plan {shown}: not JSON ({error!s:.120})") from None
    except MemoryError:
        raise BadInput(f"plan {shown}: too large to read in this machine's memory") from None
    try:
        validate(document, load_schema(SCHEMA))
    except SchemaError as error:
        raise BadInput(
            f"plan {shown}: not a plan `pickvariant plan --format json` wrote ({visible(without_credentials(str(error)))})"
        ) from None
    # A plan that names no source is the default source's (plans written before there was another).
    source = document.get("source", DEFAULT)
    shape = shape_of(source)
    return PlanDocument(
        where=where,
        catalog=MappingProxyType(dict(document["catalog"])),
        nodes=_nodes(document, shown, shape),
        sets=MappingProxyType(_sets(document, shape)),
        source=source,
        shape=shape,
        index_root=document.get("index_root") if shape.indexed else None,
        pypi_first=bool(document.get("pypi_first")) if shape.indexed else False,
    )


def _nodes(document: Mapping[str, Any], shown: str, shape: PlanShape) -> tuple[PlannedNode, ...]:
    """Every node of a plan checked against its schema, as PlannedNodes: its build as `package` and where it is from
    as `branch` (a prebuilt plan's torch and index), so that install --plan and fleet judge both by the same two
    fields."""
    name, branch, platform = shape.build, shape.line, shape.platform
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


def _sets(document: Mapping[str, Any], shape: PlanShape) -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """Made with --with: each build's companions, installed with it (Flox: packages; a prebuilt build: released
    versions), by (where it is from, build)."""
    return {
        (build[shape.line], build[shape.build]): tuple((c["project"], c[shape.companion]) for c in build["companions"])
        for build in document.get(shape.sets, ())
        if build.get("companions")
    }


def _profile(document: Mapping[str, Any], entry: Mapping[str, Any], shown: str) -> Mapping[str, Any] | None:
    profiles = document["profiles"]
    if entry["profile"] >= len(profiles):
        raise BadInput(f"plan {shown}: node {visible(entry['label'])!r} names profile {entry['profile']}, not in it")
    profile = profiles[entry["profile"]]
    return MappingProxyType(profile) if profile is not None else None
