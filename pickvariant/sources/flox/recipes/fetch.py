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

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.deadline import Deadline
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.files import check_path_length, own_folders, read_regular, write_atomic
from pickvariant._base.git import GitTimeout, run_git
from pickvariant._base.records import replace
from pickvariant._base.urls import public_url
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.flox.recipes.recipe_cache import (
    Cache,
    Unread,
    cache_key,
    init_cache_repository,
    locked,
    open_cache,
    read_recipe,
    tip_file,
)
from pickvariant.sources.flox.recipes.recipe_check import FetchedRecipe, check_recipe

DEFAULT_NETWORK_TIMEOUT_S = settings.DEFAULT_NETWORK_TIMEOUT_S
MAX_RECIPE_BYTES = 1024 * 1024
GENERATE_HINT = "or generate it with --generate"


class MissingBranch(OperationFailed):
    """The repository answered, and has no such branch: no cached copy stands in for it."""


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


def _remote_commit(repo: str, branch: str, git_dir: Path, deadline: Deadline) -> tuple[str, str]:
    """(commit, ref) of the branch's tip: its own branch, or in a plain clone the remote-tracking one
    (`origin/BRANCH`), as catalog sync reads such a clone."""
    wanted = (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}")
    try:
        out = run_git(["ls-remote", "--", repo, *wanted], repo, git_dir, timeout_s=deadline.left())
    except GitTimeout:
        raise deadline.expired() from None
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


def _fetch(repo: str, branch: str, ref: str, git_dir: Path, deadline: Deadline) -> None:
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
            timeout_s=deadline.left(),
            config=(f"remote.origin.url={repo}",),
        )
    except GitTimeout:
        raise deadline.expired() from None


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
    deadline = Deadline(settings.network_timeout(env), f"fetching {variant.path} of {variant.branch}")
    fetched = fetch_recipe(variant, chosen, cache, deadline.seconds, recorded if own_source else None)
    reference = None
    if fetched.commit != recorded:
        # Other bytes than the catalog's verdict was made on: read only where they are the recipe the catalog was made
        # from in all but values (trusted.py). That recipe comes from the same repository where it holds the commit
        # (its content is then the catalog's, by git's ids), else from the catalog's own.
        reference = _reference(variant, chosen, catalog, cache, deadline, recorded)
        fetched = fetched.with_note(
            f"served from {fetched.repo} at {fetched.commit[:12]}, not from {public_url(catalog.source.repo)} at "
            f"{recorded[:12]} where the catalog was made: held against the recipe the catalog was made from"
        )
    return replace(fetched, notes=check_recipe(fetched, variant, catalog, reference))


def _reference(
    variant: Variant, chosen: str, catalog: Catalog, cache: Path, deadline: Deadline, recorded: str
) -> FetchedRecipe:
    """The recipe at the commit the catalog recorded: from `chosen` where it holds it, else from the catalog's own."""
    try:
        return fetch_recipe(variant, chosen, cache, deadline.left(), recorded)
    except OperationFailed:
        return fetch_recipe(variant, catalog.source.repo, cache, deadline.left(), recorded)


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
    deadline = Deadline(timeout_s, f"fetching from {public_url(repo)}")
    root = own_folders(cache, "recipes", cache_key(repo))
    with locked(root, deadline, repo):
        own = open_cache(root, repo)
        try:
            tip, ref = _remote_commit(repo, variant.branch, own.git_dir, deadline)
        except MissingBranch:
            raise
        except OperationFailed as unreachable:
            return _offline(variant, repo, own, pinned, unreachable)
        wanted, notes = _wanted_commit(variant, repo, own, tip, pinned, deadline)
        text = read_recipe(repo, wanted, variant.path, own.reader)
        if isinstance(text, str):
            return _fetched(variant, repo, wanted, text, from_cache=True, notes=notes)
        _fetch_into(own, repo, variant, wanted if wanted != tip else ref, text, deadline)
        text = read_recipe(repo, wanted, variant.path, own.reader)
        if text is Unread.LEFT_OUT:
            # The filter left it out unread: a file over the limit is never downloaded.
            raise OperationFailed(
                f"{public_url(repo)} {variant.branch}:{variant.path} at {wanted[:12]} is larger than {MAX_RECIPE_BYTES} bytes: too large to be a recipe"
            )
        if not isinstance(text, str):
            raise OperationFailed(
                f"{public_url(repo)} {variant.branch} at {wanted[:12]} has no {variant.path} that can be read; {GENERATE_HINT}"
            )
        write_atomic(tip_file(own, variant.branch), wanted + "\n")
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


def _wanted_commit(
    variant: Variant,
    repo: str,
    own: Cache,
    tip: str,
    pinned: str | None,
    deadline: Deadline,
) -> tuple[str, tuple[str, ...]]:
    """The commit to serve and what to say of it: the pinned one, which the repository must still hold."""
    shown = public_url(repo)
    if pinned is None or pinned == tip:
        return tip, ()
    moved = f"{shown} {variant.branch} moved to {tip[:12]} since the catalog was made from {pinned[:12]}"
    if isinstance(read_recipe(repo, pinned, variant.path, own.reader), str):
        return pinned, (f"{moved}: the recipe is served at {pinned[:12]}",)
    try:
        _fetch(repo, variant.branch, pinned, own.git_dir, deadline)
    except OperationFailed:
        raise OperationFailed(
            f"{shown} no longer holds {pinned[:12]}, the commit of {variant.branch} the catalog was made from: "
            "sync the catalog again (pickvariant catalog sync), or give the repository that holds it with --repo"
        ) from None
    return pinned, (f"{moved}: the recipe is fetched at {pinned[:12]}",)


def _fetch_into(own: Cache, repo: str, variant: Variant, wanted: str, unread: Unread, deadline: Deadline) -> None:
    """Fetch `wanted` (a ref or a commit) into the cache; the cache's repository is made anew once if that fails."""
    try:
        if unread is Unread.DAMAGED:
            # git would trust the damaged object and not fetch it again: the cache starts over.
            raise OperationFailed(f"the cached copy of {variant.path} is damaged")
        _fetch(repo, variant.branch, wanted, own.git_dir, deadline)
    except OperationFailed as error:
        # An interrupted earlier fetch can leave locks or a half-written shallow file: start the
        # cache's repository over once, within the same time limit, before giving up.
        shutil.rmtree(own.git_dir, ignore_errors=True)
        try:
            init_cache_repository(own.git_dir, repo)
            _fetch(repo, variant.branch, wanted, own.git_dir, deadline)
        except OperationFailed:
            raise OperationFailed(
                f"cannot fetch {variant.path} of {variant.branch} from {public_url(repo)}: {error}; {GENERATE_HINT}"
            ) from None


def _offline(
    variant: Variant, repo: str, own: Cache, pinned: str | None, unreachable: OperationFailed
) -> FetchedRecipe:
    """The cached recipe of the pinned commit (else of the last tip fetched) when the repository cannot be reached."""
    shown = public_url(repo)
    wanted = pinned
    if wanted is None:
        try:
            record = tip_file(own, variant.branch)
            wanted = read_regular(record, 64, "the recipe cache's record", follow=False).decode().strip()
        except (BadInput, UnicodeDecodeError):
            wanted = None
    text = (
        read_recipe(repo, wanted, variant.path, own.reader)
        if wanted and re.fullmatch(r"[0-9a-f]{40}", wanted)
        else Unread.ABSENT
    )
    if wanted and isinstance(text, str):
        note = f"{shown} could not be reached ({unreachable}); using the recipe cached from commit {wanted[:12]}"
        return _fetched(variant, repo, wanted, text, from_cache=True, notes=(note,))
    held = f" at {pinned[:12]} (the commit the catalog was made from)" if pinned else ""
    raise OperationFailed(
        f"cannot fetch {variant.path} of {variant.branch}{held} from {shown}: {unreachable}; {GENERATE_HINT}"
    ) from None
