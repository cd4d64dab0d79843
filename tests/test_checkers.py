"""The checkers CI runs, as tests: ruff's lint and format (one line length, pyproject.toml) and mypy (its
settings in pyproject.toml) over the package, the tests, the tools and the benchmarks. README's test
command runs them, so a change that a checker refuses fails where the tests fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, require


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    require(Path(found).exists(), f"{name} is not installed (pip install -e '.[test]')")
    return found


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_ruff_finds_nothing_to_lint() -> None:
    done = _run(_tool("ruff"), "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_file_is_formatted_as_ruff_formats_it() -> None:
    done = _run(_tool("ruff"), "format", "--no-cache", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_no_type_error() -> None:
    done = _run(_tool("mypy"), "--no-incremental", "--cache-dir", os.devnull)  # nothing written into the checkout
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found")
