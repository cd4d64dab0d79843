"""pickvariant: pick, build and verify the right custom PyTorch variant for this machine."""

__version__ = "0.1.0"


def _interrupted_while_loading(signum: int, frame: object) -> None:
    """Ctrl-C before the command's own handling is in place: the same one line and exit 130 as any later Ctrl-C."""
    import os

    os.write(2, b"pickvariant: interrupted\n")
    os._exit(130)


def _as_the_command() -> bool:
    """Is this the `pickvariant` command starting (the console script, or `python -m pickvariant`), not a program
    that imports the library? Only the command may take over Ctrl-C."""
    import sys

    name = sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] if sys.argv else ""
    return name in ("pickvariant", "pickvariant.exe") or list(getattr(sys, "orig_argv", ())[1:3]) == [
        "-m",
        "pickvariant",
    ]


def _take_over_ctrl_c() -> None:
    """The one-line exit on Ctrl-C first, then given back where this is no `pickvariant` command: the window in
    which a Ctrl-C raises a KeyboardInterrupt through this file is this function's first lines, not the check.
    Imported off the main thread (a library use), nothing is changed."""
    import _signal  # type: ignore[import-not-found]  # the C module: nothing more to load before the command is safe from a Ctrl-C

    previous = _signal.getsignal(_signal.SIGINT)
    if previous is not _signal.default_int_handler:
        return  # not Python's own start: whoever set it (a program embedding or importing this) keeps Ctrl-C
    try:
        _signal.signal(_signal.SIGINT, _interrupted_while_loading)
    except ValueError:
        return
    if not _as_the_command():
        _signal.signal(_signal.SIGINT, previous)


_take_over_ctrl_c()
