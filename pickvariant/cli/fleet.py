"""`pickvariant fleet`: a cluster plan against the verify lines its nodes sent back; its options."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error
from pickvariant.cli.typer_options import Format

FleetPlan = Annotated[str, typer.Argument(metavar="PLAN", help="The plan (`pickvariant plan --format json`).")]

FleetResults = Annotated[
    list[str],
    typer.Argument(
        metavar="RESULTS",
        help="`verify --format json --compact --label NAME` lines: files, directories of them, or - for stdin.",
    ),
]


@exits_on_error
@declared()
def fleet(plan: FleetPlan, results: FleetResults, format: Any = commandline.FORMAT) -> None:
    """The fleet's verdict: each node of a plan proven, failed, on another build, missing or slow (exit 0 only when
    every node the plan serves is proven)."""
    from pickvariant.commands import fleet as command
    from pickvariant.output.fleet import fleet_json, fleet_lines

    verdict = command.run(command.FleetOptions(plan=plan, results=tuple(results)), sys.stdin.buffer)
    if format is Format.json:
        typer.echo(json.dumps(fleet_json(verdict), indent=2, allow_nan=False))
    else:
        typer.echo("\n".join(fleet_lines(verdict, markdown=format is Format.markdown)))
    if not verdict.all_proven:
        raise typer.Exit(1)
