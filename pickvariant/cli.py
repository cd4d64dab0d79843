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
import shlex
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from pickvariant import __version__, api, commandline, console
from pickvariant._base.errors import BadInput, PickVariantError
from pickvariant._base.request import WORKLOADS, Request, projects_from
from pickvariant._base.text import visible_lines

if TYPE_CHECKING:
    from pickvariant.catalog.model import Catalog
    from pickvariant.machine.facts import HostFacts
    from pickvariant.rules.decision import Decision

app = typer.Typer(
    name="pickvariant",
    help="Pick, build and verify the right custom PyTorch variant for this machine.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])

Format = Enum("Format", {name: name for name in commandline.OUTPUT_FORMATS}, type=str)  # type: ignore[misc]
Workload = Enum("Workload", {name: name for name in WORKLOADS}, type=str)  # type: ignore[misc]
_CHOICES: dict[tuple[str, ...], type[Enum]] = {commandline.OUTPUT_FORMATS: Format, WORKLOADS: Workload}
_KINDS: dict[str, object] = {"text": Optional[str], "path": Optional[Path], "int": Optional[int], "texts": Optional[list[str]], "flag": bool}


class ReportFormat(str, Enum):
    markdown = "markdown"
    json = "json"


def _typer_parameter(name: str, option: commandline.Option) -> inspect.Parameter:
    choice = _CHOICES.get(option.choices)
    annotation = choice if choice is not None else _KINDS[option.kind]
    default = choice(option.default) if choice is not None else option.default
    declared = typer.Option(option.flag, help=option.help, metavar=option.metavar) if option.metavar else typer.Option(option.flag, help=option.help)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, declared])


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
        command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return command

    return decorate


def exits_on_error(command: F) -> F:
    """End the command as console.exit_for says: one line on stderr and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (PickVariantError, KeyboardInterrupt) as error:
            line, code = console.exit_for(error)  # type: ignore[misc]  # both kinds have an exit
            typer.echo(line, err=True)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


def _request(values: Mapping[str, Any]) -> Request:
    return commandline.request_from({name: value.value if isinstance(value, Enum) else value for name, value in values.items()})


def _decided(request: Request) -> tuple[Catalog, HostFacts, Decision]:
    choice = api.recommend_request(request, catalog=_catalog())
    return choice.catalog, choice.facts, choice.decision


def _catalog() -> Catalog:
    from pickvariant.catalog.load import load_catalog

    return load_catalog()


@app.command()
@exits_on_error
@declared(commandline.DETECT)
def detect(**values: Any) -> None:
    """Show this machine's facts and the variant that is safe and fastest for it, with reasons."""
    from pickvariant._base import settings
    from pickvariant.output import present, terminal

    output, compact = values["format"], values["compact"]
    if compact and output is Format.markdown:
        raise BadInput("--compact prints the JSON object on one line: it cannot be --format markdown")
    if compact:
        output = Format.json  # --compact exists to feed plan: it implies JSON
    if values["label"] is not None and output is not Format.json:
        raise BadInput("--label names the node in the JSON output: add --format json (or --compact)")
    label = values["label"] if values["label"] is not None else settings.setting(os.environ, settings.LABEL)
    request = _request(values)
    if output is Format.json:
        # The same function answers the typer-free path in entry.py.
        text, choice = console.detect_json(request, compact, label)
        typer.echo(text)
        if choice.variant is None:
            raise choice.no_variant_error()
        return
    catalog, facts, decision = _decided(request)
    if output is Format.markdown:
        typer.echo(present.decision_markdown(facts, decision, catalog, request.workload), nl=False)
    else:
        terminal.print_decision(facts, decision, catalog, request.workload)
    if decision.variant is None:
        raise api.no_variant_error(decision)


@app.command("list")
@exits_on_error
@declared()
def list_variants(
    branch: Annotated[Optional[str], typer.Option("--branch", help="Only this branch (e.g. pytorch-2.10-python313).")] = None,
    python_version: Annotated[Optional[str], typer.Option("--python-version", help="Only builds for this Python (e.g. 3.12).")] = None,
    cuda: Annotated[Optional[str], typer.Option("--cuda", help="Only this CUDA line (e.g. 12.9), or 'none' for CPU-only and MPS builds.")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="Only this GPU architecture (sm90, 9.0), 'mps', or 'cpu' for CPU-only builds.")] = None,
    isa: Annotated[Optional[str], typer.Option("--isa", help="Only this CPU instruction set (avx2, avx512, armv9, ...).")] = None,
    platform: Annotated[Optional[str], typer.Option("--platform", help="Only this Nix system (x86_64-linux, aarch64-linux, aarch64-darwin).")] = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Every row, even without a filter (the default text output is a summary).")] = False,
    project: Annotated[str, typer.Option("--project", help="pytorch (the variants), or a companion: torchvision, torchaudio, vllm.", metavar="NAME")] = "pytorch",
    format: Any = commandline.FORMAT,
) -> None:
    """List the catalog's variants: a summary by branch, or rows with --all or any filter (--project lists a companion's recipes)."""
    from pickvariant.output import listing, terminal

    catalog = _catalog()
    filters = listing.Filters(branch, python_version, cuda, gpu, isa, platform)
    if project != "pytorch":
        from pickvariant.catalog.companions import PROJECTS
        from pickvariant.catalog.stack import load_stack

        if project not in PROJECTS:
            raise BadInput(f"--project {project!r:.40}: choose pytorch, {', '.join(PROJECTS)}")
        rows = listing.select_companions(catalog, load_stack(catalog).companions, project, filters)
        all_rows = True
    else:
        rows = listing.select(catalog, filters)
    if format is Format.json:
        typer.echo(json.dumps(listing.document(catalog, rows, project), indent=2))
    elif format is Format.markdown:
        typer.echo(listing.markdown(rows), nl=False)
    elif all_rows or filters.any():
        terminal.print_rows(rows)
    else:
        terminal.print_summary(catalog)


catalog_app = typer.Typer(help="Build and check catalog.json from the build repository.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")


@catalog_app.command("sync")
@exits_on_error
def catalog_sync(
    repos: Annotated[list[str], typer.Argument(help="A clone of the build repository (path) or its URL, a fork's too; then any companion repositories (build-torchvision, build-torchaudio, build-vllm).", metavar="REPO [COMPANION]...")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the catalog here (default: print it).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 when --output differs from what REPO gives.")] = False,
    source_url: Annotated[Optional[list[str]], typer.Option("--source-url", help="The repository name to record for each REPO in turn (default: the URL, or the clone's origin); repeat it for companions.", metavar="URL")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --output that differs.")] = False,
) -> None:
    """Read every branch of REPO (and of each COMPANION) with git: one catalog row per PyTorch recipe, one per torchvision, torchaudio or vLLM recipe."""
    from pickvariant.catalog import sync as syncer

    if check and output is None:
        raise BadInput("--check compares against a file: give it with -o FILE")
    recorded = list(source_url or ())
    if len(recorded) > len(repos):
        raise BadInput(f"--source-url is given {len(recorded)} times for {len(repos)} repositories: give it at most once per REPO, in their order")
    result = syncer.sync(repos[0], recorded[0] if recorded else None, companion_repos=repos[1:], companion_urls=recorded[1:])
    for line in syncer.summary(result):
        typer.echo(line, err=True)
    for text, to_stderr in syncer.deliver(result, output, check, force):
        typer.echo(text, err=to_stderr, nl=to_stderr)


GenerateOpt = Annotated[bool, typer.Option("--generate", help="Render the recipe from pickvariant's templates instead of fetching the build repository's.")]
RepoOpt = Annotated[Optional[str], typer.Option("--repo", help="The recipe repository: URL or path of the build repository, a fork, mirror or clone (env PICKVARIANT_RECIPES_REPO; default: the catalog's source).")]


@app.command()
@exits_on_error
def recipe(
    package: Annotated[Optional[str], typer.Argument(help="The package, e.g. pytorch-python313-cuda13_0-sm90-avx512.")] = None,
    all_variants: Annotated[bool, typer.Option("--all", help="Generate every variant of a branch (needs -o and --branch).")] = False,
    branch: Annotated[Optional[str], typer.Option("--branch", help="The branch: for --all, whose variants; with PACKAGE, the branch it is on (needed when several build it).")] = None,
    cuda: Annotated[Optional[str], typer.Option("--cuda", help="With --all: only this CUDA line of the branch.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write DIR/PACKAGE.nix instead of printing (usable as a Flox .flox/pkgs/).")] = None,
    generate: GenerateOpt = False,
    repo: RepoOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing recipe files that differ.")] = False,
) -> None:
    """The Flox/Nix recipe of a catalog variant: the build repository's own (checked against the catalog), or generated."""
    from pickvariant.recipes.render import branch_variants, render, write_recipes

    catalog = _catalog()
    if all_variants == (package is not None):
        raise BadInput("give either a PACKAGE or --all")
    if cuda is not None and not all_variants:
        raise BadInput("--cuda chooses a CUDA line of the branch for --all; a PACKAGE names its own")
    if all_variants:
        if repo is not None:
            raise BadInput("--all generates a branch's recipes from the templates; --repo fetches one PACKAGE")
        variants, skipped = branch_variants(catalog, branch, cuda, output)
        for line in skipped:
            typer.echo(line, err=True)
        recipes = [(variant, render(variant, catalog)) for variant in variants]
    elif generate:
        variant = catalog.variant(package or "", branch)
        recipes = [(variant, render(variant, catalog))]
    else:
        from pickvariant._base.files import cache_dir
        from pickvariant.recipes.fetch import fetch_checked

        variant = catalog.variant(package or "", branch)
        fetched = fetch_checked(variant, catalog, repo, cache_dir(), os.environ)
        typer.echo(f"{variant.package}: {variant.path} of {fetched.branch} at {fetched.commit[:12]} from {fetched.repo}"
                   f"{' (cached)' if fetched.from_cache else ''}; checked against the catalog", err=True)
        for note in fetched.notes:
            typer.echo(f"note: {note}", err=True)
        recipes = [(variant, fetched.text)]
    if output is None:
        # A fetched recipe is the repository's text: on a terminal its escapes are shown, not obeyed.
        typer.echo(visible_lines(recipes[0][1]) if sys.stdout.isatty() else recipes[0][1], nl=False)
        return
    written = write_recipes(output, recipes, force)
    changed = sum(1 for item in written if item.changed)
    for item in written if len(written) == 1 else ():
        typer.echo(f"{item.path} {'written' if item.changed else 'unchanged'}")
    if len(written) > 1:
        typer.echo(f"{len(written)} recipes in {output} ({changed} written, {len(written) - changed} unchanged)")


@app.command()
@exits_on_error
@declared(commandline.REQUEST)
def install(
    package: Annotated[Optional[str], typer.Option("--package", help="Install this catalog package instead of the recommendation (with --branch where several branches build it).")] = None,
    org: Annotated[Optional[str], typer.Option("--org", help="Install the package published in this Flox organisation's catalog (env PICKVARIANT_FLOX_ORG).")] = None,
    directory: Annotated[Path, typer.Option("--dir", help="The Flox environment to install into, published or built (created if missing).")] = Path("."),
    build: Annotated[bool, typer.Option("--build", help="Build from the recipe even when --org is given.")] = False,
    build_dir: Annotated[Optional[Path], typer.Option("--build-dir", help="Where to build (default: under the user's cache directory).")] = None,
    generate: GenerateOpt = False,
    repo: RepoOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and run nothing.")] = False,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Skip `pickvariant verify` after installing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Install a --package that does not fit this machine; overwrite a different recipe file.")] = False,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop a flox command that runs longer than this many seconds.")] = None,
    **values: Any,
) -> None:
    """Detect, decide, explain, ask, then install (or build) the variant through Flox and verify it."""
    from pickvariant.install import flow as installer
    from pickvariant.output.terminal import flox_progress
    from pickvariant.verify import judge as verifier

    if timeout is not None and not timeout > 0:
        raise BadInput(f"--timeout {timeout:g}: give a number of seconds above 0")
    request = _request(values)
    catalog, facts, decision = _decided(request)
    from pickvariant.machine.cpu import host_platform

    here = host_platform()
    if (facts.os, facts.arch) != here:
        # Flox installs into this machine's environment: a build for another CPU architecture or OS would not run here.
        raise BadInput(f"the stated CPU ({facts.sources.get('cpu', '--cpuinfo')}) is {facts.os}/{facts.arch}, this machine {here[0]}/{here[1]}: "
                       "install works on the machine it runs on; `pickvariant detect` and `recipe` serve other machines")
    if package is not None:
        if decision.companions or request.with_projects:
            raise BadInput("--with chooses the companions together with the torch: it cannot be combined with --package")
        variant = catalog.variant(package, request.branch)
        problems = installer.fit_problems(variant, facts, catalog)
        if problems and not force:
            raise BadInput(f"{package} does not fit this machine ({'; '.join(problems)}): pass --force to install it anyway")
    elif decision.variant is None:
        raise api.no_variant_error(decision)
    else:
        variant = decision.variant
    plan = installer.plan_install(variant, catalog, org, build, directory.resolve(), build_dir.resolve() if build_dir else None, force,
                                  generate=generate, repo=repo, companions=decision.companions if package is None else ())
    python = installer.interpreter_for(plan)
    projects = tuple(companion.project for companion in plan.companions)
    probe = None if no_verify else verifier.probe_argv(python, quick=True, companions=projects)
    typer.echo(f"Variant: {variant.package} (branch {variant.branch}, PyTorch {variant.torch}, Python {variant.python})")
    for reason in decision.reasons if package is None else (f"chosen with --package{' (forced)' if force else ''}",):
        typer.echo(f"  why: {reason}")
    for line in installer.describe(plan, probe) + [f"warning: {w}" for w in plan.warnings] + [f"note: {n}" for n in plan.notes]:
        typer.echo(f"  {line}")
    if dry_run:
        typer.echo("Dry run: nothing was run.")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise BadInput("no terminal to ask for confirmation: pass --yes to proceed (or --dry-run to only see the plan)")
        if not typer.confirm("Proceed?", default=False):
            typer.echo("Nothing was done.")
            raise typer.Exit(0)
    log = installer.start_log(plan)
    with flox_progress(variant.package, lambda line: typer.echo(line, err=True)) as on_line:
        installer.execute(plan, force, log, on_line, timeout)
    try:
        installer.save_last_install(plan, python)
    except PickVariantError as error:
        typer.echo(f"warning: the install worked, but it could not be remembered for `pickvariant verify` ({error})", err=True)
    built = f"built {plan.result}, " if plan.result else ""
    typer.echo(f"Done: {variant.package} ({built}installed in the Flox environment {plan.directory}); log: {log}")
    typer.echo(f"Use it: flox activate -d {shlex.quote(str(plan.directory))} -- python3")
    if probe is None:
        typer.echo("Verify: skipped (--no-verify)")
        return
    result = verifier.verify(python, catalog, variant, quick=True, companions=projects)
    typer.echo(f"Verify: {'PASS' if result.passed else 'FAIL'} — {'; '.join(result.reasons[:3])}")
    if not result.passed:
        raise typer.Exit(1)


@app.command()
@exits_on_error
@declared()
def plan(
    inputs: Annotated[list[str], typer.Argument(help="JSONL files of `detect --format json --compact` lines, directories of JSON files, or - for stdin.")],
    org: Annotated[Optional[str], typer.Option("--org", help="The Flox organisation the builds are published to (used in the printed commands; env PICKVARIANT_FLOX_ORG).")] = None,
    max_variants: Annotated[Optional[int], typer.Option("--max-variants", help="Use at most this many variants: the best assignment within them, naming who gets less or nothing.")] = None,
    workload: Any = commandline.WORKLOAD,
    python_version: Any = commandline.PYTHON,
    with_: Any = commandline.WITH,
    format: Any = commandline.FORMAT,
) -> None:
    """For a whole cluster: the fewest variants that serve every node, and which node gets which (solved exactly)."""
    from pickvariant._base import settings
    from pickvariant.output.terminal import reading_progress
    from pickvariant.rules import cluster_input
    from pickvariant.rules import plan as planner

    given_as = "--org"
    if org is None and (org := settings.setting(os.environ, settings.FLOX_ORG)) is not None:
        given_as = settings.FLOX_ORG
    if org is not None:
        from pickvariant.install.flow import check_org

        check_org(org, given_as)  # printed into commands people paste
    catalog = _catalog()
    with reading_progress(cluster_input.input_size(inputs, sys.stdin.buffer)) as on_progress:
        read = cluster_input.read_inputs(inputs, sys.stdin.buffer, on_progress)
    request = _request({"workload": workload, "python_version": python_version, "with_": with_}).with_environment(os.environ)
    result = planner.make_plan(read, catalog, request, max_variants)
    if format is Format.json:
        typer.echo(json.dumps(planner.plan_json(result), indent=2))
    else:
        typer.echo("\n".join(planner.plan_lines(result, org, markdown=format is Format.markdown)))


def _default_python() -> list[str]:
    from pickvariant.install.state import last_install_python

    return last_install_python() or [sys.executable]


@app.command()
@exits_on_error
@declared()
def verify(
    python: Annotated[Optional[str], typer.Option("--python", help="The interpreter to probe (default: the last install's, else this one).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small sizes: seconds on a CPU machine (about 4 s on 2 cores).")] = False,
    package: Annotated[Optional[str], typer.Option("--package", help="The variant the interpreter should hold (checks its CPU dispatch level).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="The branch of --package, where several build it.")] = None,
    org: Annotated[Optional[str], typer.Option("--org", help="With --package: probe the variant this Flox organisation published, in a throwaway environment (needs a FloxHub login).")] = None,
    with_: Annotated[Optional[list[str]], typer.Option("--with", help="Also import these companions, run one operation of each on every GPU and check one libtorch is loaded (env PICKVARIANT_WITH).", metavar="PROJECT")] = None,
    format: Any = commandline.FORMAT,
) -> None:
    """Run a matmul/conv probe in the installed PyTorch: kernels for every GPU, correct results, and how fast."""
    from pickvariant.install.state import last_install_projects
    from pickvariant.output import verdict
    from pickvariant.verify import judge as verifier

    if branch is not None and package is None:
        raise BadInput("--branch names the branch of --package: give the package too")
    catalog = _catalog()
    variant = catalog.variant(package, branch) if package else None
    companions = (Request(with_projects=projects_from(with_, "--with")) if with_ else Request()).with_environment(os.environ).with_projects
    companions = companions or (last_install_projects() if python is None and org is None else ())  # the last install's, as its Python
    if org is not None:
        from pickvariant.install import flow as installer

        if variant is None:
            raise BadInput("--org probes a published variant: name it with --package")
        if python is not None:
            raise BadInput("--org probes the published --package in a throwaway environment; it takes no --python")
        with installer.published_interpreter(variant, catalog, org) as throwaway:
            for line in throwaway.notes:
                typer.echo(f"note: {line}")
            result = verifier.verify(throwaway.python, catalog, variant, quick, companions=companions)
    else:
        result = verifier.verify([python] if python else _default_python(), catalog, variant, quick, companions=companions)
    if format is Format.json:
        typer.echo(json.dumps(verdict.verify_json(result), indent=2))
    else:
        typer.echo("\n".join(verdict.verify_lines(result)))
    if not result.passed:
        raise typer.Exit(1)


@app.command()
@exits_on_error
@declared(commandline.REQUEST)
def report(
    format: Annotated[ReportFormat, typer.Option("--format", help="markdown (default) or json.")] = ReportFormat.markdown,
    python: Annotated[Optional[str], typer.Option("--python", help="The interpreter whose PyTorch to report.")] = None,
    **values: Any,
) -> None:
    """One block for a support ticket: versions, hardware, the recommendation and the installed PyTorch.

    With --cpuinfo, --gpu, --driver or --driver-cuda (or their PICKVARIANT_* variables) it describes that
    machine instead: what is not stated is "not stated", never this machine's."""
    from pickvariant.machine.facts import states_a_machine
    from pickvariant.output import report as reporter

    request = _request(values)
    described = states_a_machine(request, os.environ)
    choice = api.recommend_request(request, catalog=_catalog(), detect_unstated=not described)
    pythons = [python] if python else ([] if described else _default_python())
    data = reporter.build(choice.catalog, choice.facts, choice.decision, request.workload, pythons, described=described)
    typer.echo(json.dumps(data, indent=2) if format is ReportFormat.json else reporter.markdown(data), nl=format is ReportFormat.json)


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"pickvariant {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Pick, build and verify the right custom PyTorch variant for this machine."""


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: click's usage errors become one line on stderr and exit 2."""
    # click's UsageError from wherever this typer takes click: newer typer (0.27, 0.29) carries its own copy,
    # and `import click` would name a class it never raises.
    usage_error = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "UsageError")
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
