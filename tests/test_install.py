"""`pickvariant install` through a fake `flox` written onto PATH: Flox cannot be installed here, so
this is the seam's contract with Flox's documented CLI (init -d, install -d, build -d)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import cpuinfo_path
from pickvariant.cli import app
from pickvariant.flox import Command, Interrupted, run
from pickvariant.errors import OperationFailed

FAKE_FLOX = r'''#!/usr/bin/env python3
import json, os, sys, time, pathlib
calls = pathlib.Path(os.environ["FAKE_FLOX_CALLS"])
with calls.open("a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}) + "\n")
mode = os.environ.get("FAKE_FLOX_MODE", "ok")
args = sys.argv[1:]
directory = pathlib.Path(args[args.index("-d") + 1]) if "-d" in args else pathlib.Path.cwd()
if mode.startswith("sleep:"):
    print("building...", flush=True)
    time.sleep(float(mode.split(":")[1]))
if mode == "long":
    for i in range(500):
        print(f"log line {i}")
if mode.startswith("fail:") and args[0] in ("install", "build"):
    if args[0] == "install":
        (directory / ".flox/env/manifest.toml").write_text("half-written\n")
    print("error: something went wrong", flush=True)
    sys.exit(int(mode.split(":")[1]))
if args[0] == "init":
    (directory / ".flox/env").mkdir(parents=True, exist_ok=True)
    (directory / ".flox/env/manifest.toml").write_text("version = 1\n")
elif args[0] == "install":
    with (directory / ".flox/env/manifest.toml").open("a") as f:
        f.write(f"[install]\n{args[-1].split('/')[-1]}.pkg-path = \"{args[-1]}\"\n")
elif args[0] == "build":
    (directory / f"result-{args[-1]}").mkdir()
print(f"flox {args[0]} done")
'''

runner = CliRunner()
HASWELL = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "8.6", "--driver", "580.95.05"]


@pytest.fixture
def fake_flox(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    flox = bin_dir / "flox"
    flox.write_text(FAKE_FLOX)
    flox.chmod(flox.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FLOX_CALLS", str(calls))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("PICKVARIANT_FLOX_ORG", raising=False)

    def recorded() -> list[dict]:
        return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []

    return recorded


def test_published_path_inits_and_installs_into_the_target(tmp_path, fake_flox) -> None:
    target = tmp_path / "project"
    target.mkdir()
    result = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert result.exit_code == 0, result.output
    package = "pytorch-python313-cuda13_0-sm86-avx2"
    assert [c["argv"] for c in fake_flox()] == [["init", "-d", str(target)], ["install", "-d", str(target), f"acme/{package}"]]
    assert f"acme/{package}" in (target / ".flox/env/manifest.toml").read_text()
    assert "Verify: skipped" in result.stdout


def test_org_from_the_environment_and_existing_environment_is_not_reinitialised(tmp_path, fake_flox, monkeypatch) -> None:
    target = tmp_path / "project"
    (target / ".flox/env").mkdir(parents=True)
    (target / ".flox/env/manifest.toml").write_text("version = 1\n")
    monkeypatch.setenv("PICKVARIANT_FLOX_ORG", "acme")
    assert runner.invoke(app, ["install", *HASWELL, "--dir", str(target), "--yes", "--no-verify"]).exit_code == 0
    assert [c["argv"][0] for c in fake_flox()] == ["install"]


def test_build_path_writes_a_tracked_recipe_and_builds(tmp_path, fake_flox) -> None:
    build = tmp_path / "build"
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(build), "--yes", "--no-verify"])
    assert result.exit_code == 0, result.output
    package = "pytorch-python313-cuda13_0-sm86-avx2"
    recipe = build / ".flox/pkgs" / f"{package}.nix"
    assert recipe.read_text().startswith("# PyTorch 2.10.0")
    tracked = subprocess.run(["git", "ls-files"], cwd=build, capture_output=True, text=True).stdout.split()
    assert f".flox/pkgs/{package}.nix" in tracked
    assert [c["argv"] for c in fake_flox()] == [["init", "-d", str(build)], ["build", "-d", str(build), package]]
    assert all(c["cwd"] == str(build) for c in fake_flox())
    assert "hours" in result.stdout and f"result-{package}" in result.stdout
    record = json.loads((tmp_path / "cache/pickvariant/last-install.json").read_text())
    assert record["package"] == package


def test_dry_run_runs_nothing_and_shows_every_command(tmp_path, fake_flox) -> None:
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(tmp_path / "b"), "--dry-run"])
    assert result.exit_code == 0
    assert "flox build -d" in result.stdout and "Dry run" in result.stdout
    assert fake_flox() == [] and not (tmp_path / "b").exists()


def test_without_a_terminal_and_without_yes_it_refuses(tmp_path, fake_flox) -> None:
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(tmp_path / "b")])
    assert result.exit_code == 2 and "--yes" in result.stderr
    assert fake_flox() == []


def test_failing_flox_exits_1_with_code_log_tail_and_restores_the_manifest(tmp_path, fake_flox, monkeypatch) -> None:
    target = tmp_path / "project"
    (target / ".flox/env").mkdir(parents=True)
    (target / ".flox/env/manifest.toml").write_text("version = 1\n# mine\n")
    monkeypatch.setenv("FAKE_FLOX_MODE", "fail:7")
    result = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert result.exit_code == 1
    assert "exit code 7" in result.stderr and "something went wrong" in result.stderr and ".log" in result.stderr
    assert (target / ".flox/env/manifest.toml").read_text() == "version = 1\n# mine\n"


def test_flox_missing_exits_1_with_how_to_install(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(tmp_path), "--yes", "--no-verify"])
    assert result.exit_code == 1 and "install Flox" in result.stderr


def test_a_package_that_does_not_fit_is_refused_unless_forced(tmp_path, fake_flox) -> None:
    args = ["install", *HASWELL, "--package", "pytorch-python313-cuda13_0-sm90-avx512", "--build-dir", str(tmp_path / "b"), "--dry-run"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "avx512f" in refused.stderr and "8.6" in refused.stderr
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0


def test_an_existing_different_recipe_is_not_overwritten(tmp_path, fake_flox) -> None:
    build = tmp_path / "build"
    mine = build / ".flox/pkgs/pytorch-python313-cuda13_0-sm86-avx2.nix"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my tuned recipe\n")
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(build), "--yes", "--no-verify"])
    assert result.exit_code == 2 and str(mine) in result.stderr
    assert mine.read_text() == "# my tuned recipe\n"
    assert not [c for c in fake_flox() if c["argv"][0] == "build"]


def test_long_output_goes_to_the_log(tmp_path, fake_flox, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FLOX_MODE", "long")
    log = tmp_path / "flox.log"
    lines: list[str] = []
    run(Command(("flox", "build", "-d", str(tmp_path), "x"), tmp_path, "build"), log, lines.append)
    assert "log line 499" in log.read_text() and len(lines) == 501


def test_a_timeout_stops_flox_and_says_so(tmp_path, fake_flox, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FLOX_MODE", "sleep:30")
    with pytest.raises(OperationFailed, match="timed out after 0.5 s"):
        run(Command(("flox", "build", "-d", str(tmp_path), "x"), tmp_path, "build"), tmp_path / "l.log", timeout_s=0.5)


def test_ctrl_c_stops_flox_cleanly(tmp_path, fake_flox, monkeypatch) -> None:
    """A real SIGINT to a real pickvariant process while the fake flox sleeps."""
    import signal
    import time

    monkeypatch.setenv("FAKE_FLOX_MODE", "sleep:30")
    process = subprocess.Popen(
        [sys.executable, "-m", "pickvariant", "install", *HASWELL, "--org", "acme", "--dir", str(tmp_path), "--yes", "--no-verify"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    for _ in range(100):
        if fake_flox() and fake_flox()[-1]["argv"][0] == "install":
            break
        time.sleep(0.1)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "interrupted" in err and "was stopped" in err and "Traceback" not in err
