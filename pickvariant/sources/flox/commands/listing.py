"""`pickvariant list`: the catalog's variants (or a companion project's recipes) that the filters leave, and whether
the views summarise them (no --all, no filter) or show every row."""

from __future__ import annotations

from typing import Any

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant.sources.build import Catalog
from pickvariant.sources.flox.commands.list_rows import Filters, select, select_companions
from pickvariant.sources.flox.recipes.companions import PROJECTS
from pickvariant.sources.flox.recipes.stack import load_stack


@keyword_record
class ListOptions:
    filters: Filters
    all_rows: bool = False
    project: str = "pytorch"


@keyword_record
class Listed:
    rows: tuple[dict[str, Any], ...]
    summarised: bool  # the text and Markdown views summarise; JSON is every row


def listed(options: ListOptions, catalog: Catalog) -> Listed:
    if options.project == "pytorch":
        rows = select(catalog, options.filters)
    elif options.project not in PROJECTS:
        raise BadInput(f"--project {options.project!r:.40}: choose pytorch, {', '.join(PROJECTS)}")
    else:
        rows = select_companions(catalog, load_stack(catalog).companions, options.project, options.filters)
    return Listed(rows=tuple(rows), summarised=not (options.all_rows or options.filters.any()))
