"""What both command-line front ends share about the process: streams, error lines, exit codes, detect's JSON.

The typer app (main.py) and the typer-free answer to `detect --format json` (cli/entry.py) both end a command
here: pickvariant's one exception family becomes its exit code in exit_for, and nowhere else.
"""

from __future__ import annotations

import errno
import os
import sys

from pickvariant._base.errors import Interrupted, PickVariantError
from pickvariant._base.text import visible, visible_lines

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path
if TYPE_CHECKING:
    from typing import Any

OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF, errno.EFBIG, errno.EDQUOT})
INTERRUPTED = Interrupted.exit_code


def error_line(error: PickVariantError) -> str:
    """The stderr line for an error: a failed operation may add its log's tail; anything else is one line."""
    # An operation's failure may add its log's tail, line by line; every line is shown with its control characters visible.
    said = f"{error}: {error.hint}" if error.hint else str(error)
    message = visible_lines(said) if error.exit_code == 1 else visible(said)
    return f"pickvariant: {message}"


def exit_for(error: BaseException) -> tuple[str, int] | None:
    """The line for stderr and the exit code that end a command with `error`; None for anything else (a bug)."""
    if isinstance(error, PickVariantError):
        return error_line(error), error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return "pickvariant: interrupted", INTERRUPTED
    if isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
        # Every option and variable that names a path is checked where it is read; this is the net beneath them.
        shown = visible(os.fsdecode(error.filename)) if error.filename is not None else "a path"
        return f"pickvariant: {shown}: a name in the path is longer than this system allows", 2
    if isinstance(error, ImportError) and not (error.name or "pickvariant").startswith("pickvariant"):
        # A package pickvariant depends on is missing or does not load here (a broken or partial install): the
        # environment's fault, said in one line, not a traceback. One of pickvariant's own modules missing is a bug.
        name = visible(error.name or "")
        return (
            f"pickvariant: {name}, a package pickvariant needs, is not installed or does not load here "
            f"({visible(str(error))[:200]}): reinstall pickvariant with its dependencies, or pip install {name}",
            1,
        )
    return None


def text_width() -> int:
    """How wide the text answer is: the terminal's width where stdout is one, else 100 columns. shutil (bz2, lzma,
    zlib: milliseconds) is imported only where a terminal's width is asked."""
    if not sys.stdout.isatty():
        return 100
    import shutil

    return shutil.get_terminal_size().columns


def colours() -> bool:
    """Is the text answer's first line coloured: stdout a terminal, NO_COLOR unset, TERM not "dumb"."""
    import os

    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def prepare_streams() -> bool:
    """False when stdout is closed (`>&-`), after saying so; otherwise make encoding errors harmless."""
    if sys.stdout is None:
        print("pickvariant: standard output is closed: nothing could be printed", file=sys.stderr)
        return False
    for stream in (sys.stdout, sys.stderr):
        # An ASCII or Latin-1 locale must not turn a "…" or a box line into a traceback.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    return True


def output_failed(error: OSError) -> int | None:
    """stdout went away (a closed pipe) or filled up (a full disk): one line, exit 1, no second failure at exit.

    None when `error` is no failure of the output (a bug, to be raised)."""
    if error.errno not in OUTPUT_ERRNOS:
        return None
    if error.errno != errno.EPIPE:
        print(f"pickvariant: cannot write the output: {error.strerror or error}", file=sys.stderr)
    # The interpreter flushes stdout once more on the way out: point it where that cannot fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1


def usage_line(error: Any) -> str:
    """click's usage error as one line, with where to read more (click's own form spans three lines)."""
    # typer 0.25+ validates through pydantic, whose wording ("Value error, …") says nothing to a user.
    message = visible(error.format_message().replace("Value error, ", ""))
    ctx = getattr(error, "ctx", None)
    return f"pickvariant: {message} (see '{ctx.command_path} --help')" if ctx is not None else f"pickvariant: {message}"
