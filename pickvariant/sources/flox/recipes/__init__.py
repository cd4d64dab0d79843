"""The Flox source's recipes: the catalog's model, how it is loaded and checked, how `catalog sync` derives it from
build repositories (and which of a fork's recipes it trusts), how a recipe is fetched or rendered, and its data
files. Below the rules: nothing here judges a machine or installs."""
