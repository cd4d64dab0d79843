"""A wheel index given with credentials (`https://user:SECRET@host/whl`) never shows them (issue 51).

detect (text, Markdown, JSON), report, plan (every format: a plan travels to every node), the install plan and its
log all name the index without them, as pip masks them in its own output. Only the requirements and pyproject
outputs carry them, since they need the URL to work, and they say so. The real pip installs from a mirror on
127.0.0.1 given that way: it gets the index in its environment (PIP_INDEX_URL), never in its argument list.
A root with a query or a fragment is refused: `ROOT/cu126` would land inside them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from conftest import cli_runner, cpuinfo_path, fresh_venv
from test_plan import detect_line
from test_wheel_install import GTX_1080, _env, _installed, _pickvariant
from wheel_mirror import build_mirror, served

from pickvariant.cli.main import app

runner = cli_runner()
SECRET = "S3cr3tT0ken"
ROOT = f"https://deploy:{SECRET}@wheels.example.invalid/whl"
H100 = ["--gpu", "9.0", "--driver", "580.95.05", "--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell"))]


@pytest.mark.parametrize(
    "args",
    [
        ["detect", "--source", "wheels", *H100],
        ["detect", "--source", "wheels", "--format", "json", *H100],
        ["detect", "--source", "wheels", "--format", "markdown", *H100],
        ["detect", "--source", "wheels", "--explain", *H100],
        ["report", "--source", "wheels", *H100],
        ["report", "--source", "wheels", "--format", "json", *H100],
        ["install", "--source", "wheels", "--dry-run", "--python", sys.executable, *H100],
        ["install", "--source", "wheels", "--dry-run", "--format", "json", "--python", sys.executable, *H100],
    ],
    ids=lambda args: " ".join(args[:4]),
)
@pytest.mark.parametrize("given", ["option", "variable"])
def test_the_index_is_named_without_its_credentials(args, given) -> None:
    argv, env = ([*args, "--wheel-index", ROOT], {}) if given == "option" else (args, {"PICKVARIANT_WHEEL_INDEX": ROOT})
    result = runner.invoke(app, argv, env=env)
    assert result.exit_code == 0, result.output
    assert SECRET not in result.stdout + result.stderr
    assert "https://wheels.example.invalid/whl/cu" in result.stdout


@pytest.mark.parametrize(
    "password", ["Pa55/w0rd", "Pa55@w0rd", "Pa55/w0@rd", "Pa55:w0rd", "Pa55@wx0/rdz", "Pqq@5q5@wx0/rqz/dqz"]
)
@pytest.mark.parametrize("command", [["detect"], ["detect", "--format", "json"], ["report"]])
def test_a_password_of_any_shape_is_never_shown(password, command) -> None:
    """A password holding `/`, `@` or `:` unencoded (urllib then reads the host wrongly, and a display that cuts at
    the first `/` showed it whole): accepted or refused, no output shows any part of it."""
    root = f"https://deploy:{password}@wheels.example.invalid/whl"
    result = runner.invoke(app, [*command, "--source", "wheels", "--wheel-index", root, *H100])
    shown = result.stdout + result.stderr
    assert "Traceback" not in shown and result.exit_code in (0, 2), shown
    assert "Pa55" not in shown and "w0rd" not in shown and "w0@rd" not in shown, shown
    assert not [part for part in re.split(r"[/@:]", password) if len(part) >= 3 and part in shown], shown


@pytest.mark.parametrize("fmt", ["requirements", "pyproject"])
def test_the_outputs_that_need_the_url_carry_it_and_say_so(fmt) -> None:
    result = runner.invoke(app, ["detect", "--source", "wheels", "--format", fmt, "--wheel-index", ROOT, *H100])
    assert result.exit_code == 0, result.output
    assert f"{ROOT}/cu" in result.stdout
    assert "holds the index's credentials" in result.stdout


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_a_plan_carries_no_credential_to_the_nodes(tmp_path, fmt) -> None:
    cluster = tmp_path / "cluster.jsonl"
    haswell = cpuinfo_path("linux-rhel7-haswell")
    cluster.write_text(detect_line("n1", haswell, ["9.0"], "580.95.05") + detect_line("n2", haswell, [], None))
    result = runner.invoke(app, ["plan", str(cluster), "--source", "wheels", "--wheel-index", ROOT, "--format", fmt])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.stdout + result.stderr
    assert "wheels.example.invalid/whl/cu" in result.stdout


@pytest.mark.parametrize("root", ["https://host/whl?token=x", "https://host/whl#frag", "https://host/whl/?a=b"])
def test_an_index_root_with_a_query_or_fragment_is_refused(root) -> None:
    result = runner.invoke(app, ["detect", "--source", "wheels", "--wheel-index", root, *H100])
    assert result.exit_code == 2
    assert (
        result.stderr.count("\n") == 1 and "--wheel-index" in result.stderr and "query or a fragment" in result.stderr
    )
    assert "token=x" not in result.stderr


def test_pip_installs_from_an_index_given_with_credentials_and_nothing_shows_them(tmp_path) -> None:
    """The real pip, a mirror on 127.0.0.1 named with user:SECRET@: the install succeeds, and neither pickvariant's
    output, its log, nor pip's argument list holds the secret."""
    python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    detect = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", "--python-version", python_version, *GTX_1080],
        _env(tmp_path),
        tmp_path,
    )
    chosen = json.loads(detect.stdout)["recommendation"]
    build_mirror(tmp_path / "mirror", {chosen["variant"]: [("torch", chosen["torch"])]})
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        root = url.replace("http://", f"http://deploy:{SECRET}@")
        env = _env(tmp_path)
        done = _pickvariant(
            ["install", "--source", "wheels", "--python", str(python), "--wheel-index", root, *GTX_1080, "--yes",
             "--no-verify"],
            env, tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert _installed(python, "torch") == chosen["torch"]
    assert SECRET not in done.stdout + done.stderr
    logs = list(Path(tmp_path).glob("pickvariant-wheels-*.log"))
    assert logs and all(SECRET not in log.read_text() for log in logs)
    # The installer ran once: one command in the log, nothing found "already satisfied" by a second run.
    assert [line for log in logs for line in log.read_text().splitlines() if line.startswith("$ ")] != []
    assert sum(line.startswith("$ ") for log in logs for line in log.read_text().splitlines()) == 1
    assert "Requirement already satisfied: torch" not in done.stderr
    assert f"PIP_INDEX_URL={url}/{chosen['variant']}" in done.stdout
    assert os.environ.get("PIP_INDEX_URL") is None or SECRET not in os.environ["PIP_INDEX_URL"]
