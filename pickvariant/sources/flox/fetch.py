"""A variant's own recipe from the recipe repository (the upstream build repository, a fork, a mirror
or a local clone), fetched with real git, kept in a cache repository of pickvariant's own, and checked
against the catalog row before anything uses it.

Only the variant's branch is fetched, one commit deep, with no file larger than a recipe may be (a
partial clone, `--filter=blob:limit`); a file the filter left out is refused as too large without
ever being downloaded. The recipe is read from git's object store and its content checked against
the id the commit's tree gives it, so a cache file truncated or replaced on disk is never served.
Fetches into one cache take turns (a lock), and every network operation of one fetch shares one
time limit (PICKVARIANT_NETWORK_TIMEOUT, seconds). The repository's address is recorded, printed and
named in the cache without the credentials it may carry.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.files import check_own_folder, check_path_length, own_folders, read_regular, write_atomic
from pickvariant._base.git import GitTimeout, run_git
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.urls import public_url
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.flox.classify import RecipeClassifier
from pickvariant.sources.flox.nixtext import NotNix, parse

NIX_PARSE_TIMEOUT_S = 60
DEFAULT_NETWORK_TIMEOUT_S = settings.DEFAULT_NETWORK_TIMEOUT_S
MAX_RECIPE_BYTES = 1024 * 1024
GENERATE_HINT = "or generate it with --generate"
# Fields of a catalog row that a fetched recipe must agree with, as sync derives them from it.
CHECKED_FIELDS = ("gpu_arch", "cpu_isa", "cuda", "platform", "torch", "python", "nixpkgs_rev", "cudnn")


class MissingBranch(OperationFailed):
    """The repository answered, and has no such branch: no cached copy stands in for it."""


@keyword_record
class FetchedRecipe:
    text: str
    repo: str
    branch: str
    commit: str
    path: str
    from_cache: bool
    notes: tuple[str, ...] = ()

    def with_note(self, note: str) -> FetchedRecipe:
        return replace(self, notes=(*self.notes, note))

    def provenance(self) -> dict[str, str]:
        return {"repo": self.repo, "branch": self.branch, "commit": self.commit, "path": self.path}


def recipes_repo(catalog: Catalog, repo: str | None, env: Mapping[str, str]) -> str:
    """--repo, else PICKVARIANT_RECIPES_REPO, else the repository the catalog was synced from."""
    stated = settings.setting(env, settings.RECIPES_REPO)
    if repo is None and stated is not None and "://" not in stated:
        check_path_length(stated, settings.RECIPES_REPO)
    chosen = repo if repo is not None else stated or catalog.source.repo
    if chosen.startswith("-"):
        raise BadInput(f"recipe repository {chosen!r:.80} starts with '-': give a URL or a path")
    if "://" not in chosen and Path(chosen).exists():
        # The cache's own git repository fetches from it, so a relative path must not depend on where that is.
        return str(Path(chosen).resolve())
    return chosen


def _cache_key(repo: str) -> str:
    shown = public_url(repo)
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", shown.rstrip("/").split("://")[-1])[-60:].strip("._") or "repo"
    return f"{readable}-{hashlib.sha256(shown.encode('utf-8')).hexdigest()[:12]}"


class _Deadline:
    """One time limit shared by every git call of a fetch."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self, repo: str) -> float:
        if self.end - time.monotonic() <= 0:
            raise self.expired(repo)
        return self.end - time.monotonic()

    def expired(self, repo: str) -> OperationFailed:
        return OperationFailed(
            f"fetching from {public_url(repo)} took longer than {self.seconds:g} s in all "
            f"(set {settings.NETWORK_TIMEOUT} to allow more)"
        )


@contextlib.contextmanager
def _locked(root: Path, deadline: _Deadline, repo: str) -> Iterator[None]:
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
                deadline.left(repo)
                time.sleep(0.05)
        yield
    finally:
        os.close(handle)


def _remote_commit(repo: str, branch: str, git_dir: Path, deadline: _Deadline) -> tuple[str, str]:
    """(commit, ref) of the branch's tip: its own branch, or in a plain clone the remote-tracking one
    (`origin/BRANCH`), as catalog sync reads such a clone."""
    wanted = (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}")
    try:
        out = run_git(["ls-remote", "--", repo, *wanted], repo, git_dir, timeout_s=deadline.left(repo))
    except GitTimeout:
        raise deadline.expired(repo) from None
    found = {}
    for line in out.decode("utf-8", "replace").splitlines():
        commit, _, ref = line.partition("\t")
        if ref in wanted and re.fullmatch(r"[0-9a-f]{40}", commit):
            found[ref] = commit
    for ref in wanted:
        if ref in found:
            return found[ref], ref
    raise MissingBranch(
        f"{public_url(repo)} has no branch {branch}; give the repository that has it with --repo, {GENERATE_HINT}"
    )


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


def _init(git_dir: Path, repo: str) -> None:
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


def _fetch(repo: str, branch: str, ref: str, git_dir: Path, deadline: _Deadline) -> None:
    """Fetch `ref` (a branch's ref, or a commit the catalog recorded) one commit deep into the cache."""
    # A local repository's upload-pack is started by this git, and told to honour the size filter and a want of
    # any commit it holds (a server decides that for itself); it is git's own program, which git keeps safe in
    # untrusted repositories.
    local = (
        ()
        if (re.match(r"^[a-z][a-z0-9+.-]*://", repo) and not repo.startswith("file://"))
        or re.match(r"^[\w.-]+@[\w.-]+:", repo)
        else ("--upload-pack=git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack",)
    )
    try:
        run_git(
            [
                "fetch",
                "--quiet",
                *local,
                "--depth",
                "1",
                f"--filter=blob:limit={MAX_RECIPE_BYTES}",
                "--no-tags",
                "origin",
                f"+{ref}:refs/remotes/origin/{branch}",
            ],
            repo,
            git_dir,
            timeout_s=deadline.left(repo),
            config=(f"remote.origin.url={repo}",),
        )
    except GitTimeout:
        raise deadline.expired(repo) from None


def _reader(root: Path, git_dir: Path, repo: str) -> Path:
    """A repository that sees the cache's objects and nothing else: no promisor remote, so a missing
    object is missing, never fetched behind pickvariant's back (the cache repository itself would
    fetch any object it lacks from its partial-clone remote, a 300 MB file included)."""
    reader = root / "read.git"
    _bare_repository(reader, repo)
    info = own_folders(reader, "objects", "info")  # each checked: no link in the way is followed
    write_atomic(info / "alternates", str((git_dir / "objects").resolve()) + "\n")
    return reader


class _Unread(enum.Enum):
    """Why the cache gave no recipe text."""

    ABSENT = "the commit is not in the cache"
    LEFT_OUT = "the commit is here, its file is not: the fetch's size filter kept it out"
    DAMAGED = "the file's content is not what its id says: the cache is made anew"


def _read_recipe(repo: str, commit: str, path: str, reader: Path) -> str | _Unread:
    """The recipe at `commit` from the cache's object store, its content checked against its id.

    Otherwise why not; a damaged file is fetched again, never served."""
    try:
        blob = run_git(["rev-parse", "--verify", "--quiet", f"{commit}:{path}"], repo, reader).decode().strip()
    except OperationFailed:
        return _Unread.ABSENT
    try:
        content = run_git(["cat-file", "blob", blob], repo, reader)
    except OperationFailed:
        return _Unread.LEFT_OUT
    if hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest() != blob:
        return _Unread.DAMAGED
    return content.decode("utf-8", "replace")


def fetch_checked(
    variant: Variant, catalog: Catalog, repo: str | None, cache: Path, env: Mapping[str, str]
) -> FetchedRecipe:
    """Fetch the variant's recipe and check it, with the classifier sync uses, on the bytes served; notes of both.

    From the repository the catalog was made from, the recipe is fetched at the commit the catalog recorded for its
    branch. Another repository (--repo, PICKVARIANT_RECIPES_REPO: a fork, a mirror) has no such commit of its own:
    its branch's tip is served, said, and checked on its own, never taking the catalog's verdict for other bytes."""
    chosen = recipes_repo(catalog, repo, env)
    recorded = catalog.branch(variant.branch).commit
    own_source = public_url(chosen) == public_url(catalog.source.repo)
    fetched = fetch_recipe(variant, chosen, cache, settings.network_timeout(env), recorded if own_source else None)
    if not own_source and fetched.commit != recorded:
        fetched = fetched.with_note(
            f"served from {fetched.repo} at {fetched.commit[:12]}, not from {public_url(catalog.source.repo)} at "
            f"{recorded[:12]} where the catalog was made: checked on its own"
        )
    return replace(fetched, notes=check_recipe(fetched, variant, catalog))


@keyword_record
class _Cache:
    """One repository's part of the recipe cache: folders only this user controls."""

    root: Path
    git_dir: Path
    reader: Path


def _open_cache(root: Path, repo: str) -> _Cache:
    """The cache's repositories, made if missing (under the lock: another process may be making them too)."""
    try:
        git_dir = root / "git"
        _init(git_dir, repo)
        check_own_folder(git_dir)
        reader = _reader(root, git_dir, repo)
    except (OperationFailed, OSError) as error:
        raise OperationFailed(f"cannot set up the recipe cache {root}: {error}") from None
    return _Cache(root=root, git_dir=git_dir, reader=reader)


def fetch_recipe(
    variant: Variant,
    repo: str,
    cache: Path,
    timeout_s: float = DEFAULT_NETWORK_TIMEOUT_S,
    pinned: str | None = None,
) -> FetchedRecipe:
    """The variant's recipe at `pinned` (the commit the catalog recorded for its branch), else at the branch's tip.

    A branch whose tip moved since is said. Unreachable repository: the cached copy of the pinned commit alone (of the
    last tip fetched, where nothing is pinned), with a note; none cached: OperationFailed."""
    deadline = _Deadline(timeout_s)
    root = own_folders(cache, "recipes", _cache_key(repo))
    with _locked(root, deadline, repo):
        own = _open_cache(root, repo)
        try:
            tip, ref = _remote_commit(repo, variant.branch, own.git_dir, deadline)
        except MissingBranch:
            raise
        except OperationFailed as unreachable:
            return _offline(variant, repo, own, pinned, unreachable)
        wanted, notes = _wanted_commit(variant, repo, own, tip, pinned, deadline)
        text = _read_recipe(repo, wanted, variant.path, own.reader)
        if isinstance(text, str):
            return _fetched(variant, repo, wanted, text, from_cache=True, notes=notes)
        _fetch_into(own, repo, variant, wanted if wanted != tip else ref, text, deadline)
        text = _read_recipe(repo, wanted, variant.path, own.reader)
        if text is _Unread.LEFT_OUT:
            # The filter left it out unread: a file over the limit is never downloaded.
            raise OperationFailed(
                f"{public_url(repo)} {variant.branch}:{variant.path} at {wanted[:12]} is larger than {MAX_RECIPE_BYTES} bytes: too large to be a recipe"
            )
        if not isinstance(text, str):
            raise OperationFailed(
                f"{public_url(repo)} {variant.branch} at {wanted[:12]} has no {variant.path} that can be read; {GENERATE_HINT}"
            )
        write_atomic(_tip_file(own, variant.branch), wanted + "\n")
        return _fetched(variant, repo, wanted, text, from_cache=False, notes=notes)


def _fetched(
    variant: Variant, repo: str, commit: str, text: str, from_cache: bool, notes: tuple[str, ...]
) -> FetchedRecipe:
    return FetchedRecipe(
        text=text,
        repo=public_url(repo),
        branch=variant.branch,
        commit=commit,
        path=variant.path,
        from_cache=from_cache,
        notes=notes,
    )


def _tip_file(own: _Cache, branch: str) -> Path:
    return own_folders(own.root, "branches") / branch.replace("/", "%2F")


def _wanted_commit(
    variant: Variant,
    repo: str,
    own: _Cache,
    tip: str,
    pinned: str | None,
    deadline: _Deadline,
) -> tuple[str, tuple[str, ...]]:
    """The commit to serve and what to say of it: the pinned one, which the repository must still hold."""
    shown = public_url(repo)
    if pinned is None or pinned == tip:
        return tip, ()
    moved = f"{shown} {variant.branch} moved to {tip[:12]} since the catalog was made from {pinned[:12]}"
    if isinstance(_read_recipe(repo, pinned, variant.path, own.reader), str):
        return pinned, (f"{moved}: the recipe is served at {pinned[:12]}",)
    try:
        _fetch(repo, variant.branch, pinned, own.git_dir, deadline)
    except OperationFailed:
        raise OperationFailed(
            f"{shown} no longer holds {pinned[:12]}, the commit of {variant.branch} the catalog was made from: "
            "sync the catalog again (pickvariant catalog sync), or give the repository that holds it with --repo"
        ) from None
    return pinned, (f"{moved}: the recipe is fetched at {pinned[:12]}",)


def _fetch_into(own: _Cache, repo: str, variant: Variant, wanted: str, unread: _Unread, deadline: _Deadline) -> None:
    """Fetch `wanted` (a ref or a commit) into the cache; the cache's repository is made anew once if that fails."""
    try:
        if unread is _Unread.DAMAGED:
            # git would trust the damaged object and not fetch it again: the cache starts over.
            raise OperationFailed(f"the cached copy of {variant.path} is damaged")
        _fetch(repo, variant.branch, wanted, own.git_dir, deadline)
    except OperationFailed as error:
        # An interrupted earlier fetch can leave locks or a half-written shallow file: start the
        # cache's repository over once, within the same time limit, before giving up.
        shutil.rmtree(own.git_dir, ignore_errors=True)
        try:
            _init(own.git_dir, repo)
            _fetch(repo, variant.branch, wanted, own.git_dir, deadline)
        except OperationFailed:
            raise OperationFailed(
                f"cannot fetch {variant.path} of {variant.branch} from {public_url(repo)}: {error}; {GENERATE_HINT}"
            ) from None


def _offline(
    variant: Variant, repo: str, own: _Cache, pinned: str | None, unreachable: OperationFailed
) -> FetchedRecipe:
    """The cached recipe of the pinned commit (else of the last tip fetched) when the repository cannot be reached."""
    shown = public_url(repo)
    wanted = pinned
    if wanted is None:
        try:
            tip_file = _tip_file(own, variant.branch)
            wanted = read_regular(tip_file, 64, "the recipe cache's record", follow=False).decode().strip()
        except (BadInput, UnicodeDecodeError):
            wanted = None
    text = (
        _read_recipe(repo, wanted, variant.path, own.reader)
        if wanted and re.fullmatch(r"[0-9a-f]{40}", wanted)
        else _Unread.ABSENT
    )
    if wanted and isinstance(text, str):
        note = f"{shown} could not be reached ({unreachable}); using the recipe cached from commit {wanted[:12]}"
        return _fetched(variant, repo, wanted, text, from_cache=True, notes=(note,))
    held = f" at {pinned[:12]} (the commit the catalog was made from)" if pinned else ""
    raise OperationFailed(
        f"cannot fetch {variant.path} of {variant.branch}{held} from {shown}: {unreachable}; {GENERATE_HINT}"
    ) from None


def _pname_matches(pname: str, variant: Variant) -> bool:
    # The build repository's 2.10 recipes spell the PyTorch version into pname
    # (pytorch210-python313-…) while the file, which names the Flox package, does not.
    major, minor = variant.torch.split(".")[:2]
    return pname in (variant.package, variant.package.replace("pytorch-", f"pytorch{major}{minor}-", 1))


def check_recipe(fetched: FetchedRecipe, variant: Variant, catalog: Catalog) -> tuple[str, ...]:
    """Notes when the fetched recipe is the catalog's variant; OperationFailed naming the field that differs.

    The recipe is classified by the catalog's own hardware facts: the ones its rows were derived with."""
    where = f"{fetched.repo} {fetched.branch}:{fetched.path} at {fetched.commit[:12]}"
    notes = list(fetched.notes)
    notes.append(_nix_parse(fetched.text, where))
    try:
        pnames = parse(fetched.text).string_binding("pname") or []
    except NotNix as error:
        raise OperationFailed(f"the recipe {where} cannot be read as Nix reads it: {error}") from None
    if len(set(pnames)) != 1 or not _pname_matches(pnames[0], variant):
        shown = ", ".join(sorted(set(pnames))) or "none"
        raise OperationFailed(
            f"the recipe {where} does not match the catalog: its pname is {shown}, the catalog's package {variant.package}"
        )
    classifier = RecipeClassifier(catalog.hardware)
    row, why, _ = classifier.classify(variant.branch, variant.path, variant.package, fetched.text)
    if row is None:
        raise OperationFailed(f"the recipe {where} does not match the catalog: {why}")
    differing = [
        f"its {name} is {row[name]!r}, the catalog's {getattr(variant, name)!r}"
        for name in CHECKED_FIELDS
        if row[name] != getattr(variant, name)
    ]
    if differing:
        raise OperationFailed(f"the recipe {where} does not match the catalog: {'; '.join(differing)}")
    return tuple(note for note in notes if note)


def _nix_parse(text: str, where: str) -> str:
    """'' when nix-instantiate parsed it, a note when there is none to ask; OperationFailed when it does not parse."""
    nix = shutil.which("nix-instantiate")
    if nix is None:
        return "not parsed: nix-instantiate is not installed (Flox and Nix bring it)"
    with tempfile.TemporaryDirectory(prefix="pickvariant-recipe-") as directory:
        file = Path(directory) / "recipe.nix"
        file.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run(
                [nix, "--parse", str(file)], capture_output=True, text=True, timeout=NIX_PARSE_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise OperationFailed(
                f"nix-instantiate --parse of {where} took longer than {NIX_PARSE_TIMEOUT_S} s"
            ) from None
    if result.returncode != 0:
        message = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise OperationFailed(
            f"the recipe {where} is not valid Nix: {message[0] if message else 'nix-instantiate --parse failed'}"
        )
    return ""
