"""JSON as other machines send it, read strictly: `NaN`, `Infinity` and `-Infinity` are no JSON (RFC 8259), though
Python's json module reads them by default. A NaN speed figure would pass a schema's `"type": "number"`, compare
false with every threshold (a slow node hidden) and make the output invalid JSON; so every document pickvariant
reads from elsewhere is read here, and such a constant makes it bad input like any other syntax error."""

from __future__ import annotations

import json
import os

from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: detect's fast path never loads it
    from typing import Any

# The most a catalog or facts file pickvariant reads may hold.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


def _refuse(constant: str) -> Any:
    raise json.JSONDecodeError(f"{constant} is not a JSON number", constant, 0)


def loads(text: str | bytes) -> Any:
    """json.loads without NaN and the infinities: json.JSONDecodeError (a ValueError), as for any text that is no JSON."""
    return json.loads(text, parse_constant=_refuse)


def load_file(path: str | os.PathLike[str], what: str, limit: int = MAX_DOCUMENT_BYTES) -> Any:
    """The JSON document in a regular file of at most `limit` bytes; BadInput naming `what` and the file otherwise."""
    return decoded(read_regular(path, limit, what), path, what)


def decoded(raw: bytes, path: str | os.PathLike[str], what: str) -> Any:
    """A file's bytes as JSON read strictly; BadInput naming `what` and the file where they are none."""
    try:
        return loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"{what} {path} is not valid JSON: {error}") from error
    except RecursionError:
        raise BadInput(f"{what} {path} is nested too deeply to be a {what}") from None
