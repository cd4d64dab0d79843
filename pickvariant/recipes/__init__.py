"""Recipes: fetching a build repository's own recipe, or rendering one from the templates."""
