from __future__ import annotations

import os
from pathlib import Path

import pytest

from pickvariant.catalog import Catalog, load_catalog

TESTS = Path(__file__).resolve().parent
CPUINFO = TESTS / "fixtures" / "cpuinfo"
DATA = TESTS / "data"
REPO = TESTS.parent

# CI sets this so that a missing real dependency (nix-instantiate, torch) fails the run
# instead of skipping quietly.
STRICT_ENV = "PICKVARIANT_TESTS_STRICT"


def require(condition: bool, reason: str) -> None:
    """Skip with the reason printed, or fail when CI asked for every real dependency."""
    if condition:
        return
    if os.environ.get(STRICT_ENV) == "1":
        pytest.fail(f"{reason} ({STRICT_ENV}=1 turns this skip into a failure)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(REPO / "catalog.json")


def cpuinfo_path(name: str) -> Path:
    return CPUINFO / name
