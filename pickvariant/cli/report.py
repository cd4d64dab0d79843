"""`pickvariant report`: one block for a support ticket; its options."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer

from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog, request_of


class ReportFormat(StrEnum):
    markdown = "markdown"
    json = "json"


ReportFormatOpt = Annotated[ReportFormat, typer.Option("--format", help="markdown (default) or json.")]


@exits_on_error
@declared(commandline.REQUEST)
def report(
    format: ReportFormatOpt = ReportFormat.markdown,
    python: Any = commandline.REPORT_PYTHON,
    source: Any = commandline.SOURCE,
    wheel_index: Any = commandline.WHEEL_INDEX,
    **values: Any,
) -> None:
    """One block for a support ticket: versions, hardware, the recommendation and the installed PyTorch.

    With --cpuinfo, --gpu, --driver or --driver-cuda (or their PICKVARIANT_* variables) it describes that
    machine instead: what is not stated is "not stated", never this machine's."""
    from pickvariant.commands.report import report as reported
    from pickvariant.output import report as reporter

    # --source, --python and --wheel-index are the Request's, as for detect and install
    request = request_of({**values, "source": source, "python": python, "wheel_index": wheel_index})
    data = reported(request, load_catalog).data
    typer.echo(
        json.dumps(data, indent=2) if format is ReportFormat.json else reporter.markdown(data),
        nl=format is ReportFormat.json,
    )
