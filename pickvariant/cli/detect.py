"""`pickvariant detect`: this machine's facts and the variant for it (its JSON also answered without typer, by entry.py)."""

from __future__ import annotations

import os
from typing import Any

import typer

from pickvariant import api
from pickvariant.cli import console
from pickvariant.cli import options as commandline
from pickvariant.cli.common import decided, declared, exits_on_error, given_on_command_line, request_of
from pickvariant.cli.typer_options import Format


@exits_on_error
@declared(commandline.DETECT)
def detect(**values: Any) -> None:
    """Show this machine's facts and the variant that is safe and fastest for it, with reasons."""
    from pickvariant.output import present, terminal

    output, compact = values["format"], values["compact"]
    if compact and not given_on_command_line("format"):
        output = Format.json  # --compact exists to feed plan: it implies JSON
    label = commandline.detect_label(values, os.environ, output.value)
    request = request_of(values)
    if output is Format.json:
        # The same function answers the typer-free path in entry.py.
        text, choice = console.detect_json(request, compact, label)
        typer.echo(text)
        if choice.variant is None:
            raise choice.no_variant_error()
        return
    catalog, facts, decision = decided(request)
    if output is Format.markdown:
        typer.echo(present.decision_markdown(facts, decision, catalog, request.workload), nl=False)
    else:
        terminal.print_decision(facts, decision, catalog, request.workload, every_alternative=values["explain"])
    if decision.variant is None:
        raise api.no_variant_error(decision)
