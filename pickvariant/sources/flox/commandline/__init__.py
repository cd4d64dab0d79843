"""The Flox source's own commands as the command line has them (`list`, `recipe`, `catalog sync`): their options and
handlers, which its Source names (sources/flox/plugin.py) and cli/main registers as it registers a third party's."""
