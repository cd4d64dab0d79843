"""Ctrl-C outside a command's own work ends the command at once with its one line; inside, it is a KeyboardInterrupt.

pickvariant/__init__.py takes over SIGINT as soon as the `pickvariant` command starts: a Ctrl-C while it loads
(typer, rich: a hundred milliseconds) or while typer parses and returns ends the process with "pickvariant:
interrupted" and 130, since a KeyboardInterrupt raised there escapes as a traceback or typer turns it into a silent
exit 130. While a command runs (`raising`) it is a KeyboardInterrupt again, which the command turns into stopping
what it started (flox, pip, the probe) before it ends, with the same line and code. A program that imports the
library keeps its own SIGINT handling: nothing here changes it.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module behind `signal`, which would load enum
import contextlib
from collections.abc import Iterator

from pickvariant import _interrupted_while_loading


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in this block, where the command process took it over; as it was elsewhere."""
    if _signal.getsignal(_signal.SIGINT) is not _interrupted_while_loading:
        yield
        return
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    try:
        yield
    finally:
        _signal.signal(_signal.SIGINT, _interrupted_while_loading)
