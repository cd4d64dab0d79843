"""The hardware facts of a catalog from elsewhere are pickvariant's own: a copy that differs is refused.

`catalog sync` writes pickvariant's hardware.json into every catalog it makes, beside the variants it read. A
catalog handed over (PICKVARIANT_CATALOG, a site share) is trusted for its variants, which pickvariant checks
against the facts, never for the facts themselves: the rules would otherwise judge by whatever the file says.
"""

from __future__ import annotations

import json
import os
import re

from pickvariant._base.errors import BadInput
from pickvariant._base.text import visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (load.py imports this module)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def check_own_hardware_facts(data: Any, path: str | os.PathLike[str], own: Mapping[str, Any]) -> None:
    """A catalog from elsewhere carries variants; the hardware facts (what each instruction set requires, what each
    flag needs, the GPU architectures and driver floors) are pickvariant's own. A copy that differs from
    hardware.json is refused, naming the first field that differs: an edited copy could admit an AVX-512 build on
    an AVX2 machine, and a stale one (a catalog synced by another pickvariant) judges by facts this one corrected."""
    if not isinstance(data, dict):
        return  # the schema says what is wrong with it
    for key in sorted(own):
        if key == "$comment":
            continue
        field = _first_difference(own[key], data.get(key), key)
        if field is not None:  # a key of the file's own may hold any character: shown quoted and escaped, on one line
            raise BadInput(
                f"catalog {path}: its hardware facts differ from pickvariant's own at {visible(field):.200}; a catalog carries "
                f"variants, the facts are pickvariant's: sync it again with this pickvariant "
                f"(pickvariant catalog sync REPO -o FILE)"
            )


def _first_difference(own: Any, theirs: Any, where: str) -> str | None:
    """The path of the first value where `theirs` differs from `own` (list entries named by their name), or None."""
    if isinstance(own, dict) and isinstance(theirs, dict):
        for key in sorted(set(own) | set(theirs)):
            found = _first_difference(own.get(key), theirs.get(key), where + _segment(key))
            if found is not None:
                return found
        return None
    if isinstance(own, list) and isinstance(theirs, list) and len(own) == len(theirs):
        for index, (mine, other) in enumerate(zip(own, theirs, strict=True)):
            label = mine.get("name", mine.get("flag", index)) if isinstance(mine, dict) else index
            found = _first_difference(mine, other, f"{where}[{label}]")
            if found is not None:
                return found
        return None
    return None if own == theirs and type(own) is type(theirs) else where


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _segment(key: str) -> str:
    """A key in a field's path: `.name`, or `["…"]` (JSON-quoted) for one that is no plain name, so that a key of
    the file's own (`:`, `.`, a line break) cannot read as another path or end the field early."""
    return f".{key}" if _NAME.fullmatch(key) else f"[{json.dumps(key)}]"
