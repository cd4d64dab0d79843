"""`pickvariant catalog sync`, the Flox source's own command (its Source names it): catalog.json from the build
repositories; its options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pickvariant.cli.common import exits_on_error
from pickvariant.cli.typer_options import OverwriteOpt, checked_paths

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

SyncUpstream = Annotated[
    list[str] | None,
    typer.Option(
        "--upstream",
        metavar="REPO",
        help="A repository whose every branch is the trusted upstream (path or URL); repeat it for several. A "
        "recipe of REPO or a COMPANION is read only where it is one of the upstream's (or of the build repositories "
        "pickvariant ships facts for) in all but its values.",
    ),
]

SyncTrustRecipes = Annotated[
    list[str] | None,
    typer.Option(
        "--trust-recipes",
        metavar="REPO",
        help="Trust this REPO or COMPANION (as given) whole: its recipes are classified by their names and declared "
        "values, not held against the upstream, and every answer that uses one says so.",
    ),
]


@exits_on_error
def catalog_sync(
    repos: SyncRepos,
    output: SyncOutput = None,
    check: SyncCheck = False,
    source_url: SyncSourceUrl = None,
    force: OverwriteOpt = False,
    upstream: SyncUpstream = None,
    trust_recipes: SyncTrustRecipes = None,
) -> None:
    """Read every branch of REPO (and of each COMPANION) with git: a catalog row for each PyTorch, torchvision, torchaudio or vLLM recipe that is the trusted upstream's but for its values."""
    from pickvariant.sources.flox.commands.sync import SyncOptions, synced

    done = synced(
        SyncOptions(
            repos=tuple(repos),
            output=output,
            check=check,
            source_urls=tuple(source_url or ()),
            force=force,
            upstreams=tuple(upstream or ()),
            trusted=tuple(trust_recipes or ()),
        )
    )
    for line in done.summary:
        typer.echo(line, err=True)
    for text, to_stderr in done.delivered():
        typer.echo(text, err=to_stderr, nl=to_stderr)
