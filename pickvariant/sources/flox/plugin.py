"""The Flox source as the registry names it: the build repository's recipes, walked by the recipe stages."""

from pickvariant.sources.registry import Source

SOURCE = Source(name="flox", pipeline="recipes")
