"""The Flox source, a plug-in whose parts each stand in the layer they belong to: `recipes` (the build repositories'
recipes read, classified, fetched and rendered into the catalog, below the rules), `install` (Flox's steps: `flox
install` of a published package or `flox build` of a recipe into one environment, whole or put back), `installation`
(what `pickvariant install` carries out, above the commands), `commands` and `commandline` (its own commands, `list`,
`recipe` and `catalog sync`: their work, and their options and handlers); `plugin` is the record the registry loads
through the entry-point group."""
