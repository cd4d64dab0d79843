"""The command line: short declarations over the library, parsed by typer and shown with rich.

The options that describe a machine and pin a choice are declared once, in commandline.py (the
typer-free answer to `detect --format json` parses with them too); how a command ends, its stderr
line and exit code, is decided in console.exit_for.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer

from pickvariant import __version__, api, commandline, console
from pickvariant import cli_options as opt
from pickvariant._base.errors import BadInput, PickVariantError
from pickvariant._base.request import Request
from pickvariant._base.text import visible_lines

if TYPE_CHECKING:
    from pickvariant.catalog.model import Catalog
    from pickvariant.machine.facts import HostFacts
    from pickvariant.rules.decision import Decision


def _arguments_show_their_metavariable() -> None:
    """Newer typer prints an argument's Python type beside the metavariable in help (`INPUT <list[str]>`); a person
    reads the metavariable (`REPO [COMPANION]...`, `INPUT`). Older typer prints none and has no such method."""
    argument = getattr(typer.core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "display_type_rich"):
        argument.display_type_rich = lambda self, ctx: None


_arguments_show_their_metavariable()

app = typer.Typer(
    name="pickvariant",
    help="Pick, build and verify the right custom PyTorch variant for this machine.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


def _typer_parameter(name: str, option: commandline.Option) -> inspect.Parameter:
    choice = opt.CHOICES.get(option.choices)
    annotation = choice if choice is not None else opt.KINDS[option.kind]
    default = choice(option.default) if choice is not None else option.default
    declared = (
        typer.Option(option.flag, help=option.help, metavar=option.metavar)
        if option.metavar
        else typer.Option(option.flag, help=option.help)
    )
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, declared]
    )


def declared(options: Mapping[str, commandline.Option] = {}) -> Callable[[F], F]:
    """Give a command the typer parameters of commandline's declarations: `options` first (their values
    reach the command's **values), then its own, each whose default is a commandline.Option declared so."""

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        parameters = [_typer_parameter(name, option) for name, option in options.items()]
        for parameter in signature.parameters.values():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            if isinstance(parameter.default, commandline.Option):
                parameters.append(_typer_parameter(parameter.name, parameter.default))
            else:
                parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        # typer reads the parameters from __signature__, which type checkers do not know on a function.
        setattr(command, "__signature__", signature.replace(parameters=parameters))  # noqa: B010
        return command

    return decorate


def exits_on_error(command: F) -> F:
    """End the command as console.exit_for says: one line on stderr and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (PickVariantError, KeyboardInterrupt, OSError) as error:
            ending = console.exit_for(error)
            if ending is None:
                raise
            typer.echo(ending[0], err=True)
            raise typer.Exit(ending[1]) from None

    return cast(F, wrapper)


def _request(values: Mapping[str, Any]) -> Request:
    return commandline.request_from(
        {name: value.value if isinstance(value, Enum) else value for name, value in values.items()}
    )


def _decided(request: Request) -> tuple[Catalog, HostFacts, Decision]:
    choice = api.recommend_request(request, catalog=_catalog())
    return choice.catalog, choice.facts, choice.decision


def _given_on_command_line(parameter: str) -> bool:
    """Was this option given on the command line (not left at its default)?"""
    import importlib

    # The click this typer runs on: newer typer carries its own copy (typer._click), older ones use click itself.
    package = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "UsageError").__module__
    click = importlib.import_module(package.rsplit(".", 1)[0] + ".globals")
    core = importlib.import_module(package.rsplit(".", 1)[0] + ".core")
    source = click.get_current_context().get_parameter_source(parameter)
    return bool(source is core.ParameterSource.COMMANDLINE)


def _catalog() -> Catalog:
    from pickvariant.catalog.load import load_catalog

    return load_catalog()


@app.command()
@exits_on_error
@declared(commandline.DETECT)
def detect(**values: Any) -> None:
    """Show this machine's facts and the variant that is safe and fastest for it, with reasons."""
    from pickvariant.output import present, terminal

    output, compact = values["format"], values["compact"]
    if compact and not _given_on_command_line("format"):
        output = opt.Format.json  # --compact exists to feed plan: it implies JSON
    label = commandline.detect_label(values, os.environ, output.value)
    request = _request(values)
    if output is opt.Format.json:
        # The same function answers the typer-free path in entry.py.
        text, choice = console.detect_json(request, compact, label)
        typer.echo(text)
        if choice.variant is None:
            raise choice.no_variant_error()
        return
    catalog, facts, decision = _decided(request)
    if output is opt.Format.markdown:
        typer.echo(present.decision_markdown(facts, decision, catalog, request.workload), nl=False)
    else:
        terminal.print_decision(facts, decision, catalog, request.workload, every_alternative=values["explain"])
    if decision.variant is None:
        raise api.no_variant_error(decision)


@app.command("list")
@exits_on_error
@declared()
def list_variants(
    branch: opt.ListBranch = None,
    python_version: opt.ListPythonVersion = None,
    cuda: opt.ListCuda = None,
    gpu: opt.ListGpu = None,
    isa: opt.ListIsa = None,
    platform: opt.ListPlatform = None,
    all_rows: opt.ListAllRows = False,
    project: opt.ListProject = "pytorch",
    format: Any = commandline.FORMAT,
) -> None:
    """List the catalog's variants: a summary by branch, or rows with --all or any filter (--project lists a companion's recipes)."""
    from pickvariant.commands.listing import ListOptions, listed
    from pickvariant.output import listing, terminal

    catalog = _catalog()
    filters = listing.Filters(branch=branch, python=python_version, cuda=cuda, gpu=gpu, isa=isa, platform=platform)
    found = listed(ListOptions(filters=filters, all_rows=all_rows, project=project), catalog)
    if format is opt.Format.json:
        typer.echo(json.dumps(listing.document(catalog, list(found.rows), project), indent=2))
    elif found.summarised and project != "pytorch":
        typer.echo(listing.companion_summary(list(found.rows), project), nl=False)
    elif format is opt.Format.markdown:
        typer.echo(
            listing.summary_markdown(catalog) if found.summarised else listing.markdown(list(found.rows)), nl=False
        )
        if all_rows and project == "pytorch":
            typer.echo(listing.left_out_lines(catalog, markdown=True), nl=False)
    elif not found.summarised:
        terminal.print_rows(list(found.rows))
        if all_rows and project == "pytorch":
            typer.echo(listing.left_out_lines(catalog), nl=False)
    else:
        terminal.print_summary(catalog)


catalog_app = typer.Typer(help="Build and check catalog.json from the build repository.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")


@catalog_app.command("sync")
@exits_on_error
def catalog_sync(
    repos: opt.SyncRepos,
    output: opt.SyncOutput = None,
    check: opt.SyncCheck = False,
    source_url: opt.SyncSourceUrl = None,
    force: opt.SyncForce = False,
) -> None:
    """Read every branch of REPO (and of each COMPANION) with git: one catalog row per PyTorch recipe, one per torchvision, torchaudio or vLLM recipe."""
    from pickvariant.commands.catalog import SyncOptions, synced

    done = synced(
        SyncOptions(repos=tuple(repos), output=output, check=check, source_urls=tuple(source_url or ()), force=force)
    )
    for line in done.summary:
        typer.echo(line, err=True)
    for text, to_stderr in done.delivered():
        typer.echo(text, err=to_stderr, nl=to_stderr)


@app.command()
@exits_on_error
def recipe(
    package: opt.RecipePackage = None,
    all_variants: opt.RecipeAllVariants = False,
    branch: opt.RecipeBranch = None,
    cuda: opt.RecipeCuda = None,
    output: opt.RecipeOutput = None,
    generate: opt.GenerateOpt = False,
    repo: opt.RepoOpt = None,
    force: opt.RecipeForce = False,
    with_: opt.RecipeWith = None,
) -> None:
    """The Flox/Nix recipe of a catalog variant: the build repository's own (checked against the catalog), or generated."""
    from pickvariant.commands.recipe import RecipeOptions, recipes
    from pickvariant.recipes.render import write_recipes

    options = RecipeOptions(
        package=package,
        all_variants=all_variants,
        branch=branch,
        cuda=cuda,
        output=output,
        generate=generate,
        repo=repo,
        with_projects=tuple(with_ or ()),
    )
    found = recipes(options, _catalog())
    for note in found.notes:
        typer.echo(note, err=True)
    if output is None:
        # A fetched recipe is the repository's text: on a terminal its escapes are shown, not obeyed.
        text = found.recipes[0][1]
        typer.echo(visible_lines(text) if sys.stdout.isatty() else text, nl=False)
        return
    written = write_recipes(output, list(found.recipes), force)
    changed = sum(1 for item in written if item.changed)
    for item in written if len(written) == 1 else ():
        typer.echo(f"{item.path} {'written' if item.changed else 'unchanged'}")
    if len(written) > 1:
        typer.echo(f"{len(written)} recipes in {output} ({changed} written, {len(written) - changed} unchanged)")


@app.command()
@exits_on_error
@declared(commandline.REQUEST)
def install(
    package: opt.InstallPackage = None,
    org: opt.InstallOrg = None,
    directory: opt.InstallDirectory = Path("."),
    build: opt.InstallBuild = False,
    build_dir: opt.InstallBuildDir = None,
    generate: opt.GenerateOpt = False,
    repo: opt.RepoOpt = None,
    yes: opt.InstallYes = False,
    dry_run: opt.InstallDryRun = False,
    no_verify: opt.InstallNoVerify = False,
    force: opt.InstallForce = False,
    timeout: opt.InstallTimeout = None,
    token_file: opt.InstallTokenFile = None,
    format: opt.InstallFormatOpt = opt.InstallFormat.text,
    **values: Any,
) -> None:
    """Detect, decide, explain, ask, then install (or build) the variant through Flox and verify it."""
    from pickvariant.commands import install as command
    from pickvariant.output.terminal import flox_progress

    options = command.InstallOptions(
        package=package,
        org=org,
        directory=directory,
        build=build,
        build_dir=build_dir,
        generate=generate,
        repo=repo,
        no_verify=no_verify,
        force=force,
        timeout_s=timeout,
        token_file=token_file,
        dry_run=dry_run,
    )
    if format is opt.InstallFormat.json and not dry_run:
        raise BadInput(
            "--format json prints the plan of a --dry-run: add --dry-run (an install shows its progress as text)"
        )
    prepared = command.prepare(_request(values), options, _catalog())
    if format is opt.InstallFormat.json:
        typer.echo(json.dumps(command.plan_json(prepared), indent=2))
        return
    typer.echo("\n".join(command.plan_lines(prepared)))
    if dry_run:
        typer.echo("Dry run: nothing was run.")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise BadInput(
                "no terminal to ask for confirmation: pass --yes to proceed (or --dry-run to only see the plan)"
            )
        if not typer.confirm("Proceed?", default=False):
            typer.echo("Nothing was done.")
            raise typer.Exit(0)
    with flox_progress(prepared.variant.package, lambda line: typer.echo(line, err=True)) as on_line:
        installed = command.carry_out(prepared, options, on_line)
    for problem in installed.log_problems:
        typer.echo(f"warning: {problem}", err=True)
    if installed.remember_error is not None:
        typer.echo(
            "warning: the install worked, but it could not be remembered for `pickvariant verify` "
            f"({installed.remember_error})",
            err=True,
        )
    typer.echo("\n".join(command.done_lines(prepared, installed)))
    verdict = command.verify_installed(prepared)
    if verdict is None:
        typer.echo("Verify: skipped (--no-verify)")
        return
    typer.echo(f"Verify: {'PASS' if verdict.passed else 'FAIL'} — {'; '.join(verdict.reasons[:3])}")
    if not verdict.passed:
        raise typer.Exit(1)


@app.command()
@exits_on_error
@declared()
def plan(
    inputs: opt.PlanInputs,
    org: opt.PlanOrg = None,
    max_variants: opt.PlanMaxVariants = None,
    workload: Any = commandline.WORKLOAD,
    python_version: Any = commandline.PYTHON,
    with_: Any = commandline.WITH,
    format: Any = commandline.FORMAT,
) -> None:
    """For a whole cluster: the fewest variants that serve every node, and which node gets which (solved exactly)."""
    from pickvariant.commands import plan as command
    from pickvariant.output.terminal import reading_progress
    from pickvariant.rules import plan as planner

    request = _request({"workload": workload, "python_version": python_version, "with_": with_})
    options = command.PlanOptions(inputs=tuple(inputs), org=org, max_variants=max_variants)
    planned = command.run(options, request, _catalog(), sys.stdin.buffer, reading_progress)
    if format is opt.Format.json:
        typer.echo(json.dumps(planner.plan_json(planned.result), indent=2))
    else:
        from pickvariant.output.cluster_plan import plan_lines

        typer.echo("\n".join(plan_lines(planned.result, planned.org, markdown=format is opt.Format.markdown)))


@app.command()
@exits_on_error
@declared()
def verify(
    python: opt.VerifyPython = None,
    quick: opt.VerifyQuick = False,
    package: opt.VerifyPackage = None,
    branch: opt.VerifyBranch = None,
    org: opt.VerifyOrg = None,
    with_: opt.VerifyWith = None,
    format: Any = commandline.FORMAT,
) -> None:
    """Run a matmul/conv probe in the installed PyTorch: kernels for every GPU, correct results, and how fast."""
    from pickvariant.commands import verify as command
    from pickvariant.output import verdict

    options = command.VerifyOptions(
        python=python, quick=quick, package=package, branch=branch, org=org, with_projects=tuple(with_ or ())
    )
    verified = command.run(options, _catalog())
    for line in verified.notes:
        typer.echo(f"note: {line}")
    if format is opt.Format.json:
        typer.echo(json.dumps(verdict.verify_json(verified.result), indent=2))
    else:
        typer.echo("\n".join(verdict.verify_lines(verified.result)))
    if not verified.result.passed:
        raise typer.Exit(1)


@app.command()
@exits_on_error
@declared(commandline.REQUEST)
def report(
    format: opt.ReportFormatOpt = opt.ReportFormat.markdown,
    python: opt.ReportPython = None,
    **values: Any,
) -> None:
    """One block for a support ticket: versions, hardware, the recommendation and the installed PyTorch.

    With --cpuinfo, --gpu, --driver or --driver-cuda (or their PICKVARIANT_* variables) it describes that
    machine instead: what is not stated is "not stated", never this machine's."""
    from pickvariant.commands.report import report as reported
    from pickvariant.output import report as reporter

    data = reported(_request(values), python, _catalog()).data
    typer.echo(
        json.dumps(data, indent=2) if format is opt.ReportFormat.json else reporter.markdown(data),
        nl=format is opt.ReportFormat.json,
    )


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
    """Pick, build and verify the right custom PyTorch variant for this machine."""


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
