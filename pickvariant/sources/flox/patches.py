"""A recipe's patches are build input: each is read and judged, or the recipe is left out (issue 51).

A patch applied to PyTorch (or to a library it links, such as MAGMA) can set any compiler flag, so a recipe is
classified only where every patch it hands to nixpkgs is one of:
- a local patch (`./fix-build.patch`, a file of the same branch under .flox/pkgs/) whose every line that `patch`
  may add (all but removed and context lines: unified, context and normal diffs alike) names no compiler flag, `-m`
  feature, CUDA architecture or CMake flag setting (recipe-allowlist.json `patches.refused_in_added_lines`);
- a fetched patch (`fetchpatch { url; hash; }`) whose hash is one the build repositories carry
  (`patches.fetched_hashes`): pickvariant never downloads a patch, and the hash fixes its content;
- nixpkgs' own patches (`old.patches or []`), kept as upstream builds PyTorch.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pickvariant._base.urls import public_url
from pickvariant.sources.flox.nixvalues import AttrSet, NixList, Opaque, PathValue, Text, Thunk, Unprovable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from tree_sitter import Node

_FETCHED = re.compile(r"(?:^|[ .])fetchpatch2?\(…\)")
_NOT_ADDED = ("-", " ", "<", "@@", "\\")  # removed lines, context lines, hunk headers, "\ No newline at end of file"


@dataclass(frozen=True)
class PatchRules:
    """recipe-allowlist.json's `patches`."""

    refused: tuple[re.Pattern[str], ...]
    fetched_hashes: Mapping[str, str]


def judge(thunk: Thunk, force: Callable[[Thunk], object], rules: PatchRules, local: Mapping[str, str]) -> None:
    """Every patch of a `patches` value judged; Unprovable naming the first that is not proven harmless.

    `local`: the texts of the branch's patch files, by path from .flox/pkgs/ (none where only a recipe was fetched)."""
    value = force(thunk)
    if not isinstance(value, NixList) or any(part.own_hook != "patches" for part in value.spliced):
        raise Unprovable(thunk.file, thunk.node, "patches is not a list pickvariant can read whole")
    for item in value.items:
        patch, where = force(item), item.node or thunk.node
        if isinstance(patch, PathValue):
            _local(patch, rules, local, item.file, where)
        elif isinstance(patch, Opaque) and patch.argument is not None and _FETCHED.search(patch.what):
            _fetched(force(patch.argument), force, rules, item.file, where)
        else:
            raise Unprovable(item.file, where, "a patch pickvariant cannot read (neither a local file nor fetchpatch)")


def _local(patch: PathValue, rules: PatchRules, local: Mapping[str, str], file: str, where: Node | None) -> None:
    path = posixpath.normpath(posixpath.join(posixpath.dirname(patch.file), patch.text))
    text = local.get(path) if not (path.startswith("../") or patch.text.startswith("/")) else None
    if text is None:
        raise Unprovable(file, where, f"it applies {patch.text}, a patch whose text pickvariant was not given")
    lines = text.split("\n")
    # A space starts a context line only in a unified or context diff: in an ed script (which GNU patch also applies)
    # an added line may begin with one.
    hunks = any(line.startswith(("@@", "***************")) for line in lines)
    skipped = _NOT_ADDED if hunks else tuple(prefix for prefix in _NOT_ADDED if prefix != " ")
    for number, line in enumerate(lines, start=1):
        if line.startswith(skipped) and not line.startswith(("---", "***")):
            continue
        hit = next((pattern for pattern in rules.refused if pattern.search(line)), None)
        if hit is not None:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise Unprovable(
                file,
                where,
                f"it applies {patch.text}, whose line {number} may add a compiler or CMake setting ({shown!r})",
            )


def _fetched(
    argument: object, force: Callable[[Thunk], object], rules: PatchRules, file: str, where: Node | None
) -> None:
    fields = argument.attrs if isinstance(argument, AttrSet) else {}
    url, digest = (_literal(fields.get(name), force) for name in ("url", "hash"))
    digest = digest or _literal(fields.get("sha256"), force)
    if digest is None or digest not in rules.fetched_hashes:
        shown = public_url(url) if url else "an address pickvariant cannot read"
        raise Unprovable(
            file,
            where,
            f"it applies a fetched patch ({shown}) whose hash is not one the build repositories carry "
            "(pickvariant never downloads a patch to read it)",
        )


def _literal(thunk: Thunk | None, force: Callable[[Thunk], object]) -> str | None:
    if thunk is None:
        return None
    value = force(thunk)
    return value.literal() if isinstance(value, Text) else None
