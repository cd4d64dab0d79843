"""`pickvariant report`: one block for a support ticket, of this machine or of a stated one."""

from __future__ import annotations

import os
from typing import Any

from pickvariant import api
from pickvariant._base.records import keyword_record
from pickvariant._base.request import Request
from pickvariant.commands.verify import default_python
from pickvariant.machine.facts import states_a_machine
from pickvariant.output import report as reporter
from pickvariant.sources.build import Catalog


@keyword_record
class Report:
    """A support ticket's block as data: `output/report.markdown` renders it, JSON prints it."""

    data: dict[str, Any]
    described: bool  # a stated machine, not this one


def report(request: Request, python: str | None, catalog: Catalog) -> Report:
    """The report's content. With a stated CPU, GPU or driver it describes that machine: what is not stated is "not
    stated", never this machine's (nothing here is detected, not even the installed PyTorch)."""
    described = states_a_machine(request, os.environ)
    choice = api.recommend_request(request, catalog=catalog, detect_unstated=not described)
    pythons = [python] if python else ([] if described else default_python())
    data = reporter.build(choice.catalog, choice.facts, choice.decision, request.workload, pythons, described=described)
    return Report(data=data, described=described)
