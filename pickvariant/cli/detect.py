"""`pickvariant detect`: this machine's facts and the variant for it (its JSON also answered without typer, by
entry.py); with --source wheels, the PyTorch wheel and index for it."""

from __future__ import annotations

import os
from typing import Any

import typer

from pickvariant import api, pipelines
from pickvariant._base.errors import NoVariant
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
    elif output is DetectFormat.text and values["explain"] and pipelines.of(source).explain_drawn:
        error = _explained(values)
    else:
        from pickvariant.cli import console
        from pickvariant.commands.detect import answer_text

        request = request_of({**values, "source": source.name})
        width, colour = console.text_width(), console.colours()
        text, error = answer_text(request, output.value, width, values["explain"], colour)
        typer.echo(text, nl=False)
    if error is not None:
        raise error


def _explained(values: dict[str, Any]) -> NoVariant | None:
    """The recipes' --explain: the facts as a table and every alternative as a tree, drawn by the terminal."""
    from pickvariant.output import terminal

    request = request_of(values)
    catalog, facts, decision = decided(request)
    terminal.print_explained(facts, decision, catalog, request.workload)
    return None if decision.build is not None else api.no_variant_error(decision)
