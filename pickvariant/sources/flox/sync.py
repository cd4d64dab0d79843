"""`pickvariant catalog sync`: build catalog.json from a clone of the build repository.

Every branch is read with real `git` (`for-each-ref`, `ls-tree`, one `cat-file --batch`
for all recipes): no checkout, nothing of the user's work tree is touched. Each recipe is
classified by sources/flox/classify.py; one it cannot classify is reported by branch and path and
left out, never guessed.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.records import keyword_record, record
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant._base.strictjson import load_file
from pickvariant._base.urls import public_url
from pickvariant._base.versions import version_key
from pickvariant.sources.build import SCHEMA_VERSION
from pickvariant.sources.flox import companions
from pickvariant.sources.flox.classify import RecipeClassifier
from pickvariant.sources.flox.load import parse_catalog
from pickvariant.sources.flox.repository import (
    MAX_RECIPE_BYTES,
    RECIPE_DIR,
    GitRepository,
    is_url,
    open_repository,
    origin_url,
)
from pickvariant.sources.flox.stack import SCHEMA as STACK_SCHEMA
from pickvariant.sources.flox.stack import checked_rows
from pickvariant.sources.hardware_json import build_hardware, hardware_facts_path

_ALIGNED = re.compile(r"^pytorch-\d+\.\d+-(?P<project>[a-z][a-z0-9_]*)-(?P<version>\d[\d.]*)$")


@record
class Unclassified:
    branch: str
    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.branch}:{self.path}: {self.why}"


@keyword_record
class SyncResult:
    document: dict[str, Any]
    skipped_packages: Counter[str]  # other packages (torchvision, torchaudio) by name prefix
    skipped_branches: tuple[str, ...]
    unclassified: tuple[Unclassified, ...]
    notes: tuple[str, ...]
    refused_branches: tuple[tuple[str, str], ...] = ()  # (branch, why): left out whole
    # torchvision, torchaudio and vLLM rows (sources/flox/stack.py), written beside the catalog; None: none were found
    companions: dict[str, Any] | None = None

    @property
    def variant_count(self) -> int:
        return len(self.document["variants"])


def _package_name(path: str) -> str | None:
    """Flox builds `.flox/pkgs/NAME.nix` and `.flox/pkgs/NAME/default.nix`; other files are not packages."""
    rest = path.removeprefix(RECIPE_DIR)
    if "/" not in rest and rest.endswith(".nix"):
        return rest.removesuffix(".nix")
    if rest.count("/") == 1 and rest.endswith("/default.nix"):
        return rest.split("/")[0]
    return None


def aligned_with(branch: str) -> str | None:
    """`pytorch-2.9-vllm-0.15.1` is aligned with vLLM 0.15.1; `pytorch-2.9-python311` is general."""
    match = _ALIGNED.match(branch)
    if match is None or re.fullmatch(r"python\d+", match["project"]):
        return None
    return f"{match['project']} {match['version']}"


def is_staging(branch: str) -> bool:
    return branch.endswith("-staging") or branch == "staging"


# ---------------------------------------------------------------- the whole repository


def sync(
    repo: str,
    source_url: str | None = None,
    hardware_path: Path | None = None,
    companion_repos: Sequence[str] = (),
    companion_urls: Sequence[str] = (),
) -> SyncResult:
    """The catalog of `repo` (build-pytorch or a fork) and, beside its variants, the companion recipes
    (torchvision, torchaudio, vLLM) of `repo` itself and of each of `companion_repos` (recorded as the
    `companion_urls` given in turn, else as their URL or origin)."""
    hardware = load_file(hardware_path or hardware_facts_path(), "hardware facts")
    with tempfile.TemporaryDirectory(prefix="pickvariant-sync-") as workdir:
        repository = open_repository(repo, _own_dir(Path(workdir), 0))
        recorded = source_url or (repo if is_url(repo) else origin_url(repo, Path(workdir)) or repo)
        others = []
        for index, other in enumerate(companion_repos, start=1):
            opened = open_repository(other, _own_dir(Path(workdir), index))
            given = companion_urls[index - 1] if index <= len(companion_urls) else None
            others.append(
                (opened, public_url(given or (other if is_url(other) else origin_url(other, Path(workdir)) or other)))
            )
        # Recorded in the catalog, hence in every detect line and report: never with credentials.
        return _sync(repository, hardware, public_url(recorded), others)


def _own_dir(workdir: Path, index: int) -> Path:
    own = workdir / f"repo{index}"
    own.mkdir()
    return own


@dataclass
class _Listing:
    """What a repository's branches hold under .flox/pkgs/: blob -> (branch, path, package) by kind, and why others are not read."""

    commits: dict[str, str]
    pytorch: dict[str, list[tuple[str, str, str]]]
    companions: dict[str, list[tuple[str, str, str]]]
    # branch -> path from .flox/pkgs/ -> blob of its shared files: lib/*.nix and every patch (*.patch, *.diff)
    shared_files: dict[str, dict[str, str]]
    skipped_branches: list[str]
    refused: list[tuple[str, str]]
    skipped_packages: Counter[str]
    unclassified: list[Unclassified]


def _list(repository: GitRepository, shown: str = "") -> _Listing:
    listing = _Listing({}, {}, {}, {}, [], [], Counter(), [])
    for branch, branch_commit in repository.branches():
        if is_staging(branch):
            listing.skipped_branches.append(shown + branch)
            continue
        blobs = repository.recipe_blobs(branch_commit)
        why = _refused_branch(branch, blobs)
        if why:
            listing.refused.append((shown + branch, why))
            continue
        if not blobs:
            continue
        listing.commits[branch] = branch_commit
        for path, blob, size in blobs:
            shared = path.removeprefix(RECIPE_DIR)
            if companions.is_shared_file(shared) and size <= MAX_RECIPE_BYTES:
                listing.shared_files.setdefault(branch, {})[shared] = blob
            package = _package_name(path)
            if package is None:
                continue
            kind = (
                listing.pytorch
                if package.startswith("pytorch-")
                else listing.companions
                if companions.project_of(package)
                else None
            )
            if kind is None:
                listing.skipped_packages[package.split("-")[0]] += 1
            elif size > MAX_RECIPE_BYTES:
                listing.unclassified.append(
                    Unclassified(shown + branch, path, f"{size} bytes: too large to be a recipe")
                )
            else:
                kind.setdefault(blob, []).append((branch, path, package))
    return listing


def _sync(
    repository: GitRepository,
    hardware: dict[str, Any],
    source_repo: str,
    others: Sequence[tuple[GitRepository, str]] = (),
) -> SyncResult:
    """The catalog of one build repository's PyTorch recipes, and of the companion recipes in it and in `others`."""
    try:
        facts = build_hardware(hardware)
    except SchemaError as error:
        raise BadInput(f"hardware facts: {error}") from error
    classifier = RecipeClassifier(facts)
    commit, date = repository.head()
    listing = _list(repository)
    unclassified = listing.unclassified
    rows, notes = _pytorch_rows(repository, listing, classifier, unclassified)
    rows, branches = _branches(rows, listing.commits, classifier, unclassified)
    if not branches:
        raise BadInput(_nothing_readable(source_repo, listing, unclassified))
    companion_classifier = companions.CompanionClassifier(facts)
    by_branch: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_branch.setdefault(row["branch"], {})[row["package"]] = row
    companion_rows, left_out, found_notes = companions.read_companions(
        repository.read_blobs, source_repo, listing.companions, listing.shared_files, by_branch, companion_classifier
    )
    notes.extend(found_notes)
    unclassified.extend(Unclassified(branch, path, why) for branch, path, why in left_out)
    sources = [
        _other_repository(other, url, listing, companion_classifier, companion_rows, notes) for other, url in others
    ]
    companion_rows.sort(key=lambda row: (row["project"], row["repo"], row["branch"], row["package"]))
    # The build repository's own PyTorch recipes left out, recorded in the catalog (`list --all` shows them).
    own_left_out = [u for u in unclassified if " " not in u.branch and Path(u.path).name.startswith("pytorch-")]
    document = _document(hardware, source_repo, commit, date, branches, rows, own_left_out)
    try:
        parse_catalog(document, Path("(synced catalog)"))
    except BadInput as error:
        raise OperationFailed(f"the synced catalog does not validate: {error}") from error
    return SyncResult(
        document=document,
        skipped_packages=listing.skipped_packages,
        skipped_branches=tuple(sorted(listing.skipped_branches)),
        unclassified=tuple(sorted(unclassified, key=lambda u: (u.branch, u.path))),
        notes=tuple(sorted(set(notes))),
        refused_branches=tuple(listing.refused),
        companions=_companions_document(document, sources, companion_rows) if companion_rows else None,
    )


def _pytorch_rows(
    repository: GitRepository, listing: _Listing, classifier: RecipeClassifier, unclassified: list[Unclassified]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every PyTorch recipe classified (each blob read once), in branch and path order, and the notes."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    patches = companions.read_shared(repository.read_blobs, listing.shared_files, companions.is_patch)
    for blob, content in repository.read_blobs(sorted(listing.pytorch)):
        text = content.decode("utf-8", "replace")
        for branch, path, package in listing.pytorch[blob]:
            row, why, found_notes = classifier.classify(branch, path, package, text, patches.get(branch, {}))
            notes.extend(found_notes)
            if row is None:
                unclassified.append(Unclassified(branch, path, why or "not classified"))
            else:
                rows.append(row)
    rows.sort(key=lambda row: (row["branch"], row["path"]))
    return rows, notes


def _nothing_readable(source_repo: str, listing: _Listing, unclassified: list[Unclassified]) -> str:
    found = (
        f"{len(unclassified)} recipe(s) could not be classified, the first {unclassified[0]}"
        if unclassified
        else "no branch has .flox/pkgs/pytorch-*.nix recipes"
    )
    refused_text = (
        f"; {len(listing.refused)} branch(es) left out, the first {listing.refused[0][0]}: {listing.refused[0][1]}"
        if listing.refused
        else ""
    )
    return f"{source_repo} has no PyTorch variant pickvariant can read ({found}{refused_text}): give a clone of the build repository or a fork of it"


def _other_repository(
    other: GitRepository,
    url: str,
    listing: _Listing,
    classifier: companions.CompanionClassifier,
    companion_rows: list[dict[str, Any]],
    notes: list[str],
) -> dict[str, Any]:
    """A companion repository's rows, notes and left-out recipes added to the build repository's; its source."""
    other_listing = _list(other, f"{url} ")
    if not other_listing.companions:
        raise BadInput(
            f"{url} has no torchvision, torchaudio or vllm recipe under .flox/pkgs/ on any branch: give a clone of a companion build repository"
        )
    other_rows, left_out, found_notes = companions.read_companions(
        other.read_blobs, url, other_listing.companions, other_listing.shared_files, {}, classifier
    )
    companion_rows.extend(other_rows)
    notes.extend(found_notes)
    listing.unclassified.extend(other_listing.unclassified)
    listing.unclassified.extend(Unclassified(f"{url} {branch}", path, why) for branch, path, why in left_out)
    listing.skipped_branches.extend(other_listing.skipped_branches)
    listing.refused.extend(other_listing.refused)
    other_commit, other_date = other.head()
    return {
        "repo": url,
        "commit": other_commit,
        "date": other_date,
        "branches": [{"name": name, "commit": value} for name, value in sorted(other_listing.commits.items())],
    }


def _companions_document(
    document: dict[str, Any], sources: list[dict[str, Any]], companion_rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """catalog.companions.json beside the catalog, validated with it."""
    stack = {
        "$comment": "Generated by `pickvariant catalog sync` beside the catalog synced from `catalog_source`; do not edit.",
        "schema_version": 1,
        "catalog_source": document["source"],
        "companion_sources": sources,
        "companions": companion_rows,
    }
    try:
        validate(stack, load_schema(STACK_SCHEMA))
        checked_rows(companion_rows, parse_catalog(document, Path("(synced catalog)")))
    except (SchemaError, BadInput) as error:
        raise OperationFailed(f"the synced companions do not validate: {error}") from error
    return stack


# A branch name the catalog can record (its schema's pattern): others are left out, with the reason, not written.
_BRANCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")


def _refused_branch(branch: str, blobs: list[tuple[str, str, int]]) -> str | None:
    """Why a whole branch is left out of the catalog, or None."""
    if not _BRANCH_NAME.fullmatch(branch):
        return "its name is not one a catalog can record (letters, digits, '.', '_', '-', '/'; 200 at most)"
    packages: dict[str, list[str]] = {}
    for path, _, _ in blobs:
        package = _package_name(path)
        if package is not None:
            packages.setdefault(package, []).append(path)
    twice = sorted(package for package, paths in packages.items() if len(paths) > 1)
    if twice:
        return f"it defines {twice[0]} twice ({' and '.join(sorted(packages[twice[0]]))}): which one Flox builds is not certain"
    return None


def _majority(values: Iterable[str]) -> str:
    counts = Counter(values)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]


def _branches(
    rows: list[dict[str, Any]],
    commits: Mapping[str, str],
    classifier: RecipeClassifier,
    unclassified: list[Unclassified],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Group rows into branches; a row that disagrees with the rest of its branch or CUDA line is reported, not kept."""
    kept: list[dict[str, Any]] = []
    branches: list[dict[str, Any]] = []
    for branch in sorted({row["branch"] for row in rows}):
        own = [row for row in rows if row["branch"] == branch]
        torch = _majority(row["torch"] for row in own)
        python = _majority(row["python"] for row in own)
        agreeing = []
        for row in own:
            if (row["torch"], row["python"]) != (torch, python):
                unclassified.append(
                    Unclassified(
                        branch,
                        row["path"],
                        f"PyTorch {row['torch']} / Python {row['python']}, the rest of the branch builds {torch} / {python}",
                    )
                )
            else:
                agreeing.append(row)
        lines = _cuda_lines(branch, agreeing, classifier, unclassified)
        if not agreeing:
            continue
        branches.append(
            {
                "name": branch,
                "commit": commits[branch],
                "torch": torch,
                "python": python,
                "aligned_with": aligned_with(branch),
                "cuda_lines": lines,
            }
        )
        kept.extend({key: value for key, value in row.items() if not key.startswith("_")} for row in agreeing)
    kept.sort(key=lambda row: (row["branch"], row["package"]))
    return kept, branches


def _cuda_lines(
    branch: str, agreeing: list[dict[str, Any]], classifier: RecipeClassifier, unclassified: list[Unclassified]
) -> list[dict[str, Any]]:
    """A branch's CUDA lines, each with its nixpkgs pin; a row that disagrees with its line is taken from `agreeing`."""
    lines = []
    for cuda in sorted({row["cuda"] for row in agreeing if row["cuda"]}, key=version_key):
        members = [row for row in agreeing if row["cuda"] == cuda]
        pin = _majority(row["nixpkgs_rev"] for row in members)
        cuda_packages = _majority(row["_cuda_packages"] for row in members)
        for row in members:
            if (row["nixpkgs_rev"], row["_cuda_packages"]) != (pin, cuda_packages):
                unclassified.append(
                    Unclassified(
                        branch,
                        row["path"],
                        f"nixpkgs {row['nixpkgs_rev'][:12]} with {row['_cuda_packages']}, the rest of the CUDA {cuda} line uses {pin[:12]} with {cuda_packages}",
                    )
                )
                agreeing.remove(row)
        lines.append(
            {
                "cuda": cuda,
                "cuda_packages": cuda_packages,
                "nixpkgs_rev": pin,
                "min_driver": str(classifier.facts.cuda_releases[cuda].min_driver),
            }
        )
    return lines


def _document(
    hardware: Mapping[str, Any],
    source_repo: str,
    commit: str,
    date: str,
    branches: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    left_out: Sequence[Unclassified] = (),
) -> dict[str, Any]:
    facts = {key: value for key, value in hardware.items() if key != "$comment"}
    return {
        "$comment": "Generated by `pickvariant catalog sync` from the build repository named in `source`, joined with "
        "pickvariant/sources/data/hardware.json. Do not edit: change hardware.json or the recipes, then sync again.",
        "schema_version": SCHEMA_VERSION,
        "source": {"repo": source_repo, "commit": commit, "date": date},
        **facts,
        "branches": branches,
        "left_out": [
            {"branch": u.branch, "path": u.path, "why": u.why[:2000]}
            for u in sorted(left_out, key=lambda u: (u.branch, u.path))
        ],
        "variants": rows,
    }
