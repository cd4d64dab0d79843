"""The typer app: every command registered, in the order `--help` lists them, and how a parsed command line ends.

Each command's options and handler live in its own module (detect.py, install.py, plan.py, verify.py, report.py; a
source's own commands in its plug-in: the Flox source's `list`, `recipe` and `catalog sync` in
sources/flox/commandline/, the wheels' `catalog wheels` in sources/wheels/commandline.py); the options that describe a machine or pin a choice are declared
once, in options.py (the typer-free answer to `detect --format json` parses with them too); how a command
ends, its stderr line and exit code, is decided in console.exit_for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from pickvariant import __version__
from pickvariant._base.errors import OperationFailed
from pickvariant.cli import common, console, detect, fleet, install, plan, report, verify
from pickvariant.sources import registry


def _arguments_show_their_metavariable() -> None:
    """Newer typer prints an argument's Python type beside the metavariable in help (`INPUT <list[str]>`); a person
    reads the metavariable (`REPO [COMPANION]...`, `INPUT`). Older typer prints none and has no such method."""
    argument = getattr(typer.core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "display_type_rich"):
        argument.display_type_rich = lambda self, ctx: None


_arguments_show_their_metavariable()

app = typer.Typer(
    name="pickvariant",
    help="Pick, install and verify the right PyTorch for this machine: a custom Flox build, or PyTorch's own wheels.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
catalog_app = typer.Typer(
    help="Build and check the catalogs: catalog.json from the build repository, the wheel catalog from its facts.",
    no_args_is_help=True,
)


def _sources_commands() -> None:
    """The commands only a source has (its Source's `commands`), each registered once, the built-in sources' first:
    `recipe` and `list` beside detect, `catalog sync` and `catalog wheels` under catalog. A plug-in's command of a
    name already taken, or of words not a command's, is left out; one whose code fails to import answers with that
    failure in one line, and every other command still runs."""
    taken = {"detect", "install", "plan", "fleet", "verify", "report", "catalog"}
    for name in registry.names():
        source = registry.named(name)
        for words, spec in source.commands:
            if words in taken or not registry.is_command(words):
                continue
            taken.add(words)
            group, _, sub = words.rpartition(" ")
            try:
                function, settings = _runnable(source, words, spec), {}
            except OperationFailed as error:
                function, settings = _failed(error), {"ignore_unknown_options": True, "allow_extra_args": True}
            (catalog_app if group == "catalog" else app).command(sub, context_settings=settings)(function)


def _runnable(source: registry.Source, words: str, spec: str) -> Callable[..., Any]:
    """A source's command as typer will run it. A plug-in's is made into a click command here, alone: one typer
    cannot make (not a function, a parameter of a type typer has no parser for) fails as that plug-in's, not as every
    command's."""
    function = source.command(words, spec)
    if source.built_in:
        return function
    try:
        alone = typer.Typer()
        alone.command()(function)
        typer.main.get_command(alone)
    except Exception as error:  # whatever typer makes of a third party's function is that plug-in's failure
        from pickvariant.sources.plugin_parts import failed

        raise failed(source.name, f"its command {words!r} ({spec}) as typer makes it", error) from None
    return function


def _failed(error: OperationFailed) -> Callable[[], None]:
    """A plug-in's command that did not load: run, whatever it is given, it says why (exit 1)."""

    @common.exits_on_error
    def failed() -> None:
        raise error

    failed.__doc__ = f"(did not load: {error})"
    return failed


app.command()(detect.detect)
_sources_commands()
app.command()(install.install)
app.command()(plan.plan)
app.command()(fleet.fleet)
app.command()(verify.verify)
app.command()(report.report)
app.add_typer(catalog_app, name="catalog")


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"pickvariant {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Pick, install and verify the right PyTorch for this machine: a custom Flox build, or PyTorch's own wheels."""


def main(argv: list[str] | None = None) -> int:
    """Console entry point: click's usage errors become one line on stderr and exit 2."""
    # click's UsageError from wherever this typer takes click: newer typer (0.27, 0.29) carries its own copy,
    # and `import click` would name a class it never raises.
    # Any: the class is found at run time in whichever click this typer carries.
    usage_error: Any = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "UsageError")
    if not console.prepare_streams():
        return 1
    try:
        result = app(args=argv, prog_name="pickvariant", standalone_mode=False)
        sys.stdout.flush()
    except usage_error as error:
        if type(error).__name__ == "NoArgsIsHelpError":
            # `pickvariant` alone: the help itself, as click shows it, not squeezed into one line.
            error.show()
            return error.exit_code
        print(console.usage_line(error), file=sys.stderr)
        return 2
    except typer.Abort:
        print("pickvariant: aborted", file=sys.stderr)
        return console.INTERRUPTED
    except OSError as error:
        code = console.output_failed(error)
        if code is None:
            raise
        return code
    return result if isinstance(result, int) else 0
