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

from pickvariant._base import settings
from pickvariant._base.errors import BadInput, NoVariant
from pickvariant._base.files import read_input
from pickvariant._base.records import keyword_record
from pickvariant._base.request import check_label
from pickvariant._base.text import visible
from pickvariant._base.urls import public_url
from pickvariant.machine.facts import HostFacts
from pickvariant.rules.cluster_plan import catalog_identity
from pickvariant.rules.node_facts import changes, fingerprint
from pickvariant.rules.plan_document import MAX_PLAN_BYTES, PlanDocument, parse_plan
from pickvariant.sources.build import Catalog


@keyword_record
class Assignment:
    label: str
    package: str
    branch: str
    plan: str  # the plan file, as named
    companions: tuple[tuple[str, str], ...] = ()  # a set's: (project, package), as the plan made it


def node_label(stated: str | None, env: Mapping[str, str]) -> tuple[str, str]:
    """(the label, what gave it): --label, else PICKVARIANT_LABEL, else this host's name."""
    if stated is not None:
        return check_label(stated, "--label"), "--label"
    if (named := settings.setting(env, settings.LABEL)) is not None:
        return check_label(named, settings.LABEL), settings.LABEL
    return check_label(socket.gethostname(), "the host name"), "the host name"


def read_plan(path: str) -> PlanDocument:
    return parse_plan(read_input(Path(path), MAX_PLAN_BYTES, "plan"), path)


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


def assignment(plan_path: str, label: str | None, catalog: Catalog, facts: HostFacts) -> Assignment:
    """This node's package and branch from the plan; BadInput (exit 2) or NoVariant (exit 3) where there is none
    to install here, naming the plan, the label and what is wrong."""
    name, given_as = node_label(label, os.environ)
    document = read_plan(plan_path)
    _check_catalog(document, catalog)
    shown = visible(plan_path)
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
            f"plan {shown} serves node {visible(name)!r} no variant: {visible(node.why or 'no reason given')}"
        )
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
