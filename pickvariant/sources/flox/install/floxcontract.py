"""What the real Flox CLI accepts, refuses and prints, as data read from its source (flox_contract.json).

pickvariant plans its commands from it, explains Flox's failures with it, and the test stand-in
refuses what it names: a newer Flox is one update of the JSON file and its `source.commit`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pickvariant._base.records import record

CONTRACT = Path(__file__).resolve().parent / "flox_contract.json"


@functools.cache
def contract() -> Mapping[str, Any]:
    return json.loads(CONTRACT.read_text(encoding="utf-8"))


def message(key: str, **fields: str) -> str:
    """One of Flox's messages, with its fields filled in."""
    return contract()["messages"][key]["text"].format(**fields)


def message_head(key: str) -> str:
    """The fixed start of a message's first line (up to its first field): what to look for in Flox's output."""
    return contract()["messages"][key]["text"].split("{", 1)[0].splitlines()[0].strip()


def has_environment(directory: Path) -> bool:
    """Flox's own test: an environment is a `.flox/env.json` (a `.flox` alone is a corrupt one)."""
    return (directory / contract()["files"]["env_json"]).is_file()


def python_package(python: str) -> str:
    """The Flox Catalog pkg-path of CPython X.Y (nixpkgs' attribute, e.g. python313)."""
    return "python" + python.replace(".", "")


_VERSION_IN_OUTPUT = re.compile(r"(\d+\.\d+\.\d+)")


def parse_flox_version(output: str) -> Version | None:
    """`flox --version` prints the bare version (cli/flox/src/main.rs; 1.14.1, or 1.14.1-132-gabc for a dev build)."""
    match = _VERSION_IN_OUTPUT.search(output)
    try:
        return Version(match.group(1)) if match else None
    except InvalidVersion:
        return None


@record
class RunSupport:
    """Whether `flox run -p` can start the probe for a published variant, and if not, why."""

    usable: bool
    why_not: tuple[str, ...]


def run_can_probe(version: Version | None, package_has_python: bool = False) -> RunSupport:
    """`flox run -p ORG/PKG -- python3 probe.py` needs: a Flox that has `run`, a version pin (several
    branches publish the same name), and python3 inside the package, since run finds commands only there."""
    feature = contract()["features"]["run_package"]
    reasons = []
    if version is None or version < Version(feature["min_version"]):
        reasons.append(
            f"flox run needs Flox {feature['min_version']} or newer (found {version or 'an unknown version'})"
        )
    if not feature["accepts_version"]:
        reasons.append("flox run takes no @VERSION, and several branches publish the same package name")
    if not package_has_python:
        reasons.append(
            f"flox run looks for the command only in the package ({feature['commands_from']}), and a PyTorch build has no python3"
        )
    return RunSupport(not reasons, tuple(reasons))


def login_advice() -> str:
    login = contract()["login"]
    return (
        f"log in to FloxHub (`flox auth login`, or {login['token_env']} with Flox ≥ {login['token_env_min_version']}; "
        f"where no one can answer a prompt, `pickvariant install {login['token_file_flag']} PATH`) and run this again"
    )


# Flox's messages that call for the same remedy whatever command printed them: message keys, advice.
_REMEDIES: tuple[tuple[tuple[str, ...], Callable[[], str]], ...] = (
    (("auth_required", "not_logged_in", "token_expired"), login_advice),
    (
        ("token_unverified", "base_catalog_unreachable", "token_file_unverified"),
        lambda: "Flox could not reach FloxHub: it needs the network",
    ),
    (("token_file_unreadable",), lambda: "Flox could not read the token file: check --token-file and its permissions"),
    (
        ("token_file_invalid", "token_file_expired"),
        lambda: (
            "the token in --token-file is not a valid, current FloxHub token: write a fresh one (a personal access "
            "token, or a service account's) into it"
        ),
    ),
    (
        ("lockfile_missing_system", "lockfile_incompatible"),
        lambda: (
            "the environment is not locked for this system: add this system to its options.systems with "
            "`flox edit -d DIR`, or re-lock it with `flox upgrade -d DIR` (DIR: the --build-dir or --dir)"
        ),
    ),
    (
        ("package_not_found",),
        lambda: "the package is not in that catalog, or this account cannot see it: check --org and `flox search`",
    ),
    (
        ("version_not_found",),
        lambda: (
            "that catalog has the package, but not the PyTorch version the decision chose: publish it from the matching branch"
        ),
    ),
)


def remedy(output: str) -> str | None:
    """The one advice that fits what Flox printed, if it printed something known."""
    for keys, advice in _REMEDIES:
        if any(message_head(key) in output for key in keys):
            return advice()
    return None
