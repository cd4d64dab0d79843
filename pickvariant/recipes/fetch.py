"""A variant's own recipe from the recipe repository (the upstream build repository, a fork, a mirror
or a local clone), fetched with real git, cached by repository and commit, and checked against the
catalog row before anything uses it.

Only the variant's branch is fetched, one commit deep and without file contents (a partial clone);
git then fetches the one file asked for. A server that cannot filter sends the commit's tree whole,
which is still one commit.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pickvariant._base import settings
from pickvariant.catalog.model import Catalog, Variant
from pickvariant.catalog.classify import RecipeClassifier
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.files import write_atomic
from pickvariant._base.git import run_git
from pickvariant.catalog.nixtext import lex
from pickvariant._base.records import record

NIX_PARSE_TIMEOUT_S = 60
MAX_RECIPE_BYTES = 1024 * 1024
GENERATE_HINT = "or generate it with --generate"
# Fields of a catalog row that a fetched recipe must agree with, as sync derives them from it.
CHECKED_FIELDS = ("gpu_arch", "cpu_isa", "cuda", "platform", "torch", "python", "nixpkgs_rev", "cudnn")


class MissingBranch(OperationFailed):
    """The repository answered, and has no such branch: no cached copy stands in for it."""


@record
class FetchedRecipe:
    text: str
    repo: str
    branch: str
    commit: str
    path: str
    from_cache: bool
    notes: tuple[str, ...] = ()

    def provenance(self) -> dict[str, str]:
        return {"repo": self.repo, "branch": self.branch, "commit": self.commit, "path": self.path}


def recipes_repo(catalog: Catalog, repo: str | None, env: Mapping[str, str]) -> str:
    """--repo, else PICKVARIANT_RECIPES_REPO, else the repository the catalog was synced from."""
    chosen = repo if repo is not None else settings.setting(env, settings.RECIPES_REPO) or catalog.source.repo
    if chosen.startswith("-"):
        raise BadInput(f"recipe repository {chosen!r:.80} starts with '-': give a URL or a path")
    if "://" not in chosen and Path(chosen).exists():
        # The cache's own git repository fetches from it, so a relative path must not depend on where that is.
        return str(Path(chosen).resolve())
    return chosen


def _cache_key(repo: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", repo.rstrip("/").split("://")[-1])[-60:].strip("._") or "repo"
    return f"{readable}-{hashlib.sha256(repo.encode('utf-8')).hexdigest()[:12]}"


def _remote_commit(repo: str, branch: str) -> str:
    out = run_git(["ls-remote", "--heads", "--", repo, f"refs/heads/{branch}"], repo, timeout_s=120).decode("utf-8", "replace")
    for line in out.splitlines():
        commit, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}" and re.fullmatch(r"[0-9a-f]{40}", commit):
            return commit
    raise MissingBranch(f"{repo} has no branch {branch}; give the repository that has it with --repo, {GENERATE_HINT}")


def _fetch_file(repo: str, branch: str, path: str, git_dir: Path) -> tuple[str, bytes]:
    """(commit, content) of `path` at the tip of `branch`, into the cache's bare repository."""
    if not (git_dir / "HEAD").is_file():
        run_git(["init", "--bare", "--quiet", str(git_dir)], repo)
        for key, value in (("remote.origin.url", repo), ("remote.origin.promisor", "true"), ("remote.origin.partialclonefilter", "blob:none")):
            run_git(["-C", str(git_dir), "config", key, value], repo)
    run_git(["-C", str(git_dir), "fetch", "--quiet", "--depth", "1", "--filter=blob:none", "--no-tags", "origin",
             f"+refs/heads/{branch}:refs/remotes/origin/{branch}"], repo)
    commit = run_git(["-C", str(git_dir), "rev-parse", f"refs/remotes/origin/{branch}^{{commit}}"], repo).decode().strip()
    size = run_git(["-C", str(git_dir), "cat-file", "-s", f"{commit}:{path}"], repo).decode().strip()
    if not size.isdigit() or int(size) > MAX_RECIPE_BYTES:
        raise OperationFailed(f"{repo} {branch}:{path} is {size} bytes: too large to be a recipe")
    content = run_git(["-C", str(git_dir), "cat-file", "blob", f"{commit}:{path}"], repo)
    return commit, content


def fetch_checked(variant: Variant, catalog: Catalog, repo: str | None, cache: Path, env: Mapping[str, str]) -> FetchedRecipe:
    """Fetch the variant's recipe and check it; the notes of both come with it."""
    fetched = fetch_recipe(variant, recipes_repo(catalog, repo, env), cache)
    return FetchedRecipe(fetched.text, fetched.repo, fetched.branch, fetched.commit, fetched.path, fetched.from_cache, check_recipe(fetched, variant, catalog))


def fetch_recipe(variant: Variant, repo: str, cache: Path) -> FetchedRecipe:
    """The variant's recipe at the tip of its branch in `repo`, from the cache when that commit was fetched before.

    Unreachable repository: the last commit cached for the branch, with a note; none cached: OperationFailed."""
    root = cache / "recipes" / _cache_key(repo)
    tip_file = root / "branches" / variant.branch

    def cached(commit: str | None) -> str | None:
        # A cache file that cannot be read is a cache miss, never an error.
        try:
            return (root / "commits" / commit / variant.path).read_text(encoding="utf-8") if commit else None
        except (OSError, UnicodeDecodeError):
            return None

    try:
        commit = _remote_commit(repo, variant.branch)
    except MissingBranch:
        raise
    except OperationFailed as unreachable:
        try:
            last: str | None = tip_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            last = None
        text = cached(last)
        if last and text is not None:
            return FetchedRecipe(text, repo, variant.branch, last, variant.path, True,
                                 (f"{repo} could not be reached ({unreachable}); using the recipe cached from commit {last[:12]}",))
        raise OperationFailed(f"cannot fetch {variant.path} of {variant.branch} from {repo}: {unreachable}; {GENERATE_HINT}") from None
    text = cached(commit)
    if text is not None:
        return FetchedRecipe(text, repo, variant.branch, commit, variant.path, True)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OperationFailed(f"cannot create the recipe cache {root}: {error.strerror or error}; set XDG_CACHE_HOME to a writable directory") from None
    git_dir = root / "git"
    try:
        fetched_commit, content = _fetch_file(repo, variant.branch, variant.path, git_dir)
    except OperationFailed:
        # An interrupted earlier fetch can leave locks or a half-written shallow file: start the
        # cache's repository over once before giving up.
        shutil.rmtree(git_dir, ignore_errors=True)
        try:
            fetched_commit, content = _fetch_file(repo, variant.branch, variant.path, git_dir)
        except OperationFailed as error:
            raise OperationFailed(f"cannot fetch {variant.path} of {variant.branch} from {repo}: {error}; {GENERATE_HINT}") from None
    text = content.decode("utf-8", "replace")
    write_atomic(root / "commits" / fetched_commit / variant.path, text)
    write_atomic(tip_file, fetched_commit + "\n")
    return FetchedRecipe(text, repo, variant.branch, fetched_commit, variant.path, False)


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
    pnames = lex(fetched.text).string_binding("pname")
    if len(set(pnames)) != 1 or not _pname_matches(pnames[0], variant):
        shown = ", ".join(sorted(set(pnames))) or "none"
        raise OperationFailed(f"the recipe {where} does not match the catalog: its pname is {shown}, the catalog's package {variant.package}")
    classifier = RecipeClassifier(catalog.hardware)
    row, why, _ = classifier.classify(variant.branch, variant.path, variant.package, fetched.text)
    if row is None:
        raise OperationFailed(f"the recipe {where} does not match the catalog: {why}")
    differing = [f"its {name} is {row[name]!r}, the catalog's {getattr(variant, name)!r}" for name in CHECKED_FIELDS if row[name] != getattr(variant, name)]
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
            result = subprocess.run([nix, "--parse", str(file)], capture_output=True, text=True, timeout=NIX_PARSE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise OperationFailed(f"nix-instantiate --parse of {where} took longer than {NIX_PARSE_TIMEOUT_S} s") from None
    if result.returncode != 0:
        message = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise OperationFailed(f"the recipe {where} is not valid Nix: {message[0] if message else 'nix-instantiate --parse failed'}")
    return ""
