"""The Flox source, a plug-in in three parts: `recipes` (the build repositories' recipes read, classified, fetched and
rendered into the catalog, below the rules), `install` (Flox's steps: `flox install` of a published package or
`flox build` of a recipe into one environment, whole or put back), and `installation` (what `pickvariant install`
carries out, above the commands); `plugin` is the record the registry loads through the entry-point group."""
