"""pickvariant's own cache of one recipe repository (`~/.cache/pickvariant/recipes/KEY/`): its repositories made
whole or not at all, in folders only this user controls, used by one process at a time, and read with every file's
content checked against its id, so that a copy damaged or replaced on disk is never served."""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pickvariant._base.deadline import Deadline
from pickvariant._base.errors import OperationFailed
from pickvariant._base.files import check_own_folder, own_folders, write_atomic
from pickvariant._base.git import run_git
from pickvariant._base.records import keyword_record
from pickvariant._base.urls import public_url


def cache_key(repo: str) -> str:
    shown = public_url(repo)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", shown.rstrip("/").split("://")[-1])[-60:].strip("._") or "repo"
    return f"{readable}-{hashlib.sha256(shown.encode('utf-8')).hexdigest()[:12]}"


@contextlib.contextmanager
def locked(root: Path, deadline: Deadline, repo: str) -> Iterator[None]:
    """The cache of one repository, for this process alone: clusters with a shared home fetch at once."""
    try:
        # O_NOFOLLOW: a link planted in the cache's place is never followed (the folder is the user's own, checked).
        handle = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as error:
        raise OperationFailed(f"cannot lock the recipe cache {root}: {error.strerror or error}") from None
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                deadline.left()
                time.sleep(0.05)
        yield
    finally:
        os.close(handle)


def _bare_repository(path: Path, repo: str, config: tuple[tuple[str, str], ...] = ()) -> None:
    """A bare repository of pickvariant's own at `path`, unless one is there: made beside its place and
    renamed into it, so that an interrupted init leaves nothing half made. Its folders are the user's alone
    (0700, whatever the umask): the cache's folders are checked for that before each use."""
    if os.path.lexists(path):
        check_own_folder(path)  # never a link to somebody's repository: it would be written into
        if (path / "HEAD").is_file():
            return
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    run_git(["init", "--bare", "--quiet", str(staging)], repo, path.parent)
    for key, value in config:
        run_git(["config", key, value], repo, staging)
    for folder in (staging, staging / "objects", staging / "objects" / "info"):
        os.chmod(folder, 0o700)
    os.rename(staging, path)


def init_cache_repository(git_dir: Path, repo: str) -> None:
    # A partial clone whose remote has no address on disk (the address may carry credentials): each fetch names it.
    _bare_repository(
        git_dir,
        repo,
        (
            ("remote.origin.promisor", "true"),
            ("extensions.partialclone", "origin"),
            ("core.repositoryformatversion", "1"),
        ),
    )


def reader_repository(root: Path, git_dir: Path, repo: str) -> Path:
    """A repository that sees the cache's objects and nothing else: no promisor remote, so a missing
    object is missing, never fetched behind pickvariant's back (the cache repository itself would
    fetch any object it lacks from its partial-clone remote, a 300 MB file included)."""
    reader = root / "read.git"
    _bare_repository(reader, repo)
    info = own_folders(reader, "objects", "info")  # each checked: no link in the way is followed
    write_atomic(info / "alternates", str((git_dir / "objects").resolve()) + "\n")
    return reader


class Unread(enum.Enum):
    """Why the cache gave no recipe text."""

    ABSENT = "the commit is not in the cache"
    LEFT_OUT = "the commit is here, its file is not: the fetch's size filter kept it out"
    DAMAGED = "the file's content is not what its id says: the cache is made anew"


def read_recipe(repo: str, commit: str, path: str, reader: Path) -> str | Unread:
    """The recipe at `commit` from the cache's object store, its content checked against its id.

    Otherwise why not; a damaged file is fetched again, never served."""
    try:
        blob = run_git(["rev-parse", "--verify", "--quiet", f"{commit}:{path}"], repo, reader).decode().strip()
    except OperationFailed:
        return Unread.ABSENT
    try:
        content = run_git(["cat-file", "blob", blob], repo, reader)
    except OperationFailed:
        return Unread.LEFT_OUT
    if hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest() != blob:
        return Unread.DAMAGED
    return content.decode("utf-8", "replace")


@keyword_record
class Cache:
    """One repository's part of the recipe cache: folders only this user controls."""

    root: Path
    git_dir: Path
    reader: Path


def open_cache(root: Path, repo: str) -> Cache:
    """The cache's repositories, made if missing (under the lock: another process may be making them too)."""
    try:
        git_dir = root / "git"
        init_cache_repository(git_dir, repo)
        check_own_folder(git_dir)
        reader = reader_repository(root, git_dir, repo)
    except (OperationFailed, OSError) as error:
        raise OperationFailed(f"cannot set up the recipe cache {root}: {error}") from None
    return Cache(root=root, git_dir=git_dir, reader=reader)


def tip_file(own: Cache, branch: str) -> Path:
    return own_folders(own.root, "branches") / branch.replace("/", "%2F")
