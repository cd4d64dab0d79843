"""The options of every command but detect's own, declared once as typer parameters (the options that describe
a machine or pin a choice are declared as data in commandline.py), and the enums of their choices."""

from __future__ import annotations

from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated

import typer

from pickvariant import commandline
from pickvariant._base.files import path_too_long
from pickvariant._base.request import WORKLOADS


class Format(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class Workload(StrEnum):
    general = "general"
    int8 = "int8"
    bf16 = "bf16"


# The choices are declared as data (commandline.py, request.py); these classes spell them for typer and mypy.
if tuple(Format) != commandline.OUTPUT_FORMATS or tuple(Workload) != WORKLOADS:
    raise ImportError("cli_options.Format/Workload differ from commandline.OUTPUT_FORMATS/request.WORKLOADS")
CHOICES: dict[tuple[str, ...], type[Enum]] = {commandline.OUTPUT_FORMATS: Format, WORKLOADS: Workload}
KINDS: dict[str, object] = {
    "text": str | None,
    "path": Path | None,
    "int": int | None,
    "texts": list[str] | None,
    "flag": bool,
}


def checked_paths(ctx: typer.Context, param: typer.CallbackParam, value: object) -> object:
    """A path option's value (or each of a list's), refused as a usage error where no system could open it."""
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if item is not None and "://" not in str(item):
            why = path_too_long(str(item))
            if why is not None:
                raise typer.BadParameter(why)
    return value


class InstallFormat(StrEnum):
    text = "text"
    json = "json"


class ReportFormat(StrEnum):
    markdown = "markdown"
    json = "json"


ListBranch = Annotated[
    str | None, typer.Option("--branch", metavar="NAME", help="Only this branch (e.g. pytorch-2.10-python313).")
]
ListPythonVersion = Annotated[
    str | None, typer.Option("--python-version", metavar="X.Y", help="Only builds for this Python (e.g. 3.12).")
]
ListCuda = Annotated[
    str | None,
    typer.Option(
        "--cuda", metavar="X.Y", help="Only this CUDA line (e.g. 12.9), or 'none' for CPU-only and MPS builds."
    ),
]
ListGpu = Annotated[
    str | None,
    typer.Option(
        "--gpu", metavar="ARCH", help="Only this GPU architecture (sm90, 9.0), 'mps', or 'cpu' for CPU-only builds."
    ),
]
ListIsa = Annotated[
    str | None, typer.Option("--isa", metavar="ISA", help="Only this CPU instruction set (avx2, avx512, armv9, ...).")
]
ListPlatform = Annotated[
    str | None,
    typer.Option(
        "--platform", metavar="SYSTEM", help="Only this Nix system (x86_64-linux, aarch64-linux, aarch64-darwin)."
    ),
]
ListAllRows = Annotated[
    bool, typer.Option("--all", help="Every row, even without a filter (the default text output is a summary).")
]
ListProject = Annotated[
    str,
    typer.Option(
        "--project", help="pytorch (the variants), or a companion: torchvision, torchaudio, vllm.", metavar="NAME"
    ),
]
SyncRepos = Annotated[
    list[str],
    typer.Argument(
        callback=checked_paths,
        help="A clone of the build repository (path) or its URL, a fork's too; then any companion repositories (build-torchvision, build-torchaudio, build-vllm).",
        metavar="REPO [COMPANION]...",
    ),
]
SyncOutput = Annotated[
    Path | None,
    typer.Option(
        "-o", "--output", metavar="PATH", callback=checked_paths, help="Write the catalog here (default: print it)."
    ),
]
SyncCheck = Annotated[
    bool, typer.Option("--check", help="Write nothing; exit 1 when --output differs from what REPO gives.")
]
SyncSourceUrl = Annotated[
    list[str] | None,
    typer.Option(
        "--source-url",
        help="The repository name to record for each REPO in turn (default: the URL, or the clone's origin); repeat it for companions.",
        metavar="URL",
    ),
]
SyncForce = Annotated[bool, typer.Option("--force", help="Overwrite an existing --output that differs.")]
RecipePackage = Annotated[
    str | None, typer.Argument(metavar="PACKAGE", help="The package, e.g. pytorch-python313-cuda13_0-sm90-avx512.")
]
RecipeAllVariants = Annotated[
    bool, typer.Option("--all", help="Generate every variant of a branch (needs -o and --branch).")
]
RecipeBranch = Annotated[
    str | None,
    typer.Option(
        "--branch",
        metavar="NAME",
        help="The branch: for --all, whose variants; with PACKAGE, the branch it is on (needed when several build it).",
    ),
]
RecipeCuda = Annotated[
    str | None, typer.Option("--cuda", metavar="X.Y", help="With --all: only this CUDA line of the branch.")
]
RecipeOutput = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output",
        metavar="PATH",
        callback=checked_paths,
        help="Write DIR/PACKAGE.nix instead of printing (usable as a Flox .flox/pkgs/).",
    ),
]
RecipeForce = Annotated[bool, typer.Option("--force", help="Overwrite existing recipe files that differ.")]
RecipeWith = Annotated[
    list[str] | None,
    typer.Option(
        "--with",
        metavar="PROJECT",
        help="Also write a recipe of each companion (torchvision, torchaudio, vllm) generated on PACKAGE's own "
        "recipe, beside it: one torch (with -o DIR; repeat or comma-separate).",
    ),
]
InstallPackage = Annotated[
    str | None,
    typer.Option(
        "--package",
        metavar="PACKAGE",
        help="Install this catalog package instead of the recommendation (with --branch where several branches build it).",
    ),
]
InstallOrg = Annotated[
    str | None,
    typer.Option(
        "--org",
        metavar="ORG",
        help="Install the package published in this Flox organisation's catalog (env PICKVARIANT_FLOX_ORG).",
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
InstallTimeout = Annotated[
    float | None,
    typer.Option("--timeout", metavar="SECONDS", help="Stop a flox command that runs longer than this many seconds."),
]
InstallFormatOpt = Annotated[
    InstallFormat, typer.Option("--format", help="text, or json: the plan of a --dry-run as data.")
]
PlanInputs = Annotated[
    list[str],
    typer.Argument(
        metavar="INPUT",
        help="JSONL files of `detect --format json --compact` lines, directories of JSON files, or - for stdin.",
    ),
]
PlanOrg = Annotated[
    str | None,
    typer.Option(
        "--org",
        metavar="ORG",
        help="The Flox organisation the builds are published to (used in the printed commands; env PICKVARIANT_FLOX_ORG).",
    ),
]
PlanMaxVariants = Annotated[
    int | None,
    typer.Option(
        "--max-variants",
        metavar="N",
        help="Use at most this many variants: the best assignment within them, naming who gets less or nothing.",
    ),
]
VerifyPython = Annotated[
    str | None,
    typer.Option(
        "--python", metavar="PYTHON", help="The interpreter to probe (default: the last install's, else this one)."
    ),
]
VerifyQuick = Annotated[
    bool, typer.Option("--quick", help="Small sizes: seconds on a CPU machine (about 4 s on 2 cores).")
]
VerifyPackage = Annotated[
    str | None,
    typer.Option(
        "--package", metavar="PACKAGE", help="The variant the interpreter should hold (checks its CPU dispatch level)."
    ),
]
VerifyBranch = Annotated[
    str | None, typer.Option("--branch", metavar="NAME", help="The branch of --package, where several build it.")
]
VerifyOrg = Annotated[
    str | None,
    typer.Option(
        "--org",
        metavar="ORG",
        help="With --package: probe the variant this Flox organisation published, in a throwaway environment (needs a FloxHub login).",
    ),
]
VerifyWith = Annotated[
    list[str] | None,
    typer.Option(
        "--with",
        help="Also import these companions, run one operation of each on every GPU and check one libtorch is loaded (env PICKVARIANT_WITH).",
        metavar="PROJECT",
    ),
]
ReportFormatOpt = Annotated[ReportFormat, typer.Option("--format", help="markdown (default) or json.")]
ReportPython = Annotated[
    str | None, typer.Option("--python", metavar="PYTHON", help="The interpreter whose PyTorch to report.")
]
GenerateOpt = Annotated[
    bool,
    typer.Option(
        "--generate", help="Render the recipe from pickvariant's templates instead of fetching the build repository's."
    ),
]
RepoOpt = Annotated[
    str | None,
    typer.Option(
        "--repo",
        metavar="URL|PATH",
        callback=checked_paths,
        help="The recipe repository: URL or path of the build repository, a fork, mirror or clone (env PICKVARIANT_RECIPES_REPO; default: the catalog's source).",
    ),
]
