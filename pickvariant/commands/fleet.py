"""`pickvariant fleet PLAN.json RESULTS…`: the plan read back, every verify line gathered (files, directories of
them, or - for stdin), and the fleet's verdict (rules/fleet.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import IO

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant.rules.cluster_input import documents
from pickvariant.rules.fleet import FleetVerdict, fleet_verdict, gather


@keyword_record
class FleetOptions:
    plan: str
    results: tuple[str, ...]


def _all_documents(paths: Sequence[str], stdin: IO[bytes]) -> Iterator[tuple[str, bytes | None, str | None]]:
    return itertools.chain.from_iterable(documents(path, stdin) for path in paths)


def run(options: FleetOptions, stdin: IO[bytes]) -> FleetVerdict:
    from pickvariant.commands.plan_install import read_plan

    if not options.results:
        raise BadInput("fleet needs the verify lines: give RESULTS (files, directories of them, or - for stdin)")
    if options.plan == "-" and "-" in options.results:
        raise BadInput("the plan and the results cannot both be read from stdin (-)")
    plan = read_plan(options.plan)
    planned = {node.label for node in plan.nodes}
    return fleet_verdict(plan, gather(_all_documents(options.results, stdin), planned))
