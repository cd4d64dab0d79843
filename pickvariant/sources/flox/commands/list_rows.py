"""`pickvariant list`: the catalog as rows (its filters, the selection, the summary), and the rows as plain lines,
Markdown and JSON; the terminal's table is drawn by sources/flox/commandline/listing.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant._base.text import markdown_text, visible
from pickvariant._base.versions import (
    parse_compute_capability,
    release_matches,
    version_key,
)
from pickvariant.sources.build import MPS, Catalog, Companion, Variant


@keyword_record
class Filters:
    branch: str | None = None
    python: str | None = None
    cuda: str | None = None
    gpu: str | None = None
    isa: str | None = None
    platform: str | None = None

    def any(self) -> bool:
        return any(
            value is not None for value in (self.branch, self.python, self.cuda, self.gpu, self.isa, self.platform)
        )


def _gpu_filter(catalog: Catalog, gpu: str | None) -> str | None:
    """'cpu' -> '' (CPU-only), 'mps' -> 'mps', '9.0'/'sm90' -> 'sm90'."""
    if gpu is None:
        return None
    word = gpu.strip().lower()
    if word in ("cpu", "none"):
        return ""
    if word == MPS:
        return MPS
    arch = parse_compute_capability(gpu).sm
    if arch not in catalog.gpu_archs:
        raise BadInput(f"no GPU architecture {arch} in the catalog; it has {', '.join(catalog.gpu_archs)}, mps and cpu")
    return arch


def select(catalog: Catalog, filters: Filters = Filters()) -> list[dict[str, Any]]:
    if filters.branch is not None:
        catalog.branch(filters.branch)  # unknown branch -> BadInput naming the known ones
    gpu = _gpu_filter(catalog, filters.gpu)
    if filters.isa is not None and filters.isa not in catalog.isas:
        raise BadInput(f"unknown CPU instruction set {filters.isa!r}; the catalog has {', '.join(catalog.isas)}")
    if filters.platform is not None and filters.platform not in catalog.platforms:
        raise BadInput(f"unknown platform {filters.platform!r}; the catalog has {', '.join(catalog.platforms)}")
    no_cuda = filters.cuda is not None and filters.cuda.strip().lower() in ("none", "cpu")
    if filters.cuda is not None and not no_cuda:
        lines = sorted({v.cuda for v in catalog.variants if v.cuda}, key=version_key)
        if not any(release_matches(filters.cuda, line, "--cuda") for line in lines):
            raise BadInput(
                f"--cuda {filters.cuda}: no variant of the catalog is built with it (CUDA lines: {', '.join(lines)}, or none)"
            )
    if filters.python is not None:
        pythons = sorted({v.python for v in catalog.variants}, key=version_key)
        if not any(release_matches(filters.python, python, "--python-version") for python in pythons):
            raise BadInput(
                f"--python-version {filters.python}: no variant of the catalog is built for it (Pythons: {', '.join(pythons)})"
            )

    def wanted(variant: Variant) -> bool:
        if (filters.branch and variant.branch != filters.branch) or (filters.isa and variant.cpu_isa != filters.isa):
            return False
        if filters.platform and variant.platform != filters.platform:
            return False
        if filters.python and not release_matches(filters.python, variant.python, "--python-version"):
            return False
        if filters.cuda is not None and (
            no_cuda != (variant.cuda is None)
            or (not no_cuda and not release_matches(filters.cuda, variant.cuda or "", "--cuda"))
        ):
            return False
        return gpu is None or (variant.gpu_arch or "") == gpu

    return [row(variant, catalog) for variant in catalog.variants if wanted(variant)]


def select_companions(
    catalog: Catalog, companions: Sequence[Companion], project: str, filters: Filters = Filters()
) -> list[dict[str, Any]]:
    """The companion rows of `project` the filters leave, as `list --project` shows them."""
    own = [c for c in companions if c.project == project]
    if not own:
        raise BadInput(
            f"--project {project}: the catalog has no {project} recipes (sync them: pickvariant catalog sync REPO COMPANION_REPO… -o FILE)"
        )
    if filters.branch is not None and not any(c.branch == filters.branch for c in own):
        raise BadInput(
            f"unknown branch {filters.branch!r} of {project}; its recipes are on {', '.join(sorted({c.branch for c in own}))}"
        )
    gpu = _gpu_filter(catalog, filters.gpu)
    if filters.isa is not None and filters.isa not in catalog.isas:
        raise BadInput(f"unknown CPU instruction set {filters.isa!r}; the catalog has {', '.join(catalog.isas)}")
    no_cuda = filters.cuda is not None and filters.cuda.strip().lower() in ("none", "cpu")

    def wanted(c: Companion) -> bool:
        if (
            (filters.branch and c.branch != filters.branch)
            or (filters.isa and c.cpu_isa != filters.isa)
            or (filters.platform and c.platform != filters.platform)
        ):
            return False
        if filters.python and not release_matches(filters.python, c.python, "--python-version"):
            return False
        if filters.cuda is not None and (
            no_cuda != (c.cuda is None) or (not no_cuda and not release_matches(filters.cuda, c.cuda or "", "--cuda"))
        ):
            return False
        return gpu is None or (c.gpu_arch or "") == gpu

    found = [companion_row(c, catalog) for c in own if wanted(c)]
    if not found and filters.any():
        raise BadInput(f"no {project} recipe matches the filters (see `pickvariant list --project {project} --all`)")
    return found


def companion_row(companion: Companion, catalog: Catalog) -> dict[str, Any]:
    """One companion as `list --project` shows it: its identity, its torch and how that torch relates to build-pytorch's."""
    arch = catalog.gpu_archs.get(companion.gpu_arch or "")
    relation = {"identical": f"identical to {companion.torch_of}", "separate": "a separate build"}.get(
        companion.torch_relation, "unknown"
    )
    return {
        **companion.identity(),
        "torch": f"{companion.torch} ({relation})" if companion.torch else "unknown (no nixpkgs pin)",
        "gpus": arch.description if arch else ("Apple Silicon (MPS)" if companion.gpu_arch == MPS else "CPU only"),
    }


def row(variant: Variant, catalog: Catalog) -> dict[str, Any]:
    """One variant as `list --format json` and `detect`'s recommendation show it (schema_version 2)."""
    arch = catalog.gpu_archs.get(variant.gpu_arch or "")
    return {
        **variant.identity(),
        "compute_capability": str(arch.compute_capability) if arch else None,
        "aligned_with": catalog.branch(variant.branch).aligned_with,
        "gpus": arch.description if arch else ("Apple Silicon (MPS)" if variant.is_mps else "CPU only"),
    }


def document(catalog: Catalog, rows: list[dict[str, Any]], project: str = "pytorch") -> dict[str, Any]:
    """What `list --format json` prints: the catalog's source and the rows (schema_version 2, as detect's recommendation);
    a companion's rows (`--project`) under "companions", as detect's JSON has them; the recipes sync left out."""
    if project != "pytorch":
        return {"schema_version": 2, "source": source_json(catalog), "companions": rows}
    left_out = [{"branch": branch, "path": path, "why": why} for branch, path, why in catalog.left_out]
    return {"schema_version": 2, "source": source_json(catalog), "variants": rows, "left_out": left_out}


def left_out_lines(catalog: Catalog, markdown: bool = False) -> str:
    """`list --all`: after the rows, the build repository's recipes sync left out, each with why ('' when none)."""
    if not catalog.left_out:
        return ""
    head = f"{len(catalog.left_out)} recipes of the build repository left out of the catalog, each with why:"
    if markdown:
        items = [
            f"- `{markdown_text(branch)}:{markdown_text(path)}`: {markdown_text(why)}"
            for branch, path, why in catalog.left_out
        ]
        return "\n" + head + "\n\n" + "\n".join(items) + "\n"
    items = [f"  {visible(branch)}:{visible(path)}: {visible(why)}" for branch, path, why in catalog.left_out]
    return "\n" + head + "\n" + "\n".join(items) + "\n"


def source_json(catalog: Catalog) -> dict[str, str]:
    return {"repo": catalog.source.repo, "commit": catalog.source.commit, "date": catalog.source.date}


def summary(catalog: Catalog, width: int | None = None) -> str:
    """One line per branch: what a thousand rows would hide. Where a line would not fit `width` (a
    terminal's), each branch becomes a block of lines that do, wrapped between words: nothing is cut."""
    lines = [
        f"{len(catalog.variants)} variants on {len(catalog.branches)} branches of {catalog.source.repo} "
        f"at {catalog.source.commit[:12]} ({catalog.source.date[:10]})",
        "",
    ]
    table = [("branch", "torch", "python", "cuda lines", "variants", "gpu archs", "kind")]
    for branch in catalog.branches:
        archs = sorted(
            {v.gpu_arch for v in branch.variants if v.gpu_arch},
            key=lambda a: (a != MPS, int(a[2:]) if a.startswith("sm") else 0),
        )
        table.append(
            (
                branch.name,
                branch.torch,
                branch.python,
                " ".join(line.cuda for line in branch.cuda_lines) or "-",
                str(len(branch.variants)),
                " ".join(archs) or "-",
                f"aligned with {branch.aligned_with}" if branch.aligned_with else "general",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    rendered = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)).rstrip() for line in table
    ]
    footer = (
        "Rows: pickvariant list --all, or filter with --branch, --python-version, --cuda, --gpu, --isa, --platform."
    )
    if width is None or (max(map(len, rendered + lines)) <= width and len(footer) <= width):
        return "\n".join(lines + rendered + ["", footer]) + "\n"
    import textwrap

    def fill(text: str, indent: str = "") -> list[str]:
        return textwrap.wrap(
            text,
            width=max(width, 20),
            initial_indent=indent,
            subsequent_indent=indent + "  ",
            break_long_words=False,
            break_on_hyphens=False,
        ) or [""]

    narrow = [*fill(lines[0]), ""]
    for name, torch, python, cuda, count, arch_text, kind in table[1:]:
        narrow += fill(f"{name}: PyTorch {torch}, Python {python}, {count} variants, {kind}")
        narrow += fill(f"CUDA {cuda}", "  ") + fill(f"GPU archs {arch_text}", "  ")
    return "\n".join([*narrow, "", *fill(footer)]) + "\n"


COLUMNS = ("package", "branch", "torch", "python", "cuda", "gpu_arch", "cpu_isa", "platform", "gpus")


def summary_markdown(catalog: Catalog) -> str:
    """`list --format markdown` without --all or a filter: the summary by branch, as the text view gives it."""
    lines = [
        f"{len(catalog.variants)} variants on {len(catalog.branches)} branches of {markdown_text(catalog.source.repo)} "
        f"at {markdown_text(catalog.source.commit[:12])}",
        "",
        "| branch | torch | python | cuda lines | variants | kind |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        "| "
        + " | ".join(
            markdown_text(cell)
            for cell in (
                branch.name,
                branch.torch,
                branch.python,
                " ".join(line.cuda for line in branch.cuda_lines) or "-",
                str(len(branch.variants)),
                f"aligned with {branch.aligned_with}" if branch.aligned_with else "general",
            )
        )
        + " |"
        for branch in catalog.branches
    ]
    return "\n".join(lines) + "\n\nRows: `pickvariant list --all --format markdown`, or a filter.\n"


def companion_summary(rows: list[dict[str, Any]], project: str) -> str:
    """`list --project X` without --all or a filter: its recipes counted by repository and branch."""
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (str(row["repo"]), str(row["branch"]))
        counts[key] = counts.get(key, 0) + 1
    lines = [f"{len(rows)} {project} recipes", ""]
    lines += [f"{visible(repo)} {visible(branch)}: {count}" for (repo, branch), count in sorted(counts.items())]
    return "\n".join(lines) + f"\n\nRows: pickvariant list --project {project} --all, or a filter.\n"


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += [
        "| " + " | ".join(markdown_text(str(row[c] if row[c] is not None else "-")) for c in COLUMNS) + " |"
        for row in rows
    ]
    return "\n".join(lines) + f"\n\n{len(rows)} {_noun(rows)}\n"


def _noun(rows: list[dict[str, Any]]) -> str:
    return f"{rows[0]['project']} recipes" if rows and "project" in rows[0] else "variants"


def plain(rows: list[dict[str, Any]]) -> str:
    """Aligned columns with nothing cut: what a pipe, a file or `grep` gets."""
    cells = [list(COLUMNS)] + [[visible(str(row[c] if row[c] is not None else "-")) for c in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)).rstrip() for line in cells]
    return "\n".join(lines) + f"\n\n{len(rows)} {_noun(rows)}\n"


# The columns a narrow terminal loses first; the package name is never dropped nor cut. What the name itself says
# (Python, instruction set, GPU architecture, CUDA line) goes before what it does not (platform, PyTorch, branch),
# and of those the instruction set before the CUDA line, which decides whether the driver can run it.
DROP_ORDER = ("gpus", "python", "cpu_isa", "gpu_arch", "platform", "cuda", "torch", "branch")
