"""`pickvariant plan`: the fewest builds for a cluster, from its nodes' detect lines; its options."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog, request_of
from pickvariant.cli.typer_options import Format

PlanInputs = Annotated[
    list[str],
    typer.Argument(
        metavar="INPUT",
        help="JSONL files of `detect --format json --compact` lines, directories of JSON files, or - for stdin.",
    ),
]


PlanMaxVariants = Annotated[
    int | None,
    typer.Option(
        "--max-variants",
        metavar="N",
        help="Use at most this many variants: the best assignment within them, naming who gets less or nothing.",
    ),
]


@exits_on_error
@declared()
def plan(
    inputs: PlanInputs,
    org: Any = commandline.PLAN_ORG,
    max_variants: PlanMaxVariants = None,
    workload: Any = commandline.WORKLOAD,
    python_version: Any = commandline.PYTHON,
    with_: Any = commandline.WITH,
    format: Any = commandline.FORMAT,
    source: Any = commandline.SOURCE,
    wheel_index: Any = commandline.WHEEL_INDEX,
) -> None:
    """For a whole cluster: the fewest variants that serve every node, and which node gets which (solved exactly)."""
    from pickvariant.commands import cluster_plan as command
    from pickvariant.output.terminal import reading_progress

    request = request_of({"workload": workload, "python_version": python_version, "with_": with_})
    options = command.ClusterPlanOptions(
        inputs=tuple(inputs), org=org, max_variants=max_variants, source=source, wheel_index=wheel_index
    )
    planned = command.run(options, request, load_catalog, sys.stdin.buffer, reading_progress)
    if format is Format.json:
        typer.echo(json.dumps(planned.writer.plan_document(planned.result), indent=2))
    else:
        lines = planned.writer.plan_text(planned.result, planned.org, markdown=format is Format.markdown)
        typer.echo("\n".join(lines))
