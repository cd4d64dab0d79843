"""`pickvariant report`: one block for a support ticket, of this machine or of a stated one."""

from __future__ import annotations

import os
from typing import Any

from pickvariant import pipelines
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request
from pickvariant.commands.verify import default_python
from pickvariant.machine.facts import states_a_machine
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


@keyword_record
class Report:
    """A support ticket's block as data: `output/report.markdown` renders it, JSON prints it."""

    data: dict[str, Any]
    described: bool  # a stated machine, not this one


def report(request: Request, catalog: Callable[[], Catalog]) -> Report:
    """The report's content, of the source asked (--source, else PICKVARIANT_SOURCE, else flox; `catalog` loads the
    recipes' catalog, read only for them). With a stated CPU, GPU or driver it describes that machine, for every
    source: what is not stated is "not stated", never this machine's (nothing here is detected, not even the
    installed PyTorch)."""
    chosen = registry.chosen(request.source, os.environ)
    registry.refuse_others(chosen, {"--wheel-index": request.index})
    described = states_a_machine(request, os.environ)
    pipeline = pipelines.of(chosen)
    asked = replace(request, source=chosen.name, described=described)
    answer = pipeline.answer(asked, chosen, catalog=catalog)
    python = request.interpreter  # --python: the interpreter whose torch to report

    def pythons() -> list[str]:
        return [python] if python else ([] if described else default_python())

    return Report(data=pipeline.report(answer, pythons, described), described=described)
