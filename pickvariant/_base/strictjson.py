"""JSON as other machines send it, read strictly: `NaN`, `Infinity` and `-Infinity` are no JSON (RFC 8259), though
Python's json module reads them by default. A NaN speed figure would pass a schema's `"type": "number"`, compare
false with every threshold (a slow node hidden) and make the output invalid JSON; so every document pickvariant
reads from elsewhere is read here, and such a constant makes it bad input like any other syntax error."""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: detect's fast path never loads it
    from typing import Any


def _refuse(constant: str) -> Any:
    raise json.JSONDecodeError(f"{constant} is not a JSON number", constant, 0)


def loads(text: str | bytes) -> Any:
    """json.loads without NaN and the infinities: json.JSONDecodeError (a ValueError), as for any text that is no JSON."""
    return json.loads(text, parse_constant=_refuse)
