"""What the last `pickvariant install` recorded (last-install.json in the cache): `verify` and `report` default to it.

The file is pickvariant's own but lives where anyone with the user's rights can edit it: a record
that cannot be read, or reads as something else, is no record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pickvariant._base.files import cache_dir


def last_install_path(env: Mapping[str, str] | None = None) -> Path:
    return cache_dir(env) / "last-install.json"


def last_install(env: Mapping[str, str] | None = None) -> dict[str, object] | None:
    """What the last install recorded; None when there is none or it is unreadable."""
    try:
        record = json.loads(last_install_path(env).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def last_install_python(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The interpreter command the last install recorded; None when there is none or it is unreadable."""
    record = last_install(env)
    python = record.get("python") if record else None
    if isinstance(python, list) and python and all(isinstance(part, str) and part for part in python):
        return python
    return None
