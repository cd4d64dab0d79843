"""Installing through Flox: the Flox contract (read from its source) and the install flows."""
