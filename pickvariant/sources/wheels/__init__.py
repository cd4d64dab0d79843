"""PyTorch's own wheels as a source of builds, a plug-in whose parts each stand in the layer they belong to: `catalog`
(the facts of each release, the wheel catalog derived from them, its loading and refresh, below the rules),
`commands` and `commandline` (its own command, `catalog wheels`: its work, and its options and handler); `plugin` is
the record the registry loads through the entry-point group. It installs with its kind's installation (pip or uv:
commands/prebuilt_install.py). Read only when this source is asked for: `detect` of the Flox source never loads it."""
