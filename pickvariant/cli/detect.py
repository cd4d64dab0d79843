"""`pickvariant detect`: this machine's facts and the variant for it (its JSON also answered without typer, by
entry.py); with --source wheels, the PyTorch wheel and index for it."""

from __future__ import annotations

import os
from typing import Any

import typer

from pickvariant import api
from pickvariant.cli import options as commandline
from pickvariant.cli.common import decided, declared, exits_on_error, given_on_command_line, request_of
from pickvariant.cli.typer_options import DetectFormat


@exits_on_error
@declared(commandline.DETECT)
def detect(**values: Any) -> None:
    """Show this machine's facts and the variant that is safe and fastest for it, with reasons."""
    output, compact = values["format"], values["compact"]
    if compact and not given_on_command_line("format"):
        output = DetectFormat.json  # --compact exists to feed plan: it implies JSON
    label = commandline.detect_label(values, os.environ, output.value)
    source = commandline.detect_source(values, os.environ, output.value)
    if output is DetectFormat.json:  # one document for every source; entry's fast path prints the same
        from pickvariant.commands.detect import json_text

        text, error = json_text(request_of({**values, "source": source.name}), compact, label)
        typer.echo(text)
        if error is not None:
            raise error
    elif source.pipeline == "builds":
        _detect_wheels({**values, "source": source.name}, output)
    else:
        _detect_flox(values, output)


def _detect_flox(values: dict[str, Any], output: DetectFormat) -> None:
    from pickvariant.output import present, terminal

    request = request_of(values)
    catalog, facts, decision = decided(request)
    if output is DetectFormat.markdown:
        typer.echo(present.decision_markdown(facts, decision, catalog, request.workload), nl=False)
    else:
        terminal.print_decision(facts, decision, catalog, request.workload, every_alternative=values["explain"])
    if decision.variant is None:
        raise api.no_variant_error(decision)


def _detect_wheels(values: dict[str, Any], output: DetectFormat) -> None:
    from pickvariant.cli.console import text_width
    from pickvariant.commands.detect import prebuilt_text

    text, error = prebuilt_text(request_of(values), output.value, text_width(), values["explain"])
    typer.echo(text, nl=False)
    if error is not None:
        raise error
