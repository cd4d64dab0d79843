"""One module per command that orchestrates several stages: a plain function taking the Request and the
command's own options, returning a frozen result record. The command line only declares, calls and prints."""
