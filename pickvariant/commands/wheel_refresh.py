"""`pickvariant catalog wheels --refresh`: the shipped wheel facts and the releases an index holds beyond them, read
from their wheels (sources/wheels/refresh.py), derived into the catalog the wheel answers prefer from then on.

The index PyPI's releases are read from is the one the user's installer is set to: `--pypi URL`, else pip's
(PIP_INDEX_URL, else its configuration's `global.index-url`), else uv's UV_DEFAULT_INDEX, else pip's own default,
as pip itself names it. PyTorch's variant indexes come from `--wheel-index ROOT` (PICKVARIANT_WHEEL_INDEX), else the
root the facts give."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant._base.urls import public_url


@keyword_record
class Refreshed:
    path: Path  # where the catalog was written
    releases: tuple[str, ...]  # the releases read
    said: tuple[str, ...]  # what was read, and what could not be, line by line
    builds: int
    left_out: int


def refresh_catalog(facts_path: Path | None, wheel_index: str | None, pypi: str | None) -> Refreshed:
    from pickvariant._base.files import write_atomic
    from pickvariant.sources.wheels import facts as wheel_facts
    from pickvariant.sources.wheels.refresh import refresh

    facts = wheel_facts.read_facts(facts_path or wheel_facts.FACTS)
    root = settings.wheel_index(wheel_index, os.environ, facts["index_root"]).rstrip("/")
    index = pypi_index(pypi, os.environ)
    said: list[str] = []
    releases, sources = refresh(facts, root, index, said.append)
    merged = {**facts, "sources": {**facts["sources"], **sources}, "releases": [*facts["releases"], *releases]}
    wheel_facts.checked(merged, "read from the index")
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    based_on = wheel_facts.facts_digest(facts_path or wheel_facts.FACTS)
    document = wheel_facts.derive(merged, refreshed=today, based_on=based_on)
    path = wheel_facts.refreshed_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, wheel_facts.render(document))
    return Refreshed(
        path=path,
        releases=tuple(release["torch"] for release in releases),
        said=tuple(said),
        builds=len(document["builds"]),
        left_out=len(document["left_out"]),
    )


def pypi_index(stated: str | None, env: Mapping[str, str]) -> str:
    """The index the user's installer takes torch from, where --pypi does not name it (see the module's text)."""
    if stated is not None:
        return _checked(stated, "--pypi")
    for variable in ("PIP_INDEX_URL", "UV_DEFAULT_INDEX"):
        if env.get(variable):
            return _checked(env[variable], variable)
    configured = _pip_config()
    if configured:
        return _checked(configured, "pip's global.index-url")
    try:
        from pip._internal.models.index import PyPI  # pip's own name for PyPI's simple index
    except ImportError:
        raise BadInput(
            "--pypi: no index is set for pip or uv here, and pip is not importable to name its default: give --pypi URL"
        ) from None
    return str(PyPI.simple_url)


def _pip_config() -> str | None:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
            capture_output=True, text=True, timeout=30, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def _checked(url: str, given_as: str) -> str:
    if not url.startswith(("https://", "http://")) or not url.isprintable() or len(url) > 2000:
        raise BadInput(f"{given_as} {public_url(url)!r:.80}: not an http(s) URL of a simple index")
    return url.rstrip("/")
