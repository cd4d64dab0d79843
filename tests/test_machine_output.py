"""Every command with a machine-readable output, run as a real process, its stdout parsed whole.

In-process runners capture `sys.stdout`, not file descriptor 1: a C or C++ library that prints there
(HiGHS 1.16's banner from its constructor) is invisible to them and breaks every pipe a user builds.
Here each command is its own `python -m pickvariant` process, and its whole stdout must be one JSON
document (or, for `recipe`, one Nix expression the real `nix-instantiate --parse` accepts).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cpuinfo_path, require

HASWELL = str(cpuinfo_path("linux-rhel7-haswell"))
SAPPHIRE_RAPIDS = str(cpuinfo_path("linux-unknown-sapphirerapids"))
H100 = ["--cpuinfo", SAPPHIRE_RAPIDS, "--gpu", "9.0", "--driver", "580.95.05"]


def _run(args: list[str], tmp_path: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PICKVARIANT_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )


def _json(args: list[str], tmp_path: Path, codes: tuple[int, ...] = (0,)) -> object:
    done = _run(args, tmp_path)
    assert done.returncode in codes, done.stderr.decode()
    return json.loads(done.stdout)  # the whole of stdout: nothing before or after the document


def _nodes(tmp_path: Path) -> Path:
    lines = []
    for label, machine in (("gpu01", H100), ("cpu01", ["--cpuinfo", HASWELL, "--no-gpu"])):
        done = _run(["detect", "--format", "json", "--compact", "--label", label, *machine], tmp_path)
        assert done.returncode == 0, done.stderr.decode()
        lines.append(done.stdout.decode())
    nodes = tmp_path / "nodes.jsonl"
    nodes.write_text("".join(lines))
    return nodes


@pytest.mark.parametrize(
    ("args", "keys", "check"),
    [
        (["detect", "--format", "json", *H100], {"schema_version", "recommendation", "rejected"}, "recommendation"),
        (
            ["detect", "--format", "json", "--cpuinfo", HASWELL, "--no-gpu", "--with", "torchvision"],
            {"recommendation", "companions", "set"},
            "set",
        ),
        (["report", "--format", "json", "--cpuinfo", HASWELL, "--no-gpu"], {"recommendation", "hardware"}, None),
        (
            ["list", "--format", "json", "--branch", "pytorch-2.10-python313"],
            {"source", "variants", "left_out"},
            "variants",
        ),
        (["list", "--format", "json", "--project", "torchvision"], {"source", "companions"}, "companions"),
        (
            [
                "install",
                "--format",
                "json",
                "--dry-run",
                "--cpuinfo",
                HASWELL,
                "--no-gpu",
                "--org",
                "acme",
                "--dir",
                "env",
            ],
            {"variant", "steps", "method"},
            "steps",
        ),
        (
            [
                "install",
                "--format",
                "json",
                "--dry-run",
                "--cpuinfo",
                HASWELL,
                "--no-gpu",
                "--generate",
                "--dir",
                "env",
            ],
            {"variant", "steps", "method"},
            "steps",
        ),
    ],
    ids=["detect", "detect-with", "report", "list", "list-project", "install-org", "install-build"],
)
def test_a_json_output_is_one_document_on_stdout(args, keys, check, tmp_path) -> None:
    """Each command's whole stdout is one JSON object holding that command's own fields, the answer not empty."""
    if args[0] == "install":
        args = [arg if arg != "env" else str(tmp_path / "env") for arg in args]
    document = _json(args, tmp_path)
    assert isinstance(document, dict) and keys <= set(document), sorted(document)
    assert check is None or document[check], f"{check} is empty"


def test_install_dry_run_json_is_the_plan_it_prints_as_text(tmp_path) -> None:
    common = ["install", "--dry-run", "--cpuinfo", HASWELL, "--no-gpu", "--org", "acme", "--dir", str(tmp_path / "env")]
    plan = _json([*common, "--format", "json"], tmp_path)
    assert isinstance(plan, dict)
    text = _run(common, tmp_path).stdout.decode()
    assert plan["variant"]["package"] == "pytorch-python313-cpu-avx2" and plan["method"] == "published"
    runs = [step["run"] for step in plan["steps"] if "run" in step]
    assert runs and all(f"run: {' '.join(argv)}" in text for argv in runs)
    assert plan["verify"] is not None and plan["verify"][-1] == "--quick"
    refused = _run(common[:1] + common[2:] + ["--format", "json"], tmp_path)
    assert refused.returncode == 2 and refused.stderr.decode().startswith(
        "pickvariant: --format json of a real install asks nothing"
    )


@pytest.mark.parametrize("output", ["json", "text", "markdown"])
def test_plan_prints_only_its_own_output_whatever_the_solver_library_prints(output, tmp_path) -> None:
    """HiGHS 1.16 writes "Running HiGHS …" to fd 1 when its solver is constructed: not into a plan."""
    done = _run(["plan", str(_nodes(tmp_path)), "--format", output], tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    stdout = done.stdout.decode()
    assert "Running HiGHS" not in stdout and "Copyright" not in stdout, stdout[:300]
    if output == "json":
        assert json.loads(stdout)["input"]["nodes"] == 2
    else:  # the plan's own first line, and its own account of the solver at the end
        assert stdout.lstrip("# ").startswith("2 variant"), stdout[:200]
        assert stdout.rstrip().endswith("HiGHS (highspy): Optimal, objective 136"), stdout[-200:]


def test_verify_json_is_one_document_on_stdout(tmp_path) -> None:
    require(importlib.util.find_spec("torch") is not None, "torch is not installed (pip install torch==2.13.0)")
    document = _json(["verify", "--format", "json", "--quick", "--python", sys.executable], tmp_path, codes=(0, 1))
    assert isinstance(document, dict) and "passed" in document


def test_a_printed_recipe_is_one_nix_expression(tmp_path) -> None:
    require(shutil.which("nix-instantiate") is not None, "nix-instantiate is not installed (Debian package nix-bin)")
    done = _run(["recipe", "pytorch-python313-cuda13_1-sm90-avx512", "--generate"], tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    recipe = tmp_path / "recipe.nix"
    recipe.write_bytes(done.stdout)
    parsed = subprocess.run(
        ["nix-instantiate", "--parse", str(recipe)], capture_output=True, text=True, timeout=60, check=False
    )
    assert parsed.returncode == 0, parsed.stderr
