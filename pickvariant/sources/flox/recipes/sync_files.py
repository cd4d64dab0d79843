"""What `catalog sync` shows, writes and checks: the catalog (and its companions beside it) rendered one row
a line, written only where that is safe, compared with a file for `--check`, summarised for its user."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pickvariant._base import strictjson
from pickvariant._base.errors import OperationFailed
from pickvariant._base.files import check_writable, write_together
from pickvariant._base.text import visible
from pickvariant.sources.flox.recipes.load import stamp
from pickvariant.sources.flox.recipes.stack import companions_path
from pickvariant.sources.flox.recipes.sync import SyncResult


def render(document: Mapping[str, Any]) -> str:
    """Indented JSON with one variant (and one companion) per line, so that a re-sync's diff shows whole rows,
    stamped as validated (catalog.stamp): render only documents that parse_catalog accepted."""
    # A stamp read back from an older file is not carried over: stamp() writes the one that holds now.
    fields = {key: value for key, value in document.items() if key != "validated"}
    listed = [key for key in ("left_out", "variants", "companions") if key in fields]
    text = json.dumps({**fields, **{key: f"\0{key}\0" for key in listed}}, indent=1, ensure_ascii=False)
    for key in listed:
        lines = ",\n".join("  " + json.dumps(row, ensure_ascii=False, separators=(", ", ": ")) for row in document[key])
        text = text.replace(json.dumps(f"\0{key}\0"), "[\n" + lines + "\n ]" if lines else "[]")
    return stamp(text + "\n")


def differences(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[str]:
    """What `--check` reports: rows (variants, or companions) added, removed or changed, and other fields that differ."""
    listed = "variants" if "variants" in new else "companions"
    if not isinstance(old, Mapping) or not isinstance(old.get(listed), list):
        return [f"it is not a file of {listed} as `catalog sync` writes them"]

    def keyed(document: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
        return {
            (f"{row.get('repo', '')} {row.get('branch')}".strip(), str(row.get("package"))): row
            for row in document.get(listed, [])
            if isinstance(row, Mapping)
        }

    before, after = keyed(old), keyed(new)
    found = []
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = sorted(key for key in before.keys() & after.keys() if before[key] != after[key])
    for label, keys in (("added", added), ("removed", removed), ("changed", changed)):
        if keys:
            shown = ", ".join(f"{package} ({branch})" for branch, package in keys[:3])
            found.append(f"{len(keys)} {listed[:-1]}(s) {label}: {shown}{', ...' if len(keys) > 3 else ''}")
    for key in sorted(set(old) | set(new)):
        if key not in (listed, "validated") and old.get(key) != new.get(key):
            found.append(f"{key} differs")
    return found


def summary(result: SyncResult) -> list[str]:
    """What sync tells its user on stderr: counts, what it skipped, and every recipe it could not classify."""
    source = result.document["source"]
    lines = [
        f"synced {result.variant_count} variants on {len(result.document['branches'])} branches of {source['repo']} at {source['commit'][:12]}"
    ]
    if result.companions:
        found = Counter(row["project"] for row in result.companions["companions"])
        lines.append(
            "and "
            + ", ".join(f"{count} {project}" for project, count in sorted(found.items()))
            + f" companion recipes from {1 + len(result.companions['companion_sources'])} repositories"
        )
    if result.skipped_packages:
        other = ", ".join(f"{count} {name}" for name, count in sorted(result.skipped_packages.items()))
        lines.append(f"skipped {sum(result.skipped_packages.values())} recipes of other packages ({other})")
    if result.skipped_branches:
        lines.append(f"skipped staging branches: {', '.join(result.skipped_branches)}")
    for branch, why in result.refused_branches:
        lines.append(f"left out branch {branch}: {why}")
    lines += [f"note: {note}" for note in result.notes]
    if result.unclassified:
        lines.append(f"{len(result.unclassified)} recipe(s) not classified, left out of the catalog:")
        lines += [f"  {item}" for item in result.unclassified]
    # Branch names, paths and reasons come from the repository: each stays on its line, escapes visible.
    return [visible(line) for line in lines]


def deliver(result: SyncResult, output: Path | None, check_only: bool, force: bool) -> Iterator[tuple[str, bool]]:
    """Print, write or check the catalog and, beside it, its companions; yields (text, for stderr) to show."""
    files = [(output, result.document)]
    if result.companions is not None:
        files.append((companions_path(output) if output else None, result.companions))
    source = result.document["source"]
    rendered = [(path, document, render(document)) for path, document in files]
    for index, (path, _, text) in enumerate(rendered):
        # A file every later command would refuse to read is not written: the bound and the file agree.
        size = len(text.encode("utf-8"))
        if size > strictjson.MAX_DOCUMENT_BYTES:
            name = path or ("the catalog" if index == 0 else "the companions")
            raise OperationFailed(
                f"{name} would be {size / 2**20:.1f} MiB, more than the {strictjson.MAX_DOCUMENT_BYTES // 2**20} MiB "
                "pickvariant reads of a catalog file: nothing was written; sync fewer branches or repositories"
            )
    if not check_only and output is not None:
        yield from _write(rendered, force)
        return
    for path, document, text in rendered:
        if check_only:
            assert path is not None
            found = check(path, document, text)
            if found:
                raise OperationFailed(
                    f"{path} differs from what {source['repo']} at {source['commit'][:12]} gives: {'; '.join(found)}"
                )
            yield f"{path} matches {source['repo']} at {source['commit'][:12]}", True
        elif path is None:
            # detect alone never reads the companions: they are a file of their own, beside the catalog.
            yield (
                (text, False)
                if document is result.document
                else ("companions not printed: give -o FILE to write them beside the catalog", True)
            )


def _write(rendered: Sequence[tuple[Path | None, Mapping[str, Any], str]], force: bool) -> Iterator[tuple[str, bool]]:
    """The catalog and its companions written as a pair: both or neither (a full disk leaves the old pair whole)."""
    changed = [(path, text) for path, _, text in rendered if path is not None and check_writable(path, text, force)]
    write_together(list(changed))
    written = {path for path, _ in changed}
    for path, _, _ in rendered:
        yield (f"{path} written" if path in written else f"{path} unchanged"), True


def check(path: Path, new: Mapping[str, Any], text: str) -> list[str]:
    """Empty when the file at `path` is exactly what the repository gives, else what differs."""
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        return [f"{path} does not exist"]
    except OSError as error:
        raise OperationFailed(f"cannot read {path}: {error.strerror or error}") from None
    if current == text.encode("utf-8"):
        return []
    try:
        old = strictjson.loads(current)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        old = None
    return differences(old, new) or ["the same data, written differently (run sync without --check to rewrite it)"]
