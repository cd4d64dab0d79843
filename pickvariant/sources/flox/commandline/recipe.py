"""`pickvariant recipe`: a variant's recipe, fetched or generated; its options."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pickvariant._base.text import visible_lines
from pickvariant.cli.common import exits_on_error, load_catalog
from pickvariant.cli.typer_options import GenerateOpt, RepoOpt, checked_paths

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


@exits_on_error
def recipe(
    package: RecipePackage = None,
    all_variants: RecipeAllVariants = False,
    branch: RecipeBranch = None,
    cuda: RecipeCuda = None,
    output: RecipeOutput = None,
    generate: GenerateOpt = False,
    repo: RepoOpt = None,
    force: RecipeForce = False,
    with_: RecipeWith = None,
) -> None:
    """The Flox/Nix recipe of a catalog variant: the build repository's own (checked against the catalog), or generated."""
    from pickvariant.sources.flox.commands.recipe import RecipeOptions, recipes
    from pickvariant.sources.flox.recipes.render import write_recipes

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
    found = recipes(options, load_catalog())
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
