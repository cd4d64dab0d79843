"""A build repository's branches as sync reads them: which recipes each holds (by blob), which branches are left out
whole and why, and the rows of each branch grouped into its release line and CUDA lines."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pickvariant._base.records import record
from pickvariant._base.versions import version_key
from pickvariant.sources.flox.recipes import companions
from pickvariant.sources.flox.recipes.classify import RecipeClassifier
from pickvariant.sources.flox.recipes.repository import MAX_RECIPE_BYTES, RECIPE_DIR, GitRepository

_ALIGNED = re.compile(r"^pytorch-\d+\.\d+-(?P<project>[a-z][a-z0-9_]*)-(?P<version>\d[\d.]*)$")


@record
class Unclassified:
    branch: str
    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.branch}:{self.path}: {self.why}"


def package_name(path: str) -> str | None:
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


@dataclass
class Listing:
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


def list_branches(repository: GitRepository, shown: str = "") -> Listing:
    listing = Listing({}, {}, {}, {}, [], [], Counter(), [])
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
            package = package_name(path)
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


# A branch name the catalog can record (its schema's pattern): others are left out, with the reason, not written.
_BRANCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")


def _refused_branch(branch: str, blobs: list[tuple[str, str, int]]) -> str | None:
    """Why a whole branch is left out of the catalog, or None."""
    if not _BRANCH_NAME.fullmatch(branch):
        return "its name is not one a catalog can record (letters, digits, '.', '_', '-', '/'; 200 at most)"
    packages: dict[str, list[str]] = {}
    for path, _, _ in blobs:
        package = package_name(path)
        if package is not None:
            packages.setdefault(package, []).append(path)
    twice = sorted(package for package, paths in packages.items() if len(paths) > 1)
    if twice:
        return f"it defines {twice[0]} twice ({' and '.join(sorted(packages[twice[0]]))}): which one Flox builds is not certain"
    return None


def _majority(values: Iterable[str]) -> str:
    counts = Counter(values)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]


def group_branches(
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
