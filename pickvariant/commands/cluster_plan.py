"""`pickvariant plan`: read a cluster's detect lines and solve for the fewest builds that serve every node."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import IO, Any

from pickvariant import pipelines
from pickvariant._base import settings
from pickvariant._base.records import keyword_record
from pickvariant._base.request import Request
from pickvariant.rules import cluster_input
from pickvariant.rules import cluster_plan as planner
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog


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
    writer: Any  # the source's Pipeline (pipelines/__init__.py): what writes its plan out


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
        from pickvariant.install.options import check_org

        check_org(org, given_as)  # printed into commands people paste
    inputs: Sequence[str] = list(options.inputs)
    with reading(cluster_input.input_size(inputs, stdin)) as on_progress:
        read = cluster_input.read_inputs(inputs, stdin, on_progress)
    request = request.with_environment(os.environ)
    pipeline = pipelines.of(source)
    result = pipeline.cluster_plan(
        read, request, source, max_variants=options.max_variants, index=options.wheel_index, catalog=catalog
    )
    return PlannedCluster(result=result, org=org, writer=pipeline)
