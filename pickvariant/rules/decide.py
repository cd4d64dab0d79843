"""The selection rules' entry: a pure function from facts, catalog and a request's pins to one Decision.

Nothing here looks at the machine. rules/pick.py runs the stages (rules/stages.py, rules/pairing.py) and ranks
what compat.why_not admits; rules/hints.py adds what would help, deciding again where a hint promises a variant;
rules/wording/ words every reason. This module puts the three together.
"""

from __future__ import annotations

from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts
from pickvariant.rules.decision import RecipeDecision
from pickvariant.rules.pick import pick
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Catalog

__all__ = ["RecipeDecision", "decide"]


def decide(facts: HostFacts, catalog: Catalog, options: Request = Request(), with_hints: bool = True) -> RecipeDecision:
    """The variant for these facts, with reasons, rejections and (with_hints) what would help."""
    picked = pick(facts, catalog, options)
    decision = picked.decision
    if picked.nothing is not None:  # no variant: the findings, then (deciding again) what would help
        found: tuple[str, ...] = ()
        hints: tuple[str, ...] = ()
        if with_hints:
            from pickvariant.rules import hints as helping  # only a machine nothing fits needs hints

            found, hints = helping.for_nothing(facts, catalog, options, picked, picked.nothing)
        why = (*picked.nothing.why, *found) or (recipe_wording.NOTHING_COMBINES,)
        # The driver stage may already have said what left nothing (a GPU it cannot drive): said once.
        return replace(decision, reasons=tuple(dict.fromkeys(decision.reasons + why)), hints=hints)
    if with_hints and picked.alone is not None:
        from pickvariant.rules import hints as helping

        set_hints = helping.for_set(facts, catalog, options, picked)
        return replace(decision, hints=tuple(dict.fromkeys((*set_hints, *decision.hints))))
    return decision
