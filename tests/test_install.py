"""`pickvariant install` through a fake `flox` written onto PATH: Flox cannot be installed here, so
this is the seam's contract with Flox's documented CLI (init -d, install -d, build -d)."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from conftest import cpuinfo_path
from pickvariant.cli import app
from pickvariant.flox import Command, run
from pickvariant.errors import OperationFailed


runner = CliRunner()
HASWELL = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "8.6", "--driver", "580.95.05"]


def test_published_path_inits_and_installs_into_the_target(tmp_path, fake_flox) -> None:
    target = tmp_path / "project"
    target.mkdir()
    result = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert result.exit_code == 0, result.output
    package = "pytorch-python313-cuda13_1-sm86-avx2"
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
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(build), "--generate", "--yes", "--no-verify"])
    assert result.exit_code == 0, result.output
    package = "pytorch-python313-cuda13_1-sm86-avx2"
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
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(tmp_path / "b"), "--generate", "--dry-run"])
    assert result.exit_code == 0
    assert "flox build -d" in result.stdout and "Dry run" in result.stdout
    assert fake_flox() == [] and not (tmp_path / "b").exists()


def test_a_package_that_does_not_fit_is_refused_unless_forced(tmp_path, fake_flox) -> None:
    args = ["install", *HASWELL, "--package", "pytorch-python313-cuda13_1-sm90-avx512", "--build-dir", str(tmp_path / "b"), "--generate", "--dry-run"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "avx512f" in refused.stderr and "8.6" in refused.stderr
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0


def test_an_existing_different_recipe_is_not_overwritten(tmp_path, fake_flox) -> None:
    build = tmp_path / "build"
    mine = build / ".flox/pkgs/pytorch-python313-cuda13_1-sm86-avx2.nix"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my tuned recipe\n")
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(build), "--generate", "--yes", "--no-verify"])
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
