"""Which commits of a synced repository are the trusted upstream's, and the recipes and files they hold.

Trusted:
- the build repositories pickvariant ships facts for, at the commits its shipped catalogs were synced from
  (catalog.json's branches, catalog.companions.json's companion sources): wherever a synced repository holds one of
  them, it and its history are upstream's; a repository synced by one of their URLs is upstream whole (the user
  synced the upstream itself);
- every branch of each repository named with `--upstream`;
- what a synced branch shares with those: its merge base with them (a fork's recipes that are as it forked them).
A repository named with `--trust-recipes` is not compared at all: its recipes are classified by their names and
declared values, and every answer that uses one says so (catalog `trusted_by_user`).
"""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from pickvariant._base.records import record
from pickvariant._base.urls import public_url
from pickvariant.sources.flox.recipes import companions
from pickvariant.sources.flox.recipes.classify import name_refusal
from pickvariant.sources.flox.recipes.declared import Reading, read
from pickvariant.sources.flox.recipes.nixtext import NotNix
from pickvariant.sources.flox.recipes.repository import RECIPE_DIR, GitRepository, is_url
from pickvariant.sources.flox.recipes.trusted import TrustedRecipe, Upstream, name_key

# How one recipe of a synced repository is read: (branch, path, package, blob, text, the PyTorch packages its
# branch classified) -> the recipe read, or why it is left out.
Judged = Callable[[str, str, str, str, str, Collection[str]], Reading | str]


@record
class Anchors:
    """The build repositories pickvariant ships facts for: their addresses and the commits it has facts of (each with
    the repository it is of)."""

    urls: frozenset[str]
    commits: tuple[tuple[str, str], ...]  # (commit, repository)


def same_repository(one: str, other: str) -> bool:
    """Two ways of naming one repository: URLs without credentials, `.git` or a final slash; paths resolved."""
    return _normal(one) == _normal(other)


def _normal(repo: str) -> str:
    if is_url(repo):
        return public_url(repo).rstrip("/").removesuffix(".git").lower()
    return str(Path(repo).resolve())


@functools.cache
def shipped_anchors() -> Anchors:
    """What the shipped catalog and its companions were synced from (read once, as data)."""
    from pickvariant.sources.flox.recipes.load import SHIPPED_CATALOG
    from pickvariant.sources.flox.recipes.stack import companions_path

    urls: set[str] = set()
    commits: dict[str, str] = {}
    catalog = json.loads(Path(SHIPPED_CATALOG).read_text(encoding="utf-8"))
    companions = companions_path(Path(SHIPPED_CATALOG))
    sources = [{**catalog["source"], "branches": catalog["branches"]}]
    if companions.is_file():
        sources += json.loads(companions.read_text(encoding="utf-8"))["companion_sources"]
    for source in sources:
        urls.add(_normal(source["repo"]))
        for commit in [source["commit"], *(branch["commit"] for branch in source["branches"])]:
            commits.setdefault(commit, source["repo"])
    return Anchors(urls=frozenset(urls), commits=tuple(sorted(commits.items())))


def trusted_commits(
    repository: GitRepository, given_as: str, anchors: Anchors, upstreams: Sequence[GitRepository], index: int
) -> dict[str, str]:
    """The commits of `repository` that are upstream's, each with the repository it is shown as: the anchors it
    holds, every branch of each `--upstream` (fetched beside its own), all of it where it was synced by an upstream's
    URL, and each branch's merge base with those (the history it shares with the upstream)."""
    tips = [commit for _, commit in repository.branches()]
    of_repo = dict(anchors.commits)
    commits = {commit: public_url(of_repo[commit]) for commit in repository.commits_among(sorted(of_repo))}
    if is_url(given_as) and _normal(given_as) in anchors.urls:
        commits.update(dict.fromkeys(tips, repository.shown))
    for number, upstream in enumerate(upstreams):
        fetched = repository.fetch_refs(upstream, f"refs/pickvariant/upstream/{index}-{number}")
        commits.update(dict.fromkeys(fetched, upstream.shown))
    for tip in tips:
        if tip not in commits:
            shared = repository.merge_bases(tip, sorted(commits))
            commits.update(
                dict.fromkeys(shared - commits.keys(), f"{repository.shown} (history it shares with the upstream)")
            )
    return commits


def trusted_recipes(repository: GitRepository, commits: Mapping[str, str], reader: int) -> list[TrustedRecipe]:
    """Every recipe (a .nix file named as a package) at each trusted commit; each blob once per path."""
    found: dict[tuple[str, str], TrustedRecipe] = {}
    for commit, shown in sorted(commits.items()):
        for path, blob, size in repository.recipe_blobs(commit):
            package = _package(path)
            if package is None or name_key(package) is None or (path, blob) in found:
                continue
            where = f"{shown} at {commit[:12]}"
            found[(path, blob)] = TrustedRecipe(
                path=path, package=package, blob=blob, where=where, reader=reader, size=size
            )
    return list(found.values())


def _package(path: str) -> str | None:
    rest = path.removeprefix(RECIPE_DIR)
    if "/" not in rest and rest.endswith(".nix"):
        return rest.removesuffix(".nix")
    if rest.count("/") == 1 and rest.endswith("/default.nix"):
        return rest.split("/")[0]
    return None


class Trust:
    """One sync's trust: the upstream's recipes, its commits in each synced repository (by index: 0 the build
    repository, then its companion repositories), and which of those the user trusts whole."""

    def __init__(
        self, commits: Mapping[int, tuple[GitRepository, Mapping[str, str]]], whole: Collection[int] = ()
    ) -> None:
        self.commits = commits
        self.whole = frozenset(whole)
        recipes = [recipe for reader, (repo, held) in commits.items() for recipe in trusted_recipes(repo, held, reader)]
        readers = [commits[index][0].read_blobs for index in range(len(commits))]
        self.upstream = Upstream(recipes, readers)

    def judge(self, reader: int, branches: Mapping[str, str]) -> Judged:
        """How each recipe of one synced repository (`branches`: its commits by branch) is read, or why it is not."""

        def judged(
            branch: str, path: str, package: str, blob: str, text: str, siblings: Collection[str]
        ) -> Reading | str:
            named = companions.name_refusal(package) if companions.project_of(package) else name_refusal(package)
            if named:
                return named
            try:
                if reader in self.whole:
                    return read(text)
                if blob in self.upstream.blobs:
                    reading = read(text)
                else:
                    verdict = self.upstream.judge(package, text)
                    if verdict.why or verdict.skeleton is None:
                        return verdict.why or "not classified"
                    reading = read(text, verdict.skeleton)
            except NotNix as error:
                return f"the recipe cannot be read as Nix reads it: {error}"
            paths = reading.nix.paths
            why = self.foreign_files(reader, branches[branch], path, paths, siblings) if paths else None
            return why or reading

        return judged

    def foreign_files(
        self, reader: int, commit: str, recipe_path: str, paths: Sequence[tuple[str, int]], siblings: Collection[str]
    ) -> str | None:
        """Why a file the recipe brings in (a path literal) is not one the upstream carries, or None.

        Each must be, at the same path, the very object (a file or a folder) of an upstream commit; a PyTorch recipe
        of the same folder is one the sync classifies on its own (`siblings`: the packages it classified there)."""
        repository, trusted = self.commits[reader]
        folder = posixpath.dirname(recipe_path)
        wanted: list[tuple[str, int, str]] = []
        for literal, line in paths:
            resolved = _resolved(folder, literal)
            if resolved is None:
                return f"line {line} brings in {literal[:80]}, which is no file of the repository"
            package = _package(resolved) if resolved.endswith(".nix") else None
            if not (package and package in siblings and posixpath.dirname(resolved) == folder):
                wanted.append((literal, line, resolved))
        if not wanted:
            return None
        pairs = [(commit, resolved) for _, _, resolved in wanted]
        pairs += [(held, resolved) for _, _, resolved in wanted for held in sorted(trusted)]
        ids = repository.object_ids(pairs)
        for literal, line, resolved in wanted:
            own = ids.get((commit, resolved))
            if own is None or own not in {ids.get((held, resolved)) for held in trusted}:
                return f"line {line} brings in {literal[:80]}, which the trusted upstream does not carry as it is here"
        return None


def _resolved(folder: str, literal: str) -> str | None:
    """A path literal (`./lib/cpu-isa.nix`, `./.`) as a path of the repository, or None (absolute, `~`, outside)."""
    if not literal.startswith(("./", "../")) or "${" in literal:
        return None
    joined = posixpath.normpath(posixpath.join(folder, literal))
    return None if joined.startswith(("../", "/")) or joined == ".." else joined
