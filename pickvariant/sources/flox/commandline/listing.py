"""`pickvariant list`: the catalog's variants, summarised or as rows; its options, and the rows as a terminal's table
(rich, fitted to its width)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from pickvariant._base.text import visible
from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog
from pickvariant.cli.typer_options import Format

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.sources.build import Catalog

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
    from pickvariant.sources.flox.commands import list_rows as listing
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
        print_rows(list(found.rows))
        if all_rows and project == "pytorch":
            typer.echo(listing.left_out_lines(catalog), nl=False)
    else:
        _print_summary(catalog)


def _print_summary(catalog: Catalog) -> None:
    """The summary, fitted to the terminal's width on a terminal (a pipe gets whole lines)."""
    import shutil

    from pickvariant.sources.flox.commands.list_rows import summary

    sys.stdout.write(summary(catalog, shutil.get_terminal_size().columns if sys.stdout.isatty() else None))


def print_rows(rows: list[dict[str, Any]], console: Any = None) -> None:
    """The rows as a table fitted to the terminal (columns dropped in DROP_ORDER, said in its caption); a pipe gets
    plain lines."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from pickvariant.sources.flox.commands.list_rows import COLUMNS, DROP_ORDER, plain

    console = console or Console()
    if not console.is_terminal:
        console.file.write(plain(rows))
        return
    text = [{c: str(row[c] if row[c] is not None else "-") for c in COLUMNS} for row in rows]
    # Each column takes its widest cell plus two spaces of padding and a border.
    width = {c: max([len(c)] + [len(row[c]) for row in text]) + 3 for c in COLUMNS}
    if width["package"] + 1 > console.width:
        # Not even the package column fits: a block per variant, the name whole on its own line.
        for row in text:
            console.file.write(visible(row["package"]) + "\n")
            details = "  ".join(f"{c}: {visible(row[c])}" for c in COLUMNS if c != "package")
            console.print(Text(details, overflow="fold"), highlight=False)
        return
    shown = list(COLUMNS)
    for column in DROP_ORDER:
        if sum(width[c] for c in shown) + 1 <= console.width:
            break
        shown.remove(column)
    hidden = [c for c in COLUMNS if c not in shown]
    caption = (
        f"not shown, for want of width: {', '.join(hidden)} (--format markdown or a pipe shows every column)"
        if hidden
        else None
    )
    table = Table(title=f"{len(rows)} variants", caption=caption, header_style="bold")
    for column in shown:
        table.add_column(column, no_wrap=column == "package", overflow="fold")
    for row in text:
        # Text, not markup: a site catalog's description may hold brackets.
        table.add_row(*(Text(visible(row[c])) for c in shown))
    console.print(table)
