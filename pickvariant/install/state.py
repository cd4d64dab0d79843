"""What the last `pickvariant install` recorded (last-install.json in the cache): `verify` and `report` default to it.

The file is pickvariant's own but lives where anyone with the user's rights can edit it: a record
that cannot be read, or reads as something else, is no record.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pickvariant._base import strictjson
from pickvariant._base.errors import PickVariantError
from pickvariant._base.files import cache_dir, read_regular
from pickvariant._base.schema import SchemaError, load_schema, validate

SCHEMA = Path(__file__).resolve().with_name("last-install.schema.json")


def last_install_path(env: Mapping[str, str] | None = None) -> Path:
    return cache_dir(env) / "last-install.json"


MAX_RECORD_BYTES = 64 * 1024


def last_install(env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """What the last install recorded; None when there is none, or it is unreadable, too large or not such a record."""
    try:
        record = strictjson.loads(
            read_regular(last_install_path(env), MAX_RECORD_BYTES, "last-install record").decode("utf-8")
        )
        validate(record, load_schema(SCHEMA))
    except (PickVariantError, UnicodeDecodeError, ValueError, RecursionError, SchemaError):
        return None
    return record if isinstance(record, dict) else None


def last_install_python(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The interpreter command the last install recorded; None when there is none or it is unreadable."""
    record = last_install(env)
    python = record.get("python") if record else None
    return list(python) if isinstance(python, list) and python else None


def last_install_projects(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The companion projects the last install put in its environment (`install --with`), for `verify` to check too."""
    record = last_install(env)
    return tuple(str(entry["project"]) for entry in (record or {}).get("companions", ()))
