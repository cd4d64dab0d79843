"""Native libraries kept off pickvariant's standard output.

A C or C++ library writes to file descriptor 1 directly, past `sys.stdout`: HiGHS 1.16 prints its
banner ("Running HiGHS 1.16.0 … Copyright …") from the solver's constructor, before any option can turn
output off, so `plan --format json` would no longer be JSON. Such calls run inside `stdout_silenced()`,
which points fd 1 at /dev/null for their duration and flushes C's own buffers before pointing it back,
so nothing a library buffered reaches the real output later.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


def _flush_c_stdio() -> None:
    """Flush every C stdio stream (fflush(NULL)): a library's buffered writes go to /dev/null, not later to the user."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.fflush(None)
    except (OSError, AttributeError):  # no C library to ask (not expected on Linux or macOS): nothing buffered there
        pass


@contextlib.contextmanager
def stdout_silenced() -> Iterator[None]:
    """Within the block, whatever is written to file descriptor 1 (by Python or a native library) is discarded."""
    try:
        target = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
    except (OSError, ValueError):  # no real file descriptor behind stdout: nothing to guard
        yield
        return
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    saved = os.dup(target)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, target)
        finally:
            os.close(devnull)
        try:
            yield
        finally:
            _flush_c_stdio()
            os.dup2(saved, target)
    finally:
        os.close(saved)
