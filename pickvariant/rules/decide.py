"""The recipes' decision: a pure function from facts, catalog and a request's pins to one Decision.

Nothing here looks at the machine. The one pick (rules/pick.py) runs the stages over the recipes' walk
(rules/recipe_walk.py: the grid's stages in rules/stages.py and rules/pairing.py, ranked by what compat.why_not
admits); rules/hints.py adds what would help, deciding again through the same pick; rules/wording/ words every
reason.
"""

from __future__ import annotations

from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts
from pickvariant.rules.decision import RecipeDecision
from pickvariant.rules.pick import pick
from pickvariant.rules.recipe_walk import RecipeWalk
from pickvariant.sources.build import Catalog

__all__ = ["RecipeDecision", "decide"]


def decide(facts: HostFacts, catalog: Catalog, options: Request = Request(), with_hints: bool = True) -> RecipeDecision:
    """The variant for these facts, with reasons, rejections and (with_hints) what would help."""
    decision: RecipeDecision = pick(facts, RecipeWalk(catalog), options, with_hints)
    return decision
