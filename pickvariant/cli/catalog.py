"""`pickvariant catalog sync` (catalog.json from the build repositories) and `catalog wheels` (the wheel catalog from its facts); their options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pickvariant.cli.common import exits_on_error
from pickvariant.cli.typer_options import checked_paths

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


@exits_on_error
def catalog_sync(
    repos: SyncRepos,
    output: SyncOutput = None,
    check: SyncCheck = False,
    source_url: SyncSourceUrl = None,
    force: SyncForce = False,
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


@exits_on_error
def catalog_wheels(
    facts: WheelsFacts = None, output: WheelsOutput = None, check: WheelsCheck = False, force: SyncForce = False
) -> None:
    """PyTorch's own wheels: every release's builds whose kernel lists are verified or documented, the rest left out with why."""
    from pickvariant.commands.catalog import WheelsOptions, wheels

    done = wheels(WheelsOptions(facts=facts, output=output, check=check, force=force))
    typer.echo(done.summary, err=True)
    for line in done.said:
        typer.echo(line, err=True)
    if done.text:
        typer.echo(done.text, nl=False)
