"""`install --plan PLAN.json`: this node's assignment in a cluster's plan, checked before anything is installed.

The node is found by its label (--label, PICKVARIANT_LABEL, else the host name); its assignment is installed only
where the plan was made from this catalog and for this node's hardware as it is now. Anything else is refused,
never answered with another build: the admin reviewed the plan, not what a node would pick on its own.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pickvariant._base import settings
from pickvariant._base.errors import BadInput, NoVariant
from pickvariant._base.files import read_input
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request, check_label
from pickvariant._base.text import visible
from pickvariant._base.urls import public_url
from pickvariant.machine.facts import HostFacts
from pickvariant.rules.cluster_plan import catalog_identity, wheels_identity
from pickvariant.rules.decision import PrebuiltAnswer
from pickvariant.rules.node_facts import changes, fingerprint, prebuilt_fingerprint
from pickvariant.rules.plan_document import MAX_PLAN_BYTES, PlanDocument, PlannedNode, PlanShape, parse_plan
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog
from pickvariant.sources.prebuilt import PrebuiltCatalog


@keyword_record
class Assignment:
    """This node's build in a cluster's plan, whichever source planned it: the plan node's package and branch (a Flox
    variant and its branch; a prebuilt build's label, as `torch.__version__` says it, and the index it is on)."""

    label: str
    package: str
    branch: str
    plan: str  # the plan file, as named
    # A set's, as the plan made it: (project, package) of a recipes' set, (project, version) of a prebuilt build's.
    companions: tuple[tuple[str, str], ...] = ()
    # A plan of prebuilt builds: the platform planned for, the catalog and the node's facts it was made from (judged
    # once the rules have answered: check_prebuilt_plan) and the root of its indexes.
    platform: str | None = None
    catalog: Mapping[str, str] | None = None
    profile: Mapping[str, Any] | None = None
    index_root: str = ""
    pypi_first: bool = False  # made with no index named: PyPI's own build from PyPI, as detect answers

    @property
    def said(self) -> str:
        return f"assigned to node {self.label} by plan {self.plan}"


def node_label(stated: str | None, env: Mapping[str, str]) -> tuple[str, str]:
    """(the label, what gave it): --label, else PICKVARIANT_LABEL, else this host's name."""
    if stated is not None:
        return check_label(stated, "--label"), "--label"
    if (named := settings.setting(env, settings.LABEL)) is not None:
        return check_label(named, settings.LABEL), settings.LABEL
    return check_label(socket.gethostname(), "the host name"), "the host name"


def _this_node(document: PlanDocument, label: str | None, what: str) -> tuple[str, PlannedNode]:
    """This node's label and its one assignment in the plan: BadInput where it has none or several that differ,
    NoVariant (exit 3) where the plan serves it nothing."""
    name, given_as = node_label(label, os.environ)
    shown = visible(document.where)
    found = document.by_label().get(name)
    if not found:
        raise BadInput(
            f"{given_as} {visible(name)!r}: no node of that label in plan {shown} ({len(document.nodes)} nodes)"
        )
    if len({(node.package, node.branch) for node in found}) > 1:
        raise BadInput(f"plan {shown} gives label {visible(name)!r} to {len(found)} nodes with different builds")
    node = found[0]
    if node.package is None or node.branch is None:
        raise NoVariant(
            f"plan {shown} serves node {visible(name)!r} no {what}: {visible(node.why or 'no reason given')}"
        )
    return name, node


def read_plan(path: str) -> PlanDocument:
    """The plan at `path`, read in the shape of the source it names (that source's pipeline's)."""
    return parse_plan(read_input(Path(path), MAX_PLAN_BYTES, "plan"), path, lambda name: _shape(name, path))


def _shape(source: str, path: str) -> PlanShape:
    from pickvariant import pipelines

    return pipelines.of(registry.named(source, f"plan {visible(path)}: source")).plan_shape


def _check_catalog(document: PlanDocument, catalog: Catalog) -> None:
    here = catalog_identity(catalog)
    if dict(document.catalog) != here:
        made = document.catalog
        raise BadInput(
            f"plan {visible(document.where)} was made from another catalog ({visible(public_url(made['repo']))} at "
            f"{made['commit'][:12]}, variants {made['variants_sha256'][:12]}) than this node reads ({here['repo']} at "
            f"{here['commit'][:12]}, variants {here['variants_sha256'][:12]}): plan again with this catalog, or set "
            "PICKVARIANT_CATALOG to the plan's"
        )


def _planned_from(plan_path: str, source: str) -> PlanDocument:
    """The plan, where it was planned from `source` (it names its source): BadInput naming the one it was."""
    document = read_plan(plan_path)
    if document.source != source:
        raise BadInput(
            f"plan {visible(plan_path)} is a plan of source {document.source}: install it with --source "
            f"{document.source} (or PICKVARIANT_SOURCE={document.source})"
        )
    return document


def assignment(plan_path: str, label: str | None, catalog: Catalog, facts: HostFacts, source: str) -> Assignment:
    """This node's package and branch from the plan of `source`'s recipes; BadInput (exit 2) or NoVariant (exit 3)
    where there is none to install here, naming the plan, the label and what is wrong."""
    document = _planned_from(plan_path, source)
    _check_catalog(document, catalog)
    name, node = _this_node(document, label, "variant")
    shown = visible(plan_path)
    assert node.package is not None and node.branch is not None
    catalog.variant(node.package, node.branch)  # BadInput unless the catalog builds it on that branch
    if node.profile is None:
        raise BadInput(f"plan {shown}: node {visible(name)!r} was planned from unusable facts; gather and plan again")
    changed = changes(node.profile, fingerprint(facts, catalog))
    if changed:
        raise BadInput(
            f"node {visible(name)!r} is not the machine plan {shown} was made for ({'; '.join(changed)}): "
            f"{node.package} is not installed; gather its facts and plan again"
        )
    companions = document.sets.get((node.branch, node.package), ())
    return Assignment(label=name, package=node.package, branch=node.branch, plan=plan_path, companions=companions)


def prebuilt_assignment(plan_path: str, label: str | None, source: str) -> Assignment:
    """This node's wheel from a plan of prebuilt builds of `source` (PyTorch's wheels by default); BadInput or
    NoVariant where there is none to install."""
    document = _planned_from(plan_path, source)
    shown = visible(plan_path)
    nouns = registry.named(source).nouns
    assert nouns is not None  # a source of prebuilt builds names its nouns (registry checks it)
    name, node = _this_node(document, label, nouns.build)
    assert node.package is not None and node.branch is not None and node.platform is not None
    if node.profile is None:
        raise BadInput(f"plan {shown}: node {visible(name)!r} was planned from unusable facts; gather and plan again")
    return Assignment(
        label=name,
        package=node.package,
        branch=node.branch,
        platform=node.platform,
        plan=plan_path,
        catalog=document.catalog,
        profile=node.profile,
        index_root=document.index_root or "",
        pypi_first=document.pypi_first,
        companions=document.sets.get((node.branch, node.package), ()),
    )


def prebuilt_pins(assigned: Assignment, request: Request, wheels: PrebuiltCatalog) -> Request:
    """The request that asks the wheel rules for the assigned wheel: its release and CUDA line pinned, its
    companions named. The rules decide again; `check_prebuilt_plan` refuses any answer but the plan's."""
    build = next((b for b in wheels.builds if (b.label, b.index, b.platform) == _key(assigned)), None)
    if build is None:
        raise BadInput(
            f"plan {visible(assigned.plan)} gives node {visible(assigned.label)!r} torch {assigned.package} "
            f"({assigned.branch}, {assigned.platform}), which this node's catalog of {wheels.nouns.builds} does not hold: "
            "plan again"
        )
    projects = tuple(project for project, _ in assigned.companions)
    return replace(request, torch=build.torch, cuda=build.cuda, with_projects=projects)


def _key(assigned: Assignment) -> tuple[str, str, str | None]:
    return assigned.package, assigned.branch, assigned.platform


def check_prebuilt_plan(assigned: Assignment, answer: PrebuiltAnswer) -> None:
    """Nothing is installed unless the plan was made from these wheel facts, for this node's hardware as it is now,
    and the wheel rules give this node exactly the plan's wheel and companions under its pins."""
    shown, node = visible(assigned.plan), visible(assigned.label)
    here = wheels_identity(answer.catalog_of_builds())
    made = dict(assigned.catalog or {})
    if made != here:
        raise BadInput(
            f"plan {shown} was made from another catalog (compiled {visible(made.get('facts_compiled', '?'))}) "
            f"than this node reads (compiled {here['facts_compiled']}): plan again with this pickvariant"
        )
    assert assigned.profile is not None  # prebuilt_assignment refused a node planned from unusable facts
    changed = changes(assigned.profile, prebuilt_fingerprint(answer.facts, answer.hardware))
    if changed:
        raise BadInput(
            f"node {node!r} is not the machine plan {shown} was made for ({'; '.join(changed)}): torch "
            f"{assigned.package} is not installed; gather its facts and plan again"
        )
    decision = answer.decision
    got = (decision.build.label, decision.build.index, decision.build.platform) if decision.build else None
    pairs = tuple((pair.project, pair.version) for pair in decision.companions)
    if got != _key(assigned) or pairs != assigned.companions:
        why = "; ".join(decision.reasons[-1:]) if decision.build is None else f"they give {decision.build.label}"
        raise BadInput(
            f"plan {shown} gives node {node!r} torch {assigned.package} ({assigned.branch}), which the rules "
            f"do not give it here ({visible(why)}): nothing was installed; gather its facts and plan again"
        )
