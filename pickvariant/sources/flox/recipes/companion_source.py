"""The Flox source's companions, as the rules ask for them (build.py's CompanionSource): those published beside the
catalog (catalog.companions.json, synced from the companion build repositories) and those generated on a variant's
own recipe from nixpkgs' expressions (generated.py).

Each is imported when first asked for: `detect` without --with reads neither file (nor loads the modules)."""

from __future__ import annotations

from pickvariant._base.records import record
from pickvariant.sources.build import Catalog, Companion, Variant

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection


@record
class FloxCompanions:
    def published(self, catalog: Catalog) -> tuple[Companion, ...]:
        from pickvariant.sources.flox.recipes.stack import load_stack

        return load_stack(catalog).companions

    def generated_projects(self) -> Collection[str]:
        from pickvariant.sources.flox.recipes import generated

        return generated.projects().keys()

    def why_not_generated(self, project: str, variant: Variant, pin_torch: str | None) -> str | None:
        from pickvariant.sources.flox.recipes import generated

        return generated.why_not_generated(project, variant, pin_torch)

    def generated_companion(self, project: str, variant: Variant) -> Companion:
        from pickvariant.sources.flox.recipes import generated

        return generated.generated_companion(project, variant)
