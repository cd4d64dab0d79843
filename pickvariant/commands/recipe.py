"""`recipe PACKAGE --with PROJECT -o DIR`: each companion's recipe generated on the variant's own, beside it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.request import projects_from
from pickvariant.catalog.model import Catalog, Companion, Variant
from pickvariant.recipes.render import render_companion
from pickvariant.rules.decision import SetRefusal
from pickvariant.rules.pairing import generated_set
from pickvariant.rules.wording import set_refusal


def companion_recipes(
    catalog: Catalog, variant: Variant, given: Sequence[str], output: Path | None, all_variants: bool
) -> list[tuple[Variant | Companion, str]]:
    """The generated companions' recipes for `variant`, in the order the projects were given; BadInput where one
    cannot be generated on it, or where they would have nowhere beside the variant's recipe to go."""
    if all_variants:
        raise BadInput("--with generates the companions of one PACKAGE; --all renders a branch's PyTorch recipes")
    if output is None:
        raise BadInput(
            "--with writes the variant's recipe and each companion's beside it: give the directory with -o DIR"
        )
    found = generated_set(catalog, variant, projects_from(given, "--with"))
    if isinstance(found, SetRefusal):
        raise BadInput(f"--with: {set_refusal(found)}")
    return [(companion, render_companion(companion, variant, catalog)) for companion in found]
