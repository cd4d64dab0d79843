"""The command line. The console script is entry.py: `detect --format json` is answered there without typer
(importing typer costs more than detecting and deciding); every other command line goes to the typer app in
main.py. options.py declares the options that describe a machine or pin a choice, once, for both; console.py
ends every command (streams, error lines, exit codes). One module per command holds its options and handler.

Nothing is imported here: `pickvariant.cli.entry` must load no more than it needs."""
