"""A report goes into tickets: it names no local path, and a path that reaches any output is escaped (issue 51).

A folder whose name holds a line break, a Markdown link, an `<img onerror>` and an escape sequence holds the CPU dump
and a link to this interpreter: `report` (Flox and wheels, Markdown and JSON) names neither path, and `detect
--format markdown` keeps its code fence whole with the interpreter's path in it.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import cli_runner, cpuinfo_path

from pickvariant.cli.main import app

runner = cli_runner()
HOSTILE = "tickets\n[click](evil.example)<img src=x onerror=alert(1)>\x1b[31m"


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / HOSTILE
    folder.mkdir()
    shutil.copy(cpuinfo_path("linux-rhel7-haswell"), folder / "node17.cpuinfo")
    (folder / "python").symlink_to(sys.executable)
    return folder / "node17.cpuinfo", folder / "python"


@pytest.mark.parametrize("source", ["flox", "wheels"])
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_a_report_names_no_local_path(hostile, source, fmt) -> None:
    cpuinfo, python = hostile
    args = ["report", "--source", source, "--format", fmt, "--cpuinfo", str(cpuinfo), "--python", str(python)]
    result = runner.invoke(app, [*args, "--gpu", "9.0", "--driver", "580.95.05"])
    assert result.exit_code == 0, result.output
    for leaked in ("node17", "evil.example", "onerror", "\x1b", str(cpuinfo.parent)):
        assert leaked not in result.stdout, leaked


def test_a_path_in_a_markdown_code_fence_cannot_leave_it(hostile) -> None:
    cpuinfo, python = hostile
    args = ["detect", "--source", "wheels", "--format", "markdown", "--cpuinfo", str(cpuinfo), "--python", str(python)]
    result = runner.invoke(app, [*args, "--gpu", "9.0", "--driver", "580.95.05"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    opened = lines.index("```sh")
    assert lines[opened + 2] == "```" and "\x1b" not in result.stdout
    prose = [re.sub(r"`[^`]*`", "", line) for line in lines[:opened] + lines[opened + 3 :]]  # code spans show as typed
    assert not [line for line in prose if "<img" in line or re.search(r"(?<!\\)\]\(evil", line)]


def test_the_install_plan_shows_an_interpreters_path_with_its_control_characters_escaped(hostile) -> None:
    cpuinfo, python = hostile
    args = ["install", "--source", "wheels", "--dry-run", "--cpuinfo", str(cpuinfo), "--python", str(python)]
    result = runner.invoke(app, [*args, "--gpu", "9.0", "--driver", "580.95.05"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    plan = next(line for line in result.stdout.splitlines() if line.startswith("Plan: install"))
    assert "tickets\\n[click]" in plan  # the line break shown as \n: the path stays on the plan's line


@pytest.mark.parametrize("source", ["flox", "wheels"])
def test_a_report_of_a_stated_machine_needs_its_cpu_for_every_source(source) -> None:
    """Issue 52: a report describes a stated machine whole or not at all; this machine's CPU is never mixed in."""
    result = runner.invoke(app, ["report", "--source", source, "--gpu", "9.0", "--driver", "580.95.05"])
    assert result.exit_code == 2
    assert "a described machine needs its CPU" in result.stderr and result.stderr.count("\n") == 1
