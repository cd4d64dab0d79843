"""One install at a time into one Flox environment, across processes (and hosts sharing the filesystem).

A job array that installs into one new `--dir` starts many pickvariants at once: each would see no `.flox`,
each would `flox init`, and the one whose init failed would remove what another made. Installs therefore
hold an exclusive lock while they change an environment: a POSIX record lock (`fcntl.lockf`, which NFS
carries between hosts, unlike `flock` on some of them) on a file in the environment's directory. The file is
removed when the install is done; a waiter that locked a file already removed tries again, so two holders
never overlap. What an install removes after a failure it decides while holding the lock: only what it
created itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pickvariant._base.errors import OperationFailed

LOCK_NAME = ".pickvariant-install.lock"


@contextlib.contextmanager
def locked(directory: Path, on_wait: Callable[[str], None]) -> Iterator[bool]:
    """Hold the environment's lock; yields whether this call created `directory` (to be removed on failure only
    if it is still empty). `on_wait` hears once when another install holds the lock."""
    created = not directory.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OperationFailed(f"cannot create {directory}: {error.strerror or error}") from error
    lock = directory / LOCK_NAME
    descriptor = _acquire(lock, on_wait)
    try:
        yield created
    except BaseException:
        _release(lock, descriptor)
        if created:
            with contextlib.suppress(OSError):  # only while it is still empty: nothing of anyone's is removed
                directory.rmdir()
        raise
    _release(lock, descriptor)


def _release(lock: Path, descriptor: int) -> None:
    with contextlib.suppress(OSError):
        lock.unlink()
    os.close(descriptor)


def _acquire(lock: Path, on_wait: Callable[[str], None]) -> int:
    told = False
    while True:
        descriptor, left = _open(lock)
        try:
            fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            left = False
            if not told:
                on_wait(f"» waiting for another pickvariant install into {lock.parent} to finish")
                told = True
            fcntl.lockf(descriptor, fcntl.LOCK_EX)  # the other install's whole run: as long as it takes
        # The holder before us may have removed the file we waited on: then ours is no lock at all.
        try:
            same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            same = False
        if same:
            if left:  # there before, held by nobody, not removed since: its install was killed before it could
                on_wait(f"» {lock.name} in {lock.parent} was left by an install that was killed: taken over")
            return descriptor
        os.close(descriptor)


def _open(lock: Path) -> tuple[int, bool]:
    """The lock file's descriptor, and whether it was there already (never a link planted in its place)."""
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)
    try:
        try:
            return os.open(lock, flags | os.O_CREAT | os.O_EXCL, 0o644), False
        except FileExistsError:
            pass
        try:
            return os.open(lock, flags), True
        except FileNotFoundError:  # removed between the two opens by the install that held it: made anew
            return os.open(lock, flags | os.O_CREAT, 0o644), False
    except OSError as error:
        raise OperationFailed(f"cannot lock {lock.parent} for this install: {error.strerror or error}") from error
