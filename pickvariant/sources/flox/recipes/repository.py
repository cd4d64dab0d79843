"""pickvariant's own copy of a build repository, read with git plumbing only (for `catalog sync`).

A local clone is never read in place: its own configuration could make git run programs (see
pickvariant/_base/git.py), so it is mirrored with --no-local, as a URL is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.deadline import Deadline
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.git import GIT_TIMEOUT_S, GitTimeout, run_git, stream_blobs
from pickvariant._base.urls import public_url

RECIPE_DIR = ".flox/pkgs/"
# A recipe is a few kilobytes; a blob far larger is not one, and is not read into memory.
MAX_RECIPE_BYTES = 1024 * 1024


@dataclass
class GitRepository:
    """pickvariant's own copy of a build repository (a mirror clone), read with plumbing commands only; every git
    call of one sync within the same deadline (`Deadline`)."""

    path: Path
    shown: str
    deadline: Deadline | None = None

    def run(self, *args: str, input_bytes: bytes | None = None) -> bytes:
        try:
            return run_git(list(args), self.shown, self.path, input_bytes, timeout_s=self._left())
        except GitTimeout:
            if self.deadline is not None:
                raise self.deadline.expired() from None
            raise

    def _left(self) -> float:
        return GIT_TIMEOUT_S if self.deadline is None else self.deadline.left(GIT_TIMEOUT_S)

    def branches(self) -> list[tuple[str, str]]:
        """(name, commit) of every local branch, and of origin's branches that have no local one."""
        listing = self.run("for-each-ref", "--format=%(refname)%00%(objectname)", "refs/heads", "refs/remotes/origin")
        local: dict[str, str] = {}
        remote: dict[str, str] = {}
        for line in listing.decode("utf-8", "replace").splitlines():
            ref, _, commit = line.partition("\0")
            if ref.startswith("refs/heads/"):
                local[ref.removeprefix("refs/heads/")] = commit
            elif ref.startswith("refs/remotes/origin/") and ref != "refs/remotes/origin/HEAD":
                remote[ref.removeprefix("refs/remotes/origin/")] = commit
        merged = {**remote, **local}
        return sorted(merged.items())

    def recipe_blobs(self, commit: str) -> list[tuple[str, str, int]]:
        """(path, blob id, size) of every file under .flox/pkgs/ at `commit`."""
        out = self.run("ls-tree", "-r", "-l", "-z", commit, "--", RECIPE_DIR)
        blobs = []
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            parts = meta.split()
            if len(parts) < 4 or parts[1] != b"blob":
                continue
            size = int(parts[3]) if parts[3].isdigit() else MAX_RECIPE_BYTES + 1
            blobs.append((path.decode("utf-8", "replace"), parts[2].decode(), size))
        return blobs

    def read_blobs(self, blob_ids: Sequence[str]) -> Iterator[tuple[str, bytes]]:
        """Each blob's content in turn, through one `git cat-file --batch`: one blob in memory at a time."""
        if blob_ids:
            yield from stream_blobs(self.path, self.shown, blob_ids, MAX_RECIPE_BYTES, timeout_s=self._left())

    def commits_among(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that are commits this repository holds."""
        wanted = sorted({commit for commit in ids if re.fullmatch(r"[0-9a-f]{40}", commit)})
        if not wanted:
            return set()
        out = self.run("cat-file", "--batch-check", input_bytes="".join(f"{c}\n" for c in wanted).encode())
        return {parts[0].decode() for parts in map(bytes.split, out.splitlines()) if parts[1:2] == [b"commit"]}

    def merge_bases(self, tip: str, others: Sequence[str]) -> set[str]:
        """The newest commits that `tip` shares with any of `others` (git merge-base --all against their union)."""
        if not others:
            return set()
        try:
            out = self.run("merge-base", "--all", tip, *sorted(others))
        except OperationFailed:  # no shared history: git exits 1
            return set()
        return set(out.decode().split())

    def object_ids(self, wanted: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        """The object id (a blob or a tree) at each (commit, path), None where the commit has nothing there."""
        if not wanted:
            return {}
        asked = "".join(f"{commit}:{path}\n" for commit, path in wanted).encode()
        lines = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)", input_bytes=asked).splitlines()
        found: dict[tuple[str, str], str | None] = {}
        for pair, line in zip(wanted, lines, strict=False):
            parts = line.split()
            found[pair] = parts[0].decode() if len(parts) == 2 and parts[1] in (b"blob", b"tree") else None
        return found

    def fetch_refs(self, other: GitRepository, prefix: str) -> list[str]:
        """Every branch of `other` (one of pickvariant's own copies) fetched under `prefix`; their commits."""
        self.run("fetch", "--quiet", "--no-tags", "--", str(other.path), f"+refs/heads/*:{prefix}/heads/*",
                 f"+refs/remotes/origin/*:{prefix}/origin/*")  # fmt: skip
        listing = self.run("for-each-ref", "--format=%(objectname)", prefix)
        return sorted(set(listing.decode().split()))

    def head(self) -> tuple[str, str]:
        try:
            commit = self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}").decode().strip()
        except OperationFailed:
            raise BadInput(
                f"{self.shown} has no commit (an empty repository): give a clone of the build repository"
            ) from None
        date = self.run("log", "-1", "--no-show-signature", "--format=%cI", commit).decode().strip()
        return commit, date


def is_url(repo: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", repo)) or bool(re.match(r"^[\w.-]+@[\w.-]+:", repo))


def open_repository(repo: str, workdir: Path, deadline: Deadline | None = None) -> GitRepository:
    """pickvariant's own mirror of `repo` (a URL, or a local clone), in `workdir`.

    A local clone is never read in place: its own configuration could make git run programs
    (see pickvariant/_base/git.py), so it is cloned with --no-local, as a URL is."""
    target = workdir / "clone.git"
    if is_url(repo):
        limit = deadline.left() if deadline is not None else settings.network_timeout(os.environ)
        try:
            run_git(
                ["clone", "--mirror", "--quiet", "--no-tags", "--", repo, str(target)], repo, workdir, timeout_s=limit
            )
        except GitTimeout:
            raise (
                deadline.expired()
                if deadline is not None
                else OperationFailed(
                    f"cloning {public_url(repo)} took longer than {limit:g} s (set {settings.NETWORK_TIMEOUT} to allow more)"
                )
            ) from None
        return GitRepository(target, public_url(repo), deadline)
    path = Path(repo)
    if not path.exists():
        raise BadInput(f"{repo!r:.200} is neither a URL nor an existing directory")
    if not path.is_dir():
        raise BadInput(f"{repo!r:.200} is not a directory (give a clone of the build repository)")
    limit = GIT_TIMEOUT_S if deadline is None else deadline.left(GIT_TIMEOUT_S)
    try:
        run_git(
            ["clone", "--mirror", "--no-local", "--quiet", "--", str(path.resolve()), str(target)],
            repo,
            workdir,
            timeout_s=limit,
        )
    except GitTimeout:
        raise (
            deadline.expired() if deadline is not None else OperationFailed(f"cloning {repo!r:.200} took too long")
        ) from None
    except OperationFailed as error:
        said = str(error).split(" failed: ", 1)[-1]
        if "belongs to another user" in said:
            raise BadInput(f"{repo!r:.200}: {said}") from None
        if not (path / ".git").exists() and not (path / "HEAD").is_file():
            # git's own words ("repository … does not exist") would say the directory is missing: it is not.
            raise BadInput(
                f"{repo!r:.200} is a directory but no git repository (no .git in it): give a clone of the build repository"
            ) from None
        raise BadInput(
            f"{repo!r:.200} is not a git repository (give a clone of the build repository); git says: {said}"
        ) from None
    return GitRepository(target, repo, deadline)


def origin_url(repo: str, workdir: Path) -> str | None:
    """The origin a local clone records, read from its config file as data (no git runs in the clone)."""
    path = Path(repo)
    config = path / ".git" / "config" if (path / ".git").is_dir() else path / "config"
    if not config.is_file():
        return None
    try:
        url = run_git(
            ["config", "--file", str(config.resolve()), "--no-includes", "--get", "remote.origin.url"], repo, workdir
        )
    except OperationFailed:
        return None
    return url.decode("utf-8", "replace").strip() or None
