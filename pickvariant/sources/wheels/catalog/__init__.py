"""The wheels source's catalog: the facts of each release (data/wheel-facts.json, each with its confidence and
sources), the wheel catalog derived from them (data/wheels.json), how it is loaded, and how `catalog wheels
--refresh` reads the releases an index holds beyond them from their wheels. Below the rules: nothing here judges a
machine or installs."""
