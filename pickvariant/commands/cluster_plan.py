"""`pickvariant plan`: read a cluster's detect lines and solve for the fewest builds that serve every node."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import IO, Any

from pickvariant._base import settings
from pickvariant._base.records import keyword_record
from pickvariant._base.request import Request
from pickvariant._base.urls import public_url
from pickvariant.rules import cluster_input
from pickvariant.rules import cluster_plan as planner
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog
from pickvariant.sources.hardware import Hardware

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.sources.registry import Source


@keyword_record
class ClusterPlanOptions:
    inputs: tuple[str, ...]
    org: str | None = None
    max_variants: int | None = None
    source: str | None = None  # --source: flox (the default) or wheels
    wheel_index: str | None = None  # --wheel-index, with --source wheels


@keyword_record
class PlannedCluster:
    result: planner.ClusterPlan[Any, Any]  # the recipes' or a source of prebuilt builds'
    org: str | None  # as given, or from PICKVARIANT_FLOX_ORG: the printed commands name it


def run(
    options: ClusterPlanOptions,
    request: Request,
    catalog: Callable[[], Catalog],
    stdin: IO[bytes],
    reading: Callable[[int | None], Any],
) -> PlannedCluster:
    """`reading(size)`: a context manager giving the progress callback for reading the inputs (a bar on a terminal).
    `catalog` loads the recipes' catalog, read only for the Flox source (the wheels are judged by the hardware facts
    alone)."""
    source = registry.chosen(options.source, os.environ)
    registry.refuse_others(source, {"--wheel-index": options.wheel_index})
    org, given_as = options.org, "--org"
    if org is None and (org := settings.setting(os.environ, settings.FLOX_ORG)) is not None:
        given_as = settings.FLOX_ORG
    if org is not None:
        from pickvariant.install.flow import check_org

        check_org(org, given_as)  # printed into commands people paste
    inputs: Sequence[str] = list(options.inputs)
    with reading(cluster_input.input_size(inputs, stdin)) as on_progress:
        read = cluster_input.read_inputs(inputs, stdin, on_progress)
    request = request.with_environment(os.environ)
    if source.pipeline == "builds":
        from pickvariant.api import hardware_catalog

        return PlannedCluster(result=_wheel_plan(read, hardware_catalog(), request, options, source), org=org)
    result = planner.make_cluster_plan(read, catalog(), request, options.max_variants)
    return PlannedCluster(result=result, org=org)


def _wheel_plan(
    read: cluster_input.Inputs, hardware: Hardware, request: Request, options: ClusterPlanOptions, source: Source
) -> planner.PrebuiltPlan:

    wheels = source.catalog()
    # The plan travels to every node: its index carries no credential (each node's pip takes them from its netrc).
    root = public_url(settings.wheel_index(options.wheel_index, os.environ, wheels.index_root))
    return planner.make_prebuilt_plan(read, hardware, wheels, request, options.max_variants, root, source.name)
