"""`pickvariant list`: the catalog's variants, summarised or as rows; its options."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog
from pickvariant.cli.typer_options import Format

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


@exits_on_error
@declared()
def list_variants(
    branch: ListBranch = None,
    python_version: ListPythonVersion = None,
    cuda: ListCuda = None,
    gpu: ListGpu = None,
    isa: ListIsa = None,
    platform: ListPlatform = None,
    all_rows: ListAllRows = False,
    project: ListProject = "pytorch",
    format: Any = commandline.FORMAT,
) -> None:
    """List the catalog's variants: a summary by branch, or rows with --all or any filter (--project lists a companion's recipes)."""
    from pickvariant.output import listing, terminal
    from pickvariant.sources.flox.commands.listing import ListOptions, listed

    catalog = load_catalog()
    filters = listing.Filters(branch=branch, python=python_version, cuda=cuda, gpu=gpu, isa=isa, platform=platform)
    found = listed(ListOptions(filters=filters, all_rows=all_rows, project=project), catalog)
    if format is Format.json:
        typer.echo(json.dumps(listing.document(catalog, list(found.rows), project), indent=2))
    elif found.summarised and project != "pytorch":
        typer.echo(listing.companion_summary(list(found.rows), project), nl=False)
    elif format is Format.markdown:
        typer.echo(
            listing.summary_markdown(catalog) if found.summarised else listing.markdown(list(found.rows)), nl=False
        )
        if all_rows and project == "pytorch":
            typer.echo(listing.left_out_lines(catalog, markdown=True), nl=False)
    elif not found.summarised:
        terminal.print_rows(list(found.rows))
        if all_rows and project == "pytorch":
            typer.echo(listing.left_out_lines(catalog), nl=False)
    else:
        terminal.print_summary(catalog)
