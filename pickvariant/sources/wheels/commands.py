"""`pickvariant catalog wheels`: the wheel catalog derived from the wheel facts; with --refresh, the releases an index
holds beyond them read from their wheels by sources/wheels/catalog/refresh.py: the wheels source's own command's work,
below the command line that parses its options (sources/wheels/commandline.py).

The index --refresh reads PyPI's releases from is the one the user's installer is set to: `--pypi URL`, else pip's
(PIP_INDEX_URL, else its configuration files' `install.index-url` or `global.index-url`), else uv's UV_DEFAULT_INDEX,
else pip's own default, as pip itself names it. PyTorch's variant indexes come from `--wheel-index ROOT` (PICKVARIANT_WHEEL_INDEX), else the
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
class WheelsOptions:
    facts: Path | None = None
    output: Path | None = None
    check: bool = False
    force: bool = False


@keyword_record
class WheelsDone:
    """The wheel catalog derived from the facts: its text (printed when no --output is given) and what was done."""

    text: str
    said: tuple[str, ...]
    summary: str


def wheels(options: WheelsOptions) -> WheelsDone:
    """`pickvariant catalog wheels`: the wheel catalog from the facts file, printed, written or checked."""
    from pickvariant._base.errors import OperationFailed
    from pickvariant._base.files import check_writable, read_regular, write_atomic
    from pickvariant.sources.wheels.catalog import facts as wheel_facts

    if options.check and options.output is None:
        raise BadInput("--check compares against a file: give it with -o FILE")
    document = wheel_facts.derive(wheel_facts.read_facts(options.facts or wheel_facts.FACTS))
    text = wheel_facts.render(document)
    summary = f"{len(document['builds'])} wheel builds, {len(document['left_out'])} left out"
    if options.output is None:
        return WheelsDone(text=text, said=(), summary=summary)
    if options.check:
        found = (
            read_regular(options.output, wheel_facts.MAX_FACTS_BYTES, "wheel catalog")
            if options.output.exists()
            else b""
        )
        if found.decode("utf-8", "replace") != text:
            raise OperationFailed(
                f"{options.output} differs from what the wheel facts give: run `pickvariant catalog wheels -o {options.output}`"
            )
        return WheelsDone(text="", said=(f"{options.output} matches the wheel facts",), summary=summary)
    if check_writable(options.output, text, options.force):
        write_atomic(options.output, text)
        return WheelsDone(text="", said=(f"{options.output} written",), summary=summary)
    return WheelsDone(text="", said=(f"{options.output} unchanged",), summary=summary)


@keyword_record
class Refreshed:
    path: Path  # where the catalog is
    releases: tuple[str, ...]  # the releases read
    said: tuple[str, ...]  # what was read, and what could not be, line by line
    builds: int
    left_out: int
    outcome: str  # what became of the refreshed catalog: written, or why the one there was kept


def refresh_catalog(facts_path: Path | None, wheel_index: str | None, pypi: str | None) -> Refreshed:
    """Read the index, derive the catalog with what was read, and keep it in the cache, unless that would lose facts:
    a refresh that read no new release writes nothing (the shipped catalog, or the one refreshed before, answers as
    it did), and an incomplete one (a page or wheel that could not be read) does not replace a refreshed catalog of
    the same facts that judges more builds."""
    from pickvariant.sources.hardware_json import load_hardware
    from pickvariant.sources.wheels.catalog import facts as wheel_facts
    from pickvariant.sources.wheels.catalog.refresh import refresh

    facts = wheel_facts.read_facts(facts_path or wheel_facts.FACTS)
    root = settings.wheel_index(wheel_index, os.environ, facts["index_root"]).rstrip("/")
    index = pypi_index(pypi, os.environ)
    said: list[str] = []
    seconds = settings.network_timeout(os.environ)
    releases, sources, failed = refresh(facts, root, index, said.append, load_hardware(), seconds)
    merged = {**facts, "sources": {**facts["sources"], **sources}, "releases": [*facts["releases"], *releases]}
    wheel_facts.checked(merged, "read from the index")
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    based_on = wheel_facts.facts_digest(facts_path or wheel_facts.FACTS)
    document = wheel_facts.derive(merged, refreshed=today, based_on=based_on)
    path = wheel_facts.refreshed_path()
    outcome = _kept_instead(path, document, releases, failed)
    if outcome is None:
        from pickvariant._base.files import write_atomic

        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, wheel_facts.render(document))
        outcome = f"written to {path}" + (f" ({len(failed)} reads failed: run it again)" if failed else "")
    return Refreshed(
        path=path,
        releases=tuple(release["torch"] for release in releases),
        said=tuple(said),
        builds=len(document["builds"]),
        left_out=len(document["left_out"]),
        outcome=outcome,
    )


def _kept_instead(path: Path, document: dict, releases: list, failed: list[str]) -> str | None:
    """Why the refreshed catalog there is kept rather than replaced by `document`; None where it is replaced."""
    if not releases:
        return f"nothing new read: nothing written ({path} is left as it was)"
    if not failed:
        return None
    import json

    from pickvariant._base.errors import PickVariantError
    from pickvariant._base.files import read_regular
    from pickvariant.sources.wheels.catalog import facts as wheel_facts

    try:
        before = json.loads(read_regular(path, wheel_facts.MAX_FACTS_BYTES, "refreshed wheel catalog"))
    except (OSError, ValueError, PickVariantError):  # none there, or a damaged one: the new one replaces it
        return None
    if not isinstance(before, dict) or before.get("based_on") != document.get("based_on"):
        return None
    builds = before.get("builds")
    if not isinstance(builds, list) or len(builds) < len(document["builds"]):
        return None
    return (
        f"{len(failed)} reads failed, and the catalog refreshed before ({before.get('refreshed')}) judges as many "
        f"builds or more: it is kept, {path}"
    )


def pypi_index(stated: str | None, env: Mapping[str, str]) -> str:
    """The index the user's installer takes torch from, where --pypi does not name it (see the module's text)."""
    if stated is not None:
        return _checked(stated, "--pypi")
    if env.get("PIP_INDEX_URL"):
        return _checked(env["PIP_INDEX_URL"], "PIP_INDEX_URL")
    configured = _pip_config()
    if configured is not None:
        return _checked(configured[1], f"pip's {configured[0]}")
    if env.get("UV_DEFAULT_INDEX"):
        return _checked(env["UV_DEFAULT_INDEX"], "UV_DEFAULT_INDEX")
    default = _pip("-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)")  # pip's name for it
    if default is None:
        raise BadInput(
            "--pypi: no index is set for pip or uv here, and pip is not importable to name its default: give --pypi URL"
        )
    return default.strip()


def _pip_config() -> tuple[str, str] | None:
    """(the key, the URL) of the index pip's configuration files name for `pip install` (install.index-url over
    global.index-url, as pip reads them), from `pip config list` (every file pip reads, PIP_CONFIG_FILE's included)."""
    import ast

    listed = _pip("-m", "pip", "config", "list") or ""
    found: dict[str, str] = {}
    for line in listed.splitlines():
        key, equals, value = line.partition("=")
        if equals and key in ("install.index-url", "global.index-url"):
            try:
                literal = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(literal, str):
                found[key] = literal
    return next(((key, found[key]) for key in ("install.index-url", "global.index-url") if key in found), None)


def _pip(*args: str) -> str | None:
    """What pickvariant's interpreter prints run as `python -P ARGS` (the working directory is not put on sys.path)
    from an empty folder: a checkout's `pip/` runs nothing here. None where it fails; at most 1 MiB is kept."""
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="pickvariant-pip-") as quiet:
            done = subprocess.run(
                [sys.executable, "-P", *args],
                capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL, cwd=quiet,
            )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout[: 1 << 20].decode("utf-8", "replace") if done.returncode == 0 else None


def _checked(url: str, given_as: str) -> str:
    if not url.startswith(("https://", "http://")) or not url.isprintable() or len(url) > 2000:
        raise BadInput(f"{given_as} {public_url(url)!r:.80}: not an http(s) URL of a simple index")
    return url.rstrip("/")
