"""The command line: thin declarations over the library. PickVariantError -> exit code happens here only."""

from __future__ import annotations

import functools
import json
import os
import shlex
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from pickvariant import __version__
from pickvariant.entry import OUTPUT_ERRNOS, detect_json, error_line, one_line, output_failed, prepare_streams
from pickvariant._base.errors import BadInput, NoVariant, OperationFailed, PickVariantError

if TYPE_CHECKING:
    from pickvariant.catalog.model import Catalog, Variant

app = typer.Typer(
    name="pickvariant",
    help="Pick, build and verify the right custom PyTorch variant for this machine.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class ReportFormat(str, Enum):
    markdown = "markdown"
    json = "json"


class Workload(str, Enum):
    general = "general"
    int8 = "int8"
    bf16 = "bf16"


def exits_on_error(command: F) -> F:
    """Turn pickvariant's one exception family into one line on stderr and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except PickVariantError as error:
            typer.echo(error_line(error), err=True)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("pickvariant: interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


CpuinfoOpt = Annotated[Optional[Path], typer.Option("--cpuinfo", help="Decide for the CPU of this /proc/cpuinfo dump instead of this machine's (env PICKVARIANT_CPUINFO).")]
GpuOpt = Annotated[Optional[list[str]], typer.Option("--gpu", help="Decide for a GPU of this compute capability (8.9, sm_89); repeat for several (env PICKVARIANT_GPU, comma-separated).")]
NoGpuOpt = Annotated[bool, typer.Option("--no-gpu", help="Decide for a machine without GPUs (CPU-only build).")]
DriverOpt = Annotated[Optional[str], typer.Option("--driver", help="NVIDIA driver version to decide for, e.g. 580.65.06 (env PICKVARIANT_DRIVER).")]
WorkloadOpt = Annotated[Workload, typer.Option("--workload", help="What the CPU side mostly runs: general (FP32), int8 (VNNI) or bf16.")]
TorchOpt = Annotated[Optional[str], typer.Option("--torch", help="Only consider branches with this PyTorch version (e.g. 2.9.1, 2.10).")]
CudaOpt = Annotated[Optional[str], typer.Option("--cuda", help="Only consider CUDA builds of this CUDA line (e.g. 12.9).")]
BranchOpt = Annotated[Optional[str], typer.Option("--branch", help="Only this branch of the build repository (needed for aligned branches such as pytorch-2.9-vllm-0.15.1).")]
PythonOpt = Annotated[Optional[str], typer.Option("--python-version", help="Only builds for this Python (3.11, 3.12, 3.13); default: the newest built (env PICKVARIANT_PYTHON).")]
GpuIndexOpt = Annotated[Optional[int], typer.Option("--gpu-index", help="Target only the GPU with this index (machines with mixed GPUs).")]
FormatOpt = Annotated[Format, typer.Option("--format", help="Output format.")]


def _no_variant(decision: Any) -> NoVariant:
    from pickvariant.api import no_variant_error

    return no_variant_error(decision)


def _python_pin(python_version: Optional[str]) -> Optional[str]:
    from pickvariant._base import settings

    return python_version if python_version is not None else settings.setting(os.environ, settings.PYTHON)


def _decide(cpuinfo: Optional[Path], gpu: Optional[list[str]], no_gpu: bool, driver: Optional[str], workload: Workload,
            torch: Optional[str], cuda: Optional[str], gpu_index: Optional[int],
            branch: Optional[str] = None, python_version: Optional[str] = None) -> tuple[Any, Any, Any]:
    from pickvariant.catalog.model import load_catalog
    from pickvariant.rules.decide import Options, decide
    from pickvariant.machine.facts import WhatIf, gather_facts

    catalog = load_catalog()
    facts = gather_facts(catalog, WhatIf(cpuinfo, tuple(gpu or ()), no_gpu, driver))
    decision = decide(facts, catalog, Options(workload.value, torch, cuda, gpu_index, branch, _python_pin(python_version)))
    return catalog, facts, decision


@app.command()
@exits_on_error
def detect(
    workload: WorkloadOpt = Workload.general, format: FormatOpt = Format.text,
    cpuinfo: CpuinfoOpt = None, gpu: GpuOpt = None, no_gpu: NoGpuOpt = False, driver: DriverOpt = None,
    torch: TorchOpt = None, cuda: CudaOpt = None, gpu_index: GpuIndexOpt = None,
    branch: BranchOpt = None, python_version: PythonOpt = None,
    compact: Annotated[bool, typer.Option("--compact", help="With --format json: the same object on one line (one node per line for `plan`).")] = False,
    label: Annotated[Optional[str], typer.Option("--label", help="With --format json: a top-level \"label\" naming this node (env PICKVARIANT_LABEL); nothing else names the host.")] = None,
) -> None:
    """Show this machine's facts and the variant that is safe and fastest for it, with reasons."""
    from pickvariant.output import present
    from pickvariant._base import settings

    label = label if label is not None else settings.setting(os.environ, settings.LABEL)
    if (compact or label is not None) and format is not Format.json:
        raise BadInput("--compact and --label shape the JSON output: add --format json")
    if format is Format.json:
        # The same function answers the fast path in entry.py, which never imports typer.
        text, choice = detect_json(workload.value, cpuinfo, gpu, no_gpu, driver, torch, cuda, gpu_index, branch, python_version, compact, label)
        typer.echo(text)
        if choice.variant is None:
            raise choice.no_variant_error()
        return
    catalog, facts, decision = _decide(cpuinfo, gpu, no_gpu, driver, workload, torch, cuda, gpu_index, branch, python_version)
    if format is Format.markdown:
        typer.echo(present.decision_markdown(facts, decision, catalog, workload.value), nl=False)
    else:
        present.print_decision_rich(facts, decision, catalog, workload.value)
    if decision.variant is None:
        raise _no_variant(decision)


@app.command("list")
@exits_on_error
def list_variants(
    branch: Annotated[Optional[str], typer.Option("--branch", help="Only this branch (e.g. pytorch-2.10-python313).")] = None,
    python_version: Annotated[Optional[str], typer.Option("--python-version", help="Only builds for this Python (e.g. 3.12).")] = None,
    cuda: Annotated[Optional[str], typer.Option("--cuda", help="Only this CUDA line (e.g. 12.9), or 'none' for CPU-only and MPS builds.")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="Only this GPU architecture (sm90, 9.0), 'mps', or 'cpu' for CPU-only builds.")] = None,
    isa: Annotated[Optional[str], typer.Option("--isa", help="Only this CPU instruction set (avx2, avx512, armv9, ...).")] = None,
    platform: Annotated[Optional[str], typer.Option("--platform", help="Only this Nix system (x86_64-linux, aarch64-linux, aarch64-darwin).")] = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Every row, even without a filter (the default text output is a summary).")] = False,
    format: FormatOpt = Format.text,
) -> None:
    """List the catalog's variants: a summary by branch, or rows with --all or any filter."""
    from pickvariant.output import listing
    from pickvariant.catalog.model import load_catalog

    catalog = load_catalog()
    filters = listing.Filters(branch, python_version, cuda, gpu, isa, platform)
    rows = listing.select(catalog, filters)
    if format is Format.json:
        typer.echo(json.dumps({"schema_version": 2, "source": listing.source_json(catalog), "variants": rows}, indent=2))
    elif format is Format.markdown:
        typer.echo(listing.markdown(rows), nl=False)
    elif all_rows or filters.any():
        listing.print_rich(rows)
    else:
        listing.print_summary(catalog)


catalog_app = typer.Typer(help="Build and check catalog.json from the build repository.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")


@catalog_app.command("sync")
@exits_on_error
def catalog_sync(
    repo: Annotated[str, typer.Argument(help="A clone of the build repository (path) or its URL; a fork's too.")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the catalog here (default: print it).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Write nothing; exit 1 when --output differs from what REPO gives.")] = False,
    source_url: Annotated[Optional[str], typer.Option("--source-url", help="The repository name to record in `source` (default: the URL, or the clone's origin).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --output that differs.")] = False,
) -> None:
    """Read every branch of REPO with git and derive one catalog row per PyTorch recipe."""
    from pickvariant.catalog import sync as syncer
    from pickvariant._base.files import check_writable, write_atomic

    if check and output is None:
        raise BadInput("--check compares against a file: give it with -o FILE")
    result = syncer.sync(repo, source_url)
    text = syncer.render(result.document)
    for line in syncer.summary(result):
        typer.echo(line, err=True)
    if check:
        assert output is not None
        found = syncer.check(output, result.document, text)
        if found:
            raise OperationFailed(f"{output} differs from {result.document['source']['repo']} at {result.document['source']['commit'][:12]}: {'; '.join(found)}")
        typer.echo(f"{output} matches {result.document['source']['repo']} at {result.document['source']['commit'][:12]}", err=True)
    elif output is None:
        typer.echo(text, nl=False)
    elif check_writable(output, text, force):
        write_atomic(output, text)
        typer.echo(f"{output} written ({result.variant_count} variants)", err=True)
    else:
        typer.echo(f"{output} unchanged ({result.variant_count} variants)", err=True)


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
    from pickvariant.catalog.model import load_catalog
    from pickvariant.recipes.render import render, write_recipes

    catalog = load_catalog()
    if all_variants == (package is not None):
        raise BadInput("give either a PACKAGE or --all")
    if all_variants:
        if repo is not None:
            raise BadInput("--all generates a branch's recipes from the templates; --repo fetches one PACKAGE")
        variants = _branch_variants(catalog, branch, cuda, output)
        recipes = [(variant, render(variant, catalog)) for variant in variants]
    elif generate:
        variant = catalog.variant(package or "", branch)
        recipes = [(variant, render(variant, catalog))]
    else:
        from pickvariant.recipes.fetch import fetch_checked
        from pickvariant.install.flow import cache_dir

        variant = catalog.variant(package or "", branch)
        fetched = fetch_checked(variant, catalog, repo, cache_dir(), os.environ)
        typer.echo(f"{variant.package}: {variant.path} of {fetched.branch} at {fetched.commit[:12]} from {fetched.repo}"
                   f"{' (cached)' if fetched.from_cache else ''}; checked against the catalog", err=True)
        for note in fetched.notes:
            typer.echo(f"note: {note}", err=True)
        recipes = [(variant, fetched.text)]
    if output is None:
        typer.echo(recipes[0][1], nl=False)
        return
    written = write_recipes(output, recipes, force)
    changed = sum(1 for item in written if item.changed)
    for item in written if len(written) == 1 else ():
        typer.echo(f"{item.path} {'written' if item.changed else 'unchanged'}")
    if len(written) > 1:
        typer.echo(f"{len(written)} recipes in {output} ({changed} written, {len(written) - changed} unchanged)")


def _branch_variants(catalog: Catalog, branch: str | None, cuda: str | None, output: Path | None) -> list[Variant]:
    if output is None:
        raise BadInput("--all writes one file per variant: give the directory with -o DIR")
    if branch is None:
        raise BadInput(f"--all renders one branch: name it with --branch ({', '.join(b.name for b in catalog.branches)})")
    variants = [v for v in catalog.branch(branch).variants if cuda is None or v.cuda == cuda]
    if not variants:
        raise BadInput(f"branch {branch} has no CUDA {cuda} line")
    for variant in (v for v in variants if v.is_mps):
        typer.echo(f"skipped {variant.package}: an MPS build has no template; fetch it with `pickvariant recipe {variant.package} --branch {variant.branch}`", err=True)
    return [v for v in variants if not v.is_mps]


@app.command()
@exits_on_error
def install(
    workload: WorkloadOpt = Workload.general,
    cpuinfo: CpuinfoOpt = None, gpu: GpuOpt = None, no_gpu: NoGpuOpt = False, driver: DriverOpt = None,
    torch: TorchOpt = None, cuda: CudaOpt = None, gpu_index: GpuIndexOpt = None,
    branch: BranchOpt = None, python_version: PythonOpt = None,
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
) -> None:
    """Detect, decide, explain, ask, then install (or build) the variant through Flox and verify it."""
    from pickvariant.install import flow as installer

    if timeout is not None and not timeout > 0:
        raise BadInput(f"--timeout {timeout:g}: give a number of seconds above 0")
    catalog, facts, decision = _decide(cpuinfo, gpu, no_gpu, driver, workload, torch, cuda, gpu_index, branch, python_version)
    if package is not None:
        variant = catalog.variant(package, branch)
        problems = installer.fit_problems(variant, facts, catalog)
        if problems and not force:
            raise BadInput(f"{package} does not fit this machine ({'; '.join(problems)}): pass --force to install it anyway")
    elif decision.variant is None:
        raise _no_variant(decision)
    else:
        variant = decision.variant
    plan = installer.plan_install(variant, catalog, org, build, directory.resolve(), build_dir.resolve() if build_dir else None, force,
                                  generate=generate, repo=repo)
    from pickvariant.verify import judge as verifier

    python = installer.interpreter_for(plan)
    probe = None if no_verify else verifier.probe_argv(python, quick=True)
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
    with _progress(variant.package) as on_line:
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
    result = verifier.verify(python, catalog, variant, quick=True)
    typer.echo(f"Verify: {'PASS' if result.passed else 'FAIL'} — {'; '.join(result.reasons[:3])}")
    if not result.passed:
        raise typer.Exit(1)


@app.command()
@exits_on_error
def plan(
    inputs: Annotated[list[str], typer.Argument(help="JSONL files of `detect --format json --compact` lines, directories of JSON files, or - for stdin.")],
    org: Annotated[Optional[str], typer.Option("--org", help="The Flox organisation the builds are published to (used in the printed commands; env PICKVARIANT_FLOX_ORG).")] = None,
    max_variants: Annotated[Optional[int], typer.Option("--max-variants", help="Use at most this many variants: the best assignment within them, naming who gets less or nothing.")] = None,
    workload: WorkloadOpt = Workload.general,
    python_version: PythonOpt = None,
    format: FormatOpt = Format.text,
) -> None:
    """For a whole cluster: the fewest variants that serve every node, and which node gets which (solved exactly)."""
    from pickvariant.rules import plan as planner
    from pickvariant._base import settings
    from pickvariant.catalog.model import load_catalog
    from pickvariant.rules.decide import Options

    catalog = load_catalog()
    with _reading_progress(planner.input_size(inputs, sys.stdin.buffer)) as on_progress:
        read = planner.read_inputs(inputs, sys.stdin.buffer, on_progress)
    options = Options(workload.value, python=_python_pin(python_version))
    result = planner.make_plan(read, catalog, options, max_variants)
    org = org if org is not None else settings.setting(os.environ, settings.FLOX_ORG)
    if format is Format.json:
        typer.echo(json.dumps(planner.plan_json(result), indent=2))
    else:
        typer.echo("\n".join(planner.plan_lines(result, org, markdown=format is Format.markdown)))


def _reading_progress(total_bytes: int | None) -> Any:
    """A progress bar on stderr once reading has taken more than a second, on a terminal only.

    Its measure is bytes (known beforehand for files; a pulsing bar for a pipe), its text the nodes read."""
    import contextlib
    import time

    @contextlib.contextmanager
    def bar() -> Any:
        start = time.monotonic()
        shown: list[Any] = []

        def update(nodes: int, consumed: int) -> None:
            if not shown:
                if time.monotonic() - start < 1.0:
                    return
                from rich.console import Console
                from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

                progress = Progress(TextColumn("reading nodes"), BarColumn(), TextColumn("{task.fields[nodes]:,} nodes"),
                                    TimeRemainingColumn(), console=Console(stderr=True), transient=True)
                progress.start()
                shown.append((progress, progress.add_task("read", total=total_bytes, nodes=0)))
            progress, task = shown[0]
            progress.update(task, completed=consumed, nodes=nodes)

        try:
            yield update
        finally:
            if shown:
                shown[0][0].stop()

    @contextlib.contextmanager
    def silent() -> Any:
        yield lambda nodes, consumed: None

    return bar() if sys.stderr.isatty() else silent()


def _default_python() -> list[str]:
    from pickvariant.install.flow import last_install_python

    return last_install_python() or [sys.executable]


@app.command()
@exits_on_error
def verify(
    python: Annotated[Optional[str], typer.Option("--python", help="The interpreter to probe (default: the last install's, else this one).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small sizes: under 20 s on a 2-core CPU machine.")] = False,
    package: Annotated[Optional[str], typer.Option("--package", help="The variant the interpreter should hold (checks its CPU dispatch level).")] = None,
    branch: Annotated[Optional[str], typer.Option("--branch", help="The branch of --package, where several build it.")] = None,
    org: Annotated[Optional[str], typer.Option("--org", help="With --package: probe the variant this Flox organisation published, in a throwaway environment (needs a FloxHub login).")] = None,
    format: FormatOpt = Format.text,
) -> None:
    """Run a matmul/conv probe in the installed PyTorch: kernels for every GPU, correct results, and how fast."""
    from pickvariant.verify import judge as verifier
    from pickvariant.catalog.model import load_catalog

    catalog = load_catalog()
    variant = catalog.variant(package, branch) if package else None
    if org is not None:
        from pickvariant.install import flow as installer

        if variant is None or python is not None:
            raise BadInput("--org probes a published --package; it takes no --python")
        with installer.published_interpreter(variant, catalog, org) as throwaway:
            for line in throwaway.notes:
                typer.echo(f"note: {line}")
            result = verifier.verify(throwaway.python, catalog, variant, quick)
    else:
        result = verifier.verify([python] if python else _default_python(), catalog, variant, quick)
    if format is Format.json:
        typer.echo(json.dumps({"schema_version": 1, "passed": result.passed, "reasons": list(result.reasons),
                               "probe": result.probe, "checks": list(result.findings), "speed": list(result.speed),
                               "gpu_health": list(result.health)}, indent=2))
    else:
        typer.echo(f"verify: {'PASS' if result.passed else 'FAIL'}")
        for reason in result.reasons:
            typer.echo(f"- {reason}")
        for check in result.findings:
            typer.echo(f"- {verifier.finding_text(check)}")
        for line in result.speed:
            typer.echo(f"speed: {line}")
    if not result.passed:
        raise typer.Exit(1)


@app.command()
@exits_on_error
def report(
    format: Annotated[ReportFormat, typer.Option("--format", help="markdown (default) or json.")] = ReportFormat.markdown,
    python: Annotated[Optional[str], typer.Option("--python", help="The interpreter whose PyTorch to report.")] = None,
    workload: WorkloadOpt = Workload.general,
) -> None:
    """One block for a support ticket: versions, hardware, the recommendation and the installed PyTorch."""
    from pickvariant.output import report as reporter

    catalog, facts, decision = _decide(None, None, False, None, workload, None, None, None)
    data = reporter.build(catalog, facts, decision, workload.value, [python] if python else _default_python())
    typer.echo(json.dumps(data, indent=2) if format is ReportFormat.json else reporter.markdown(data), nl=format is ReportFormat.json)


def _progress(label: str) -> Any:
    """A spinner with elapsed time and the last log line on a terminal; step lines otherwise."""
    import contextlib
    import time

    @contextlib.contextmanager
    def plain() -> Any:
        yield lambda line: typer.echo(line, err=True) if line.startswith("» ") else None

    @contextlib.contextmanager
    def spinner() -> Any:
        from rich.console import Console
        from rich.markup import escape

        start = time.monotonic()
        with Console(stderr=True).status(f"{label}: starting") as status:
            def update(line: str) -> None:
                elapsed = int(time.monotonic() - start)
                status.update(f"{label} [{elapsed // 60:02d}:{elapsed % 60:02d}] {escape(line[-100:])}")
            yield update

    return spinner() if sys.stderr.isatty() else plain()


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"pickvariant {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Pick, build and verify the right custom PyTorch variant for this machine."""


def _usage_line(error: Any) -> str:
    """click's usage error as one line, with where to read more (click's own form spans three lines)."""
    message = one_line(error.format_message())
    ctx = getattr(error, "ctx", None)
    return f"pickvariant: {message} (see '{ctx.command_path} --help')" if ctx is not None else f"pickvariant: {message}"


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: click's usage errors become one line on stderr and exit 2."""
    # click's UsageError from wherever this typer takes click: newer typer (0.27, 0.29) carries its own copy,
    # and `import click` would name a class it never raises.
    usage_error = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "UsageError")
    if not prepare_streams():
        return 1
    try:
        result = app(args=argv, prog_name="pickvariant", standalone_mode=False)
        sys.stdout.flush()
    except usage_error as error:
        if type(error).__name__ == "NoArgsIsHelpError":
            # `pickvariant` alone: the help itself, as click shows it, not squeezed into one line.
            error.show()
            return error.exit_code
        print(_usage_line(error), file=sys.stderr)
        return 2
    except typer.Abort:
        print("pickvariant: aborted", file=sys.stderr)
        return 130
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            raise
        return output_failed(error)
    return result if isinstance(result, int) else 0
