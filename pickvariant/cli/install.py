"""`pickvariant install`: decide, show the steps, ask, install or build, verify; its options."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pickvariant._base.errors import BadInput
from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog, request_of
from pickvariant.cli.typer_options import GenerateOpt, RepoOpt, checked_paths
from pickvariant.install.options import InstallOptions

if TYPE_CHECKING:
    from pickvariant.commands.install import Installation


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
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Stop the install when its commands together run longer than this many seconds (a build: 48 hours).",
    ),
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
    from pickvariant.commands.installation import InstallAsk, installation

    options = InstallOptions(
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
    # --source, --python and --wheel-index are the Request's, as for detect and report (one record asks every source)
    request = request_of({**values, "source": source, "python": python, "wheel_index": wheel_index})
    ask = InstallAsk(
        request=request, recipes=options, plan=plan, label=label, installer=installer,
        allow_downgrade=allow_downgrade, upgrade=upgrade,
    )  # fmt: skip
    _run(installation(ask, load_catalog), yes=yes, dry_run=dry_run, as_json=format is InstallFormat.json)


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
