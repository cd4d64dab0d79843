"""The work of the Flox source's own commands (`list`, `recipe`, `catalog sync`), below the command line that parses
their options (sources/flox/commandline/): no CLI library here."""
