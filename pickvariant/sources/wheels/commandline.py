"""`pickvariant catalog wheels`, the wheels source's own command (its Source names it): the wheel catalog from its
facts, or with --refresh the releases an index holds beyond them; its options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error
from pickvariant.cli.typer_options import OverwriteOpt, checked_paths

WheelsFacts = Annotated[
    Path | None,
    typer.Option(
        "--facts",
        metavar="PATH",
        callback=checked_paths,
        help="The wheel facts to derive from (default: the facts shipped in the package).",
    ),
]
WheelsOutput = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output",
        metavar="PATH",
        callback=checked_paths,
        help="Write the wheel catalog here (default: print it).",
    ),
]
WheelsCheck = Annotated[
    bool, typer.Option("--check", help="Write nothing; exit 1 when --output differs from what the facts give.")
]


WheelsRefresh = Annotated[
    bool,
    typer.Option(
        "--refresh",
        help="Read the torch releases the index holds beyond the shipped facts from their wheels (Range requests: "
        "two members of each, never the whole wheel) and keep the catalog derived in the cache, where the wheel "
        "answers prefer it.",
    ),
]
WheelsPypi = Annotated[
    str | None,
    typer.Option(
        "--pypi",
        metavar="URL",
        help="With --refresh: the simple index PyPI's releases are read from (default: the one pip or uv is set to, "
        "else PyPI as pip names it).",
    ),
]


@exits_on_error
@declared()
def catalog_wheels(
    facts: WheelsFacts = None,
    output: WheelsOutput = None,
    check: WheelsCheck = False,
    force: OverwriteOpt = False,
    refresh: WheelsRefresh = False,
    pypi: WheelsPypi = None,
    wheel_index: Any = commandline.WHEEL_INDEX,
) -> None:
    """PyTorch's own wheels: every release's builds whose kernel lists are verified or documented, the rest left out with why."""
    from pickvariant._base.errors import BadInput
    from pickvariant.sources.wheels.commands import WheelsOptions, wheels

    if refresh:
        if output is not None or check:
            raise BadInput("--refresh writes the catalog to the cache, where the answers read it: drop -o and --check")
        if facts is not None:
            raise BadInput("--facts: --refresh builds on the wheel facts this pickvariant ships, which the answers use")
        _refresh(facts, wheel_index, pypi)
        return
    for flag, given in (("--pypi", pypi), ("--wheel-index", wheel_index)):
        if given is not None:
            raise BadInput(f"{flag}: only with --refresh")
    done = wheels(WheelsOptions(facts=facts, output=output, check=check, force=force))
    typer.echo(done.summary, err=True)
    for line in done.said:
        typer.echo(line, err=True)
    if done.text:
        typer.echo(done.text, nl=False)


def _refresh(facts: Path | None, wheel_index: str | None, pypi: str | None) -> None:
    from pickvariant._base.text import visible
    from pickvariant.sources.wheels.commands import refresh_catalog

    done = refresh_catalog(facts, wheel_index, pypi)
    for line in done.said:
        typer.echo(visible(line), err=True)
    read = ", ".join(done.releases) if done.releases else "none"
    typer.echo(
        visible(f"new releases read: {read}; {done.builds} wheel builds, {done.left_out} left out; {done.outcome}"),
        err=True,
    )
