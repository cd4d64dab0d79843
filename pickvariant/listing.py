"""`pickvariant list`: the catalog as rows."""

from __future__ import annotations

from typing import Any

from pickvariant.catalog import Catalog
from pickvariant.errors import BadInput
from pickvariant.versions import parse_compute_capability


def select(catalog: Catalog, branch: str | None, gpu: str | None, isa: str | None) -> list[dict[str, Any]]:
    if branch is not None:
        catalog.branch(branch)  # unknown branch -> BadInput naming the known ones
    gpu_arch: str | None = None
    cpu_only = gpu is not None and gpu.strip().lower() in ("cpu", "none")
    if gpu is not None and not cpu_only:
        gpu_arch = parse_compute_capability(gpu).sm
        if gpu_arch not in catalog.gpu_archs:
            raise BadInput(f"no GPU architecture {gpu_arch} in the catalog; it has {', '.join(catalog.gpu_archs)}")
    if isa is not None and isa not in catalog.isas:
        raise BadInput(f"unknown CPU instruction set {isa!r}; the catalog has {', '.join(catalog.isas)}")
    rows = []
    for b in catalog.branches:
        for variant in b.variants:
            if branch and b.name != branch or isa and variant.cpu_isa != isa:
                continue
            if cpu_only and variant.gpu_arch is not None or gpu_arch and variant.gpu_arch != gpu_arch:
                continue
            arch = catalog.gpu_archs.get(variant.gpu_arch or "")
            rows.append({
                "package": variant.package,
                "branch": b.name,
                "torch": b.torch,
                "cuda": b.cuda if arch else None,
                "gpu_arch": variant.gpu_arch,
                "compute_capability": str(arch.compute_capability) if arch else None,
                "cpu_isa": variant.cpu_isa,
                "platform": catalog.isas[variant.cpu_isa].platform,
                "gpus": arch.description if arch else "CPU only",
            })
    return rows


_COLUMNS = ("package", "branch", "torch", "cuda", "gpu_arch", "cpu_isa", "platform", "gpus")


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(str(row[c] if row[c] is not None else "-").replace("|", "\\|") for c in _COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + f"\n\n{len(rows)} variants\n"


def plain(rows: list[dict[str, Any]]) -> str:
    """Aligned columns with nothing cut: what a pipe, a file or `grep` gets."""
    cells = [list(_COLUMNS)] + [[str(row[c] if row[c] is not None else "-") for c in _COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    return "\n".join(lines) + f"\n\n{len(rows)} variants\n"


# The columns a narrow terminal loses first; the package name is never dropped nor cut.
_DROP_ORDER = ("gpus", "platform", "torch", "cuda", "branch", "gpu_arch", "cpu_isa")


def print_rich(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not console.is_terminal:
        console.file.write(plain(rows))
        return
    text = [{c: str(row[c] if row[c] is not None else "-") for c in _COLUMNS} for row in rows]
    # Each column takes its widest cell plus two spaces of padding and a border.
    width = {c: max([len(c)] + [len(row[c]) for row in text]) + 3 for c in _COLUMNS}
    shown = list(_COLUMNS)
    for column in _DROP_ORDER:
        if sum(width[c] for c in shown) + 1 <= console.width:
            break
        shown.remove(column)
    hidden = [c for c in _COLUMNS if c not in shown]
    caption = f"not shown, for want of width: {', '.join(hidden)} (--format markdown or a pipe shows every column)" if hidden else None
    table = Table(title=f"{len(rows)} variants", caption=caption, header_style="bold")
    for column in shown:
        table.add_column(column, no_wrap=column == "package", overflow="fold")
    for row in text:
        # Text, not markup: a site catalog's description may hold brackets.
        table.add_row(*(Text(row[c]) for c in shown))
    console.print(table)
