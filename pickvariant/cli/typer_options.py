"""What several commands' typer options share: the choices' enums (their values declared as data in options.py and
request.py), the kinds of the declared options, a path's check, and the options of more than one command. Each
command's own options are declared in its module."""

from __future__ import annotations

from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated

import typer

from pickvariant._base.files import path_too_long
from pickvariant._base.request import STATED_PLATFORMS, WORKLOADS
from pickvariant.cli import options as commandline


class Format(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class DetectFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    requirements = "requirements"
    pyproject = "pyproject"


class Workload(StrEnum):
    general = "general"
    int8 = "int8"
    bf16 = "bf16"


# The stated platforms' names hold a "-", so this enum is made from the data rather than spelled out.
Platform = StrEnum("Platform", {name.replace("-", "_"): name for name in STATED_PLATFORMS})  # type: ignore[misc]

# The choices are declared as data (cli/options.py, _base/request.py); these classes spell them for typer and mypy.
if (
    tuple(Format) != commandline.OUTPUT_FORMATS
    or tuple(DetectFormat) != commandline.DETECT_FORMATS
    or tuple(Workload) != WORKLOADS
):
    raise ImportError("typer_options' enums differ from commandline's OUTPUT_FORMATS, DETECT_FORMATS or WORKLOADS")

CHOICES: dict[tuple[str, ...], type[Enum]] = {
    commandline.OUTPUT_FORMATS: Format,
    commandline.DETECT_FORMATS: DetectFormat,
    WORKLOADS: Workload,
    tuple(STATED_PLATFORMS): Platform,
}

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


GenerateOpt = Annotated[
    bool,
    typer.Option(
        "--generate", help="Render the recipe from pickvariant's templates instead of fetching the build repository's."
    ),
]

RepoOpt = Annotated[
    str | None,
    typer.Option(
        commandline.RECIPES_REPO.flag,
        metavar=commandline.RECIPES_REPO.metavar,
        callback=checked_paths,
        help=commandline.RECIPES_REPO.described,
    ),
]


# catalog sync's and catalog wheels' --force: the file -o names is replaced only when asked.
OverwriteOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing --output that differs.")]
