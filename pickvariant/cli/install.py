"""`pickvariant install`: decide, show the steps, ask, install or build, verify; its options."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog, request_of
from pickvariant.cli.typer_options import GenerateOpt, RepoOpt, checked_paths
from pickvariant.sources import registry

if TYPE_CHECKING:
    from pickvariant._base.request import Request
    from pickvariant.api import WheelAsk
    from pickvariant.commands.install import Installation, InstallOptions
    from pickvariant.commands.plan_install import WheelAssignment


class InstallFormat(StrEnum):
    text = "text"
    json = "json"


InstallPackage = Annotated[
    str | None,
    typer.Option(
        "--package",
        metavar="PACKAGE",
        help="Install this catalog package instead of the recommendation (with --branch where several branches build it).",
    ),
]


InstallDirectory = Annotated[
    Path,
    typer.Option(
        "--dir",
        "-d",
        metavar="DIR",
        callback=checked_paths,
        help="The Flox environment to install into, published or built (created if missing).",
    ),
]

InstallTokenFile = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        metavar="PATH",
        callback=checked_paths,
        help="Log in to FloxHub first without a prompt (`flox auth login --token-file PATH`, Flox 1.14.0+): for "
        "clusters and CI. pickvariant passes the path on and never reads the token.",
    ),
]

InstallBuild = Annotated[bool, typer.Option("--build", help="Build from the recipe even when --org is given.")]

InstallBuildDir = Annotated[
    Path | None,
    typer.Option(
        "--build-dir",
        metavar="DIR",
        callback=checked_paths,
        help="Where to build (default: under the user's cache directory).",
    ),
]

InstallYes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]

InstallDryRun = Annotated[bool, typer.Option("--dry-run", help="Print the plan and run nothing.")]

InstallNoVerify = Annotated[bool, typer.Option("--no-verify", help="Skip `pickvariant verify` after installing.")]

InstallForce = Annotated[
    bool,
    typer.Option(
        "--force", help="Install a --package that does not fit this machine; overwrite a different recipe file."
    ),
]

InstallUpgrade = Annotated[
    bool,
    typer.Option(
        "--upgrade",
        help="With --source wheels: replace a torch that already runs on every GPU here with the chosen build "
        "(without it, such a torch is kept and nothing is installed; --yes does not consent to replacing it).",
    ),
]
InstallAllowDowngrade = Annotated[
    bool,
    typer.Option(
        "--allow-downgrade",
        help="With --source wheels: install the chosen torch even where the torch there is a newer release "
        "(--yes consents to replacing a torch, never to a downgrade).",
    ),
]

InstallTimeout = Annotated[
    float | None,
    typer.Option("--timeout", metavar="SECONDS", help="Stop a flox command that runs longer than this many seconds."),
]


InstallFormatOpt = Annotated[
    InstallFormat,
    typer.Option(
        "--format",
        help="text, or json: the plan of a --dry-run as data; of a real install, one line saying what was installed "
        "and verify's verdict.",
    ),
]

InstallFromPlan = Annotated[
    str | None,
    typer.Option(
        "--plan",
        metavar="PLAN.json",
        help="Install exactly what this cluster plan (`plan --format json`) gives this node, after checking the node "
        "is the hardware it was planned for.",
    ),
]


@exits_on_error
@declared(commandline.REQUEST)
def install(
    package: InstallPackage = None,
    org: Any = commandline.FLOX_ORG,
    directory: InstallDirectory = Path("."),
    build: InstallBuild = False,
    build_dir: InstallBuildDir = None,
    generate: GenerateOpt = False,
    repo: RepoOpt = None,
    yes: InstallYes = False,
    dry_run: InstallDryRun = False,
    no_verify: InstallNoVerify = False,
    force: InstallForce = False,
    timeout: InstallTimeout = None,
    token_file: InstallTokenFile = None,
    format: InstallFormatOpt = InstallFormat.text,
    source: Any = commandline.SOURCE,
    installer: Any = commandline.INSTALLER,
    python: Any = commandline.PYTHON_PATH,
    wheel_index: Any = commandline.WHEEL_INDEX,
    allow_downgrade: InstallAllowDowngrade = False,
    upgrade: InstallUpgrade = False,
    plan: InstallFromPlan = None,
    label: Any = commandline.NODE_LABEL,
    **values: Any,
) -> None:
    """Detect, decide, explain, ask, then install (or build) the variant through Flox (or PyTorch's wheel with pip
    or uv) and verify it."""
    from pickvariant.commands import install as command

    if label is not None and plan is None:
        raise BadInput("--label names this node in --plan's plan: give the plan too")
    prebuilt = (chosen := registry.chosen(source, os.environ)).pipeline == "builds"  # the one choice of source
    given = {"--package": package, "--org": org, "--build": build or None, "--token-file": token_file}
    given |= {"--installer": installer, "--python": python, "--wheel-index": wheel_index}
    registry.refuse_others(chosen, given | {"--allow-downgrade": allow_downgrade, "--upgrade": upgrade})
    if prebuilt:
        ask, assigned = _wheel_ask(request_of(values), python, wheel_index, plan, label, chosen.name)
        _install_wheels(
            ask, installer, yes=yes, dry_run=dry_run, no_verify=no_verify, timeout_s=timeout,
            as_json=format is InstallFormat.json, assigned=assigned, allow_downgrade=allow_downgrade, upgrade=upgrade,
        )  # fmt: skip
        return
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
    request = request_of(values)
    if plan is not None:
        request, options = _assigned(plan, label, request, options)
    _install_flox(request, options, yes=yes, as_json=format is InstallFormat.json)


def _wheel_ask(
    request: Request, python: str | None, wheel_index: str | None, plan: str | None, label: str | None, source: str
) -> tuple[WheelAsk, WheelAssignment | None]:
    """What to ask the wheel rules; with --plan, the node's assignment pinned, and nothing that would choose
    another wheel beside it (its index: --wheel-index, else PICKVARIANT_WHEEL_INDEX, else the plan's)."""
    from pickvariant.api import WheelAsk
    from pickvariant.commands import plan_install

    if plan is None:
        return WheelAsk(request=request, python=python, wheel_index=wheel_index, source=source), None
    pinned = [flag for flag, name in _CHOOSERS.items() if getattr(request, name, None)]
    if settings.setting(os.environ, settings.WITH) is not None:
        pinned.append(settings.WITH)
    if pinned:
        raise BadInput(f"{pinned[0]}: --plan gives this node its wheel and companions; it takes no other choice")
    assigned = plan_install.wheel_assignment(plan, label, source)
    request = plan_install.wheel_pins(assigned, request, registry.named(source).catalog())
    if wheel_index is None and settings.setting(os.environ, settings.WHEEL_INDEX) is None:
        wheel_index = assigned.index_root
    return WheelAsk(request=request, python=python, wheel_index=wheel_index, source=source), assigned


def _assigned(
    plan: str, label: str | None, request: Request, options: InstallOptions
) -> tuple[Request, InstallOptions]:
    """With --plan: the node's assignment, and nothing that would choose another build beside it."""
    from pickvariant.commands import install as command

    pinned = [flag for flag, given in _CHOOSERS.items() if _given(request, options, given)]
    if settings.setting(os.environ, settings.WITH) is not None:
        pinned.append(settings.WITH)  # the companions come from the plan too
    if pinned:
        raise BadInput(f"{pinned[0]}: --plan gives this node its package and branch; it takes no other choice")
    return command.from_plan(plan, label, request, options, load_catalog())


# What would choose or force another build than a plan's assignment: refused beside --plan.
_CHOOSERS = {
    "--package": "package",
    "--branch": "branch",
    "--torch": "torch",
    "--cuda": "cuda",
    "--with": "with_projects",
    "--force": "force",
    "--gpu-index": "gpu_index",
}


def _given(request: Request, options: InstallOptions, name: str) -> bool:
    return bool(getattr(options, name, None) or getattr(request, name, None))


def _install_flox(request: Request, options: InstallOptions, *, yes: bool, as_json: bool) -> None:
    """The Flox install's plan, then (consented) the install or build and verify."""
    from pickvariant.commands import install as command

    installation = command.FloxInstallation(prepared=command.prepare(request, options, load_catalog()), options=options)
    _run(installation, yes=yes, dry_run=options.dry_run, as_json=as_json)


def _install_wheels(
    ask: WheelAsk,
    installer: str | None,
    *,
    yes: bool,
    dry_run: bool,
    no_verify: bool,
    timeout_s: float | None,
    as_json: bool,
    assigned: WheelAssignment | None = None,
    allow_downgrade: bool = False,
    upgrade: bool = False,
) -> None:
    """The wheel's plan, then (consented) the installer run and the environment verified: exit 1 when it fails.
    A plan's assignment is asked for by name: it replaces a torch that runs here as --upgrade does."""
    from pickvariant.commands import plan_install, wheel_install

    check = partial(plan_install.check_wheel_plan, assigned) if assigned is not None else None
    plan = wheel_install.plan_wheel_install(
        ask, installer, check=check, allow_downgrade=allow_downgrade, dry_run=dry_run,
        upgrade=upgrade or assigned is not None,
    )  # fmt: skip
    if assigned is not None:
        plan = replace(plan, assigned_by=assigned.said)
    installation = wheel_install.WheelInstallation(plan=plan, no_verify=no_verify, timeout_s=timeout_s)
    _run(installation, yes=yes, dry_run=dry_run, as_json=as_json)


def _run(installation: Installation, *, yes: bool, dry_run: bool, as_json: bool) -> None:
    """commands/install.run, the one install flow, speaking through typer: progress on stderr (a Flox build's
    through its progress view), consent asked on the terminal."""
    from contextlib import nullcontext

    from pickvariant.commands import install as command
    from pickvariant.output.terminal import flox_progress

    def warn(line: str) -> None:
        typer.echo(line, err=True)

    def progress(label: str | None) -> Any:
        return flox_progress(label, warn) if label is not None else nullcontext(warn)

    talk = command.Talk(say=typer.echo, warn=warn, consent=_confirmed, progress=progress)
    code = command.run(installation, talk, dry_run=dry_run, yes=yes, as_json=as_json)
    if code:
        raise typer.Exit(code)


def _confirmed(replaces: str | None = None) -> bool:
    if not sys.stdin.isatty():
        raise BadInput("no terminal to ask for confirmation: pass --yes to proceed (or --dry-run to only see the plan)")
    question = f"Replace torch {replaces} there and proceed?" if replaces else "Proceed?"
    return typer.confirm(question, default=False)
