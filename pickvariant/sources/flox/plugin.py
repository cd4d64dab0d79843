"""The Flox source as the registry names it: the build repository's recipes, walked by the recipes' walk through the
one pick. Its catalog is read through the Source (`catalog_path`, `load_recipes`), so that nothing outside sources/
names this package to read it."""

from __future__ import annotations

from pickvariant.sources.registry import Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.sources.build import Catalog


def _path() -> str:
    from pickvariant.sources.flox.recipes.load import default_catalog_path

    return default_catalog_path()


def _load(path: str) -> Catalog:
    from pickvariant.sources.flox.recipes.load import load_catalog

    return load_catalog(path)


# Its parts, as a third party names its own (the recipes' pipeline and the Flox installation).
PARTS = (
    ("pipeline", "pickvariant.pipelines.recipes:PIPELINE"),
    ("installation", "pickvariant.sources.flox.installation:flox_installation"),
)
# The commands only it has (the command line registers them from here).
COMMANDS = (
    ("list", "pickvariant.sources.flox.commandline.listing:list_variants"),
    ("recipe", "pickvariant.sources.flox.commandline.recipe:recipe"),
    ("catalog sync", "pickvariant.sources.flox.commandline.sync:catalog_sync"),
)
SOURCE = Source(name="flox", pipeline="recipes", catalog_path=_path, load_recipes=_load, parts=PARTS, commands=COMMANDS)
