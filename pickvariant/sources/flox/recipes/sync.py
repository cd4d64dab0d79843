"""`pickvariant catalog sync`: build catalog.json from a clone of the build repository.

Every branch is read with real `git` (`for-each-ref`, `ls-tree`, one `cat-file --batch`
for all recipes): no checkout, nothing of the user's work tree is touched. Each recipe is first
held against the trusted upstream (upstream.py, trusted.py: a recipe of another repository is read
only where it is an upstream recipe but for its values), then classified by classify.py or
companions.py from its declared values; one left out is reported by branch and path with why,
never guessed. The whole sync, every git call in it, shares one deadline.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pickvariant._base import settings
from pickvariant._base.deadline import Deadline
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.records import keyword_record
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant._base.strictjson import load_file
from pickvariant._base.urls import public_url
from pickvariant.sources.build import SCHEMA_VERSION, Catalog
from pickvariant.sources.flox.recipes import companions
from pickvariant.sources.flox.recipes.branches import Listing, Unclassified, group_branches, list_branches
from pickvariant.sources.flox.recipes.classify import RecipeClassifier
from pickvariant.sources.flox.recipes.load import parse_catalog
from pickvariant.sources.flox.recipes.repository import GitRepository, is_url, open_repository, origin_url
from pickvariant.sources.flox.recipes.stack import SCHEMA as STACK_SCHEMA
from pickvariant.sources.flox.recipes.stack import checked_rows
from pickvariant.sources.flox.recipes.upstream import Trust, same_repository, shipped_anchors, trusted_commits
from pickvariant.sources.hardware_json import build_hardware, hardware_facts_path

__all__ = ["SyncResult", "Unclassified", "sync"]


@keyword_record
class SyncResult:
    document: dict[str, Any]
    skipped_packages: Counter[str]  # other packages (torchvision, torchaudio) by name prefix
    skipped_branches: tuple[str, ...]
    unclassified: tuple[Unclassified, ...]
    notes: tuple[str, ...]
    refused_branches: tuple[tuple[str, str], ...] = ()  # (branch, why): left out whole
    # torchvision, torchaudio and vLLM rows (sources/flox/recipes/stack.py), written beside the catalog; None: none were found
    companions: dict[str, Any] | None = None

    @property
    def variant_count(self) -> int:
        return len(self.document["variants"])


@keyword_record
class TrustOptions:
    """What the user says of trust: the upstream repositories (`--upstream`), and those whose recipes they trust
    whole (`--trust-recipes`: classified by their names and declared values, said in every answer)."""

    upstreams: tuple[str, ...] = ()
    trusted: tuple[str, ...] = ()


NO_TRUST = TrustOptions()  # none named: the build repositories pickvariant ships facts for alone


# ---------------------------------------------------------------- the whole repository


def sync(
    repo: str,
    source_url: str | None = None,
    hardware_path: Path | None = None,
    companion_repos: Sequence[str] = (),
    companion_urls: Sequence[str] = (),
    trust: TrustOptions = NO_TRUST,
) -> SyncResult:
    """The catalog of `repo` (build-pytorch or a fork) and, beside its variants, the companion recipes
    (torchvision, torchaudio, vLLM) of `repo` itself and of each of `companion_repos` (recorded as the
    `companion_urls` given in turn, else as their URL or origin), each held against the trusted upstream."""
    hardware = load_file(hardware_path or hardware_facts_path(), "hardware facts")
    deadline = Deadline(settings.network_timeout(os.environ), "catalog sync")
    unknown = [named for named in trust.trusted if not any(same_repository(named, r) for r in (repo, *companion_repos))]
    if unknown:
        raise BadInput(f"--trust-recipes {unknown[0]!r:.200}: name one of the repositories synced, as given")
    with tempfile.TemporaryDirectory(prefix="pickvariant-sync-") as workdir:
        work = Path(workdir)
        given = [repo, *companion_repos]
        opened = [open_repository(name, _own_dir(work, index), deadline) for index, name in enumerate(given)]
        upstreams = [
            open_repository(name, _own_dir(work, len(given) + index), deadline)
            for index, name in enumerate(trust.upstreams)
        ]
        recorded = [
            public_url(
                (source_url if index == 0 else companion_urls[index - 1] if index <= len(companion_urls) else None)
                or (name if is_url(name) else origin_url(name, work) or name)
            )
            for index, name in enumerate(given)
        ]
        anchors = shipped_anchors()
        held = {
            index: (repository, trusted_commits(repository, given[index], anchors, upstreams, index))
            for index, repository in enumerate(opened)
        }
        whole = {index for index, name in enumerate(given) if any(same_repository(name, t) for t in trust.trusted)}
        # Recorded in the catalog, hence in every detect line and report: never with credentials.
        return _sync(
            opened[0], hardware, recorded[0], list(zip(opened[1:], recorded[1:], strict=True)), Trust(held, whole)
        )


def _own_dir(workdir: Path, index: int) -> Path:
    own = workdir / f"repo{index}"
    own.mkdir()
    return own


def _sync(
    repository: GitRepository,
    hardware: dict[str, Any],
    source_repo: str,
    others: Sequence[tuple[GitRepository, str]],
    trust: Trust,
) -> SyncResult:
    """The catalog of one build repository's PyTorch recipes, and of the companion recipes in it and in `others`."""
    try:
        facts = build_hardware(hardware)
    except SchemaError as error:
        raise BadInput(f"hardware facts: {error}") from error
    classifier = RecipeClassifier(facts)
    commit, date = repository.head()
    listing = list_branches(repository)
    unclassified = listing.unclassified
    rows, notes = _pytorch_rows(repository, listing, classifier, trust)
    rows, branches = group_branches(rows, listing.commits, classifier, unclassified)
    if not branches:
        raise BadInput(_nothing_readable(source_repo, listing, unclassified))
    companion_classifier = companions.CompanionClassifier(facts)
    by_branch: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_branch.setdefault(row["branch"], {})[row["package"]] = row
    companion_rows, left_out, found_notes = companions.read_companions(
        repository.read_blobs,
        source_repo,
        listing.companions,
        listing.shared_files,
        by_branch,
        companion_classifier,
        trust.judge(0, listing.commits),
    )
    notes.extend(found_notes)
    unclassified.extend(Unclassified(branch, path, why) for branch, path, why in left_out)
    sources = [
        _other_repository(other, url, listing, companion_classifier, companion_rows, notes, trust, index)
        for index, (other, url) in enumerate(others, start=1)
    ]
    companion_rows.sort(key=lambda row: (row["project"], row["repo"], row["branch"], row["package"]))
    # The build repository's own PyTorch recipes left out, recorded in the catalog (`list --all` shows them).
    own_left_out = [u for u in unclassified if " " not in u.branch and Path(u.path).name.startswith("pytorch-")]
    document = _document(hardware, source_repo, commit, date, branches, rows, own_left_out)
    if 0 in trust.whole:
        document["source"]["trusted_by_user"] = True
    try:
        parsed = parse_catalog(document, Path("(synced catalog)"))
    except BadInput as error:
        raise OperationFailed(f"the synced catalog does not validate: {error}") from error
    return SyncResult(
        document=document,
        skipped_packages=listing.skipped_packages,
        skipped_branches=tuple(sorted(listing.skipped_branches)),
        unclassified=tuple(sorted(unclassified, key=lambda u: (u.branch, u.path))),
        notes=tuple(sorted(set(notes))),
        refused_branches=tuple(listing.refused),
        companions=_companions_document(document, parsed, sources, companion_rows) if companion_rows else None,
    )


def _pytorch_rows(
    repository: GitRepository, listing: Listing, classifier: RecipeClassifier, trust: Trust
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every PyTorch recipe held against the upstream and classified (each blob read once), in branch and path
    order, and the notes; each one left out is added to the listing's."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    judged = trust.judge(0, listing.commits)
    for blob, content in repository.read_blobs(sorted(listing.pytorch)):
        text = content.decode("utf-8", "replace")
        for branch, path, package in listing.pytorch[blob]:
            reading = judged(branch, path, package, blob, text, ())
            row, why, found_notes = (
                (None, reading, []) if isinstance(reading, str) else classifier.classify(branch, path, package, reading)
            )
            notes.extend(found_notes)
            if row is None:
                listing.unclassified.append(Unclassified(branch, path, why or "not classified"))
            else:
                rows.append(row)
    rows.sort(key=lambda row: (row["branch"], row["path"]))
    return rows, notes


def _nothing_readable(source_repo: str, listing: Listing, unclassified: list[Unclassified]) -> str:
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
    listing: Listing,
    classifier: companions.CompanionClassifier,
    companion_rows: list[dict[str, Any]],
    notes: list[str],
    trust: Trust,
    index: int,
) -> dict[str, Any]:
    """A companion repository's rows, notes and left-out recipes added to the build repository's; its source."""
    other_listing = list_branches(other, f"{url} ")
    if not other_listing.companions:
        raise BadInput(
            f"{url} has no torchvision, torchaudio or vllm recipe under .flox/pkgs/ on any branch: give a clone of a companion build repository"
        )
    other_rows, left_out, found_notes = companions.read_companions(
        other.read_blobs,
        url,
        other_listing.companions,
        other_listing.shared_files,
        {},
        classifier,
        trust.judge(index, other_listing.commits),
    )
    companion_rows.extend(other_rows)
    notes.extend(found_notes)
    listing.unclassified.extend(other_listing.unclassified)
    listing.unclassified.extend(Unclassified(f"{url} {branch}", path, why) for branch, path, why in left_out)
    listing.skipped_branches.extend(other_listing.skipped_branches)
    listing.refused.extend(other_listing.refused)
    other_commit, other_date = other.head()
    source = {
        "repo": url,
        "commit": other_commit,
        "date": other_date,
        "branches": [{"name": name, "commit": value} for name, value in sorted(other_listing.commits.items())],
    }
    return {**source, "trusted_by_user": True} if index in trust.whole else source


def _companions_document(
    document: dict[str, Any], parsed: Catalog, sources: list[dict[str, Any]], companion_rows: list[dict[str, Any]]
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
        checked_rows(companion_rows, parsed)
    except (SchemaError, BadInput) as error:
        raise OperationFailed(f"the synced companions do not validate: {error}") from error
    return stack


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
