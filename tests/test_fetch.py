"""`pickvariant recipe PACKAGE` fetching the build repository's own recipe with real git: from a
`git daemon` this test serves on 127.0.0.1, from a local path, from an address nobody answers;
checked against the catalog; cached by repository and commit."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from buildrepo import as_upstream, commit_branch, git, recipe_for_row
from conftest import REPO, cli_runner, require

from pickvariant.cli.main import app

runner = cli_runner()
SHIPPED = json.loads((REPO / "catalog.json").read_text())
BRANCH = "pytorch-2.10-python313"
GOOD = "pytorch-python313-cuda13_1-sm90-avx512"
MPS = "pytorch-python313-darwin-mps"
UPSTREAM_PNAME = "pytorch-python313-cuda13_0-sm89-avx2"  # pname spelled pytorch210-… as upstream does
WRONG_TARGET = "pytorch-python313-cuda13_1-sm89-avx512"  # the file builds sm90 under an sm89 name
WRONG_PNAME = "pytorch-python313-cuda13_1-sm86-avx2"  # pname names another package


def row(package: str) -> dict:
    return next(r for r in SHIPPED["variants"] if r["branch"] == BRANCH and r["package"] == package)


def recipes(version: str = "") -> dict[str, str]:
    """The upstream's recipes: each in the upstream's shape, as sync classifies it into the shipped catalog's row."""
    names = (GOOD, MPS, WRONG_TARGET, WRONG_PNAME)
    files = {f"{name}.nix": recipe_for_row(SHIPPED, row(name)) + version for name in names}
    files[f"{UPSTREAM_PNAME}.nix"] = recipe_for_row(
        SHIPPED, row(UPSTREAM_PNAME), pname=UPSTREAM_PNAME.replace("pytorch-", "pytorch210-")
    )
    return files


def served_recipes(version: str = "") -> dict[str, str]:
    """A fork's: two recipes changed in their values so that they disagree with the catalog made from the upstream."""
    files = recipes(version)
    files[f"{WRONG_TARGET}.nix"] = recipe_for_row(SHIPPED, {**row(WRONG_TARGET), "gpu_arch": "sm90"})
    files[f"{WRONG_PNAME}.nix"] = recipe_for_row(
        SHIPPED, row(WRONG_PNAME), pname="pytorch-python313-cuda13_1-sm86-avx512"
    )
    return files


@pytest.fixture()
def upstream(tmp_path: Path, monkeypatch) -> Path:
    """The catalog's own repository, and the catalog synced from it (PICKVARIANT_CATALOG)."""
    require(shutil.which("git") is not None, "git is not installed")
    repo = tmp_path / "upstream" / "build-pytorch"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    commit_branch(repo, BRANCH, recipes())
    catalog = tmp_path / "upstream-catalog.json"
    synced = runner.invoke(app, ["catalog", "sync", str(repo), *as_upstream(repo), "-o", str(catalog)])
    assert synced.exit_code == 0, synced.output
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(catalog))
    return repo


@pytest.fixture()
def build_repo(upstream: Path, tmp_path: Path) -> Path:
    """A clone of the upstream (a fork, a mirror) whose branch moved on: the recipes a `--repo` fetch is served."""
    repo = tmp_path / "served" / "build-pytorch"
    repo.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--no-local", str(upstream), str(repo))
    git(repo, "branch", "-q", BRANCH, f"origin/{BRANCH}")
    commit_branch(repo, BRANCH, served_recipes(), parent=BRANCH)
    return repo


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Daemon:
    url: str
    log: Path

    def upload_packs(self) -> int:
        """How many fetches or ls-remotes the daemon has served so far."""
        return self.log.read_text().count("Request upload-pack")


@pytest.fixture()
def daemon(build_repo: Path, tmp_path: Path) -> Iterator[Daemon]:
    port = free_port()
    log = tmp_path / "daemon.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--verbose",
                "--listen=127.0.0.1",
                f"--port={port}",
                f"--base-path={build_repo.parent}",
                str(build_repo.parent),
            ],
            stdout=sink,
            stderr=sink,
        )
    try:
        for _ in range(100):
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail(f"git daemon did not listen: {log.read_text()}")
        yield Daemon(f"git://127.0.0.1:{port}/build-pytorch", log)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("PICKVARIANT_RECIPES_REPO", raising=False)
    return tmp_path / "cache" / "pickvariant"


def fetch(package: str, *extra: str):
    return runner.invoke(app, ["recipe", package, "--branch", BRANCH, *extra])


def test_a_recipe_is_fetched_over_the_network_and_then_served_from_the_cache(daemon, build_repo, cache) -> None:
    first = fetch(GOOD, "--repo", daemon.url)
    assert first.exit_code == 0, first.output
    assert first.stdout == recipes()[f"{GOOD}.nix"]
    tip = git(build_repo, "rev-parse", BRANCH).strip()
    assert f"of {BRANCH} at {tip[:12]} from {daemon.url}; checked against the catalog" in first.stderr
    served = daemon.upload_packs()
    second = fetch(GOOD, "--repo", daemon.url)
    assert second.exit_code == 0 and second.stdout == first.stdout and "(cached)" in second.stderr
    # Two ls-remotes (the tip, and the commit the catalog was made from, whose recipe it is held against); no fetch.
    assert daemon.upload_packs() == served + 2
    # The cache is git's object store (hash-checked on every read), not copies of files.
    (git_dir,) = cache.glob("recipes/*/git")
    assert git(git_dir, "cat-file", "-p", f"{tip}:.flox/pkgs/{GOOD}.nix") == first.stdout
    assert not list(cache.rglob(f"{GOOD}.nix"))


def test_a_local_clone_and_the_environment_variable_name_the_repository(
    build_repo, cache, tmp_path, monkeypatch
) -> None:
    out = tmp_path / "pkgs"
    result = fetch(GOOD, "--repo", str(build_repo), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert (out / f"{GOOD}.nix").read_text() == recipes()[f"{GOOD}.nix"]
    monkeypatch.setenv("PICKVARIANT_RECIPES_REPO", str(build_repo))
    mps = fetch(MPS)
    assert mps.exit_code == 0 and "aarch64-darwin" in mps.stdout  # MPS recipes are fetched, never generated
    assert git(build_repo, "status", "--porcelain") == ""  # the user's clone is only read


def test_the_upstream_spelling_of_pname_is_the_same_package(build_repo, cache, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = fetch(UPSTREAM_PNAME, "--repo", "served/build-pytorch")  # a relative path, too
    assert result.exit_code == 0, result.output
    assert f"from {build_repo}" in result.stderr


@pytest.mark.parametrize(
    ("package", "field"),
    [
        (WRONG_TARGET, "the name says sm89 (8.9), but the recipe sets GPU targets 9.0 (gpuArchSM, gpuTargets)"),
        (
            WRONG_PNAME,
            "its pname is pytorch-python313-cuda13_1-sm86-avx512, the catalog's package pytorch-python313-cuda13_1-sm86-avx2",
        ),
    ],
)
def test_a_recipe_that_disagrees_with_the_catalog_is_refused_naming_the_field(
    build_repo, cache, tmp_path, package, field
) -> None:
    out = tmp_path / "pkgs"
    result = fetch(package, "--repo", str(build_repo), "-o", str(out))
    assert result.exit_code == 1 and field in result.stderr and result.stderr.count("\n") <= 2
    assert not out.exists()


def test_a_recipe_that_is_not_nix_is_refused(build_repo, cache) -> None:
    require(shutil.which("nix-instantiate") is not None, "nix-instantiate is not installed (Debian package nix-bin)")
    broken = recipes()
    broken[f"{GOOD}.nix"] = broken[f"{GOOD}.nix"].replace("in (nixpkgs_pinned", "in ((nixpkgs_pinned", 1)
    commit_branch(build_repo, BRANCH, broken)
    result = fetch(GOOD, "--repo", str(build_repo))
    assert result.exit_code == 1 and "is not valid Nix" in result.stderr


def test_no_repository_is_one_line_and_a_hint_to_generate(cache) -> None:
    require(shutil.which("git") is not None, "git is not installed")
    nobody = f"git://127.0.0.1:{free_port()}/build-pytorch"
    started = time.monotonic()
    result = fetch(GOOD, "--repo", nobody)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert (
        f"cannot fetch .flox/pkgs/{GOOD}.nix of {BRANCH} from {nobody}" in result.stderr
        and "--generate" in result.stderr
    )
    assert time.monotonic() - started < 30
    missing_branch = fetch(GOOD, "--repo", str(REPO))  # a git repository without the branch
    assert missing_branch.exit_code == 1 and f"has no branch {BRANCH}" in missing_branch.stderr


def test_an_unreachable_repository_falls_back_to_the_cached_recipe(daemon, build_repo, cache) -> None:
    assert fetch(GOOD, "--repo", daemon.url).exit_code == 0
    shutil.rmtree(build_repo)  # the daemon now serves nothing
    result = fetch(GOOD, "--repo", daemon.url)
    assert result.exit_code == 0 and result.stdout == recipes()[f"{GOOD}.nix"]
    assert "could not be reached" in result.stderr and "using the recipe cached from commit" in result.stderr


def test_the_cache_survives_an_interrupted_fetch(build_repo, cache) -> None:
    assert fetch(GOOD, "--repo", str(build_repo)).exit_code == 0
    commit_branch(build_repo, BRANCH, recipes(version="# a newer commit\n"))  # the cache misses it
    (git_dir,) = cache.glob("recipes/*/git")
    (git_dir / "shallow.lock").write_text("")  # what a fetch killed halfway leaves behind
    result = fetch(GOOD, "--repo", str(build_repo))
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("# a newer commit\n") and "(cached)" not in result.stderr


def test_install_build_records_the_recipe_commit_for_verify_and_report(build_repo, tmp_path, fake_flox) -> None:
    build = tmp_path / "build"
    result = runner.invoke(
        app,
        [
            "install",
            "--cpuinfo",
            str(REPO / "tests/fixtures/cpuinfo/linux-rocky8.5-zen4"),
            "--gpu",
            "9.0",
            "--driver",
            "590.44.01",
            "--repo",
            str(build_repo),
            "--build-dir",
            str(build),
            "--yes",
            "--no-verify",
        ],
    )
    assert result.exit_code == 0, result.output
    tip = git(build_repo, "rev-parse", BRANCH).strip()
    assert f"recipe .flox/pkgs/{GOOD}.nix of {BRANCH} at {tip[:12]}" in result.stdout
    assert (build / ".flox/pkgs" / f"{GOOD}.nix").read_text() == recipes()[f"{GOOD}.nix"]
    record = json.loads((tmp_path / "cache/pickvariant/last-install.json").read_text())
    assert record["recipe"] == {
        "repo": str(build_repo),
        "branch": BRANCH,
        "commit": tip,
        "path": f".flox/pkgs/{GOOD}.nix",
    }
    # This machine's report (a described machine's would not show this machine's last install).
    report = runner.invoke(app, ["report", "--python", "/nonexistent/python3"])
    assert report.exit_code == 0, report.output
    # (the report writes the user's name and home as <user> and ~, so the path is not compared)
    assert (
        f"Last install: {GOOD} ({BRANCH}, build); recipe .flox/pkgs/{GOOD}.nix from " in report.stdout
        and f" at {tip[:12]}" in report.stdout
    )


def test_credentials_in_the_recipe_repository_reach_no_record_report_or_plan(build_repo, tmp_path, fake_flox) -> None:
    """install --build --repo with a token: last-install.json, both report formats and the install's own lines hold none of it."""
    secret = "glpat-INSTALL-SECRET"
    address = f"file://ci-token:{secret}@localhost{build_repo}"
    result = runner.invoke(
        app,
        [
            "install",
            "--cpuinfo",
            str(REPO / "tests/fixtures/cpuinfo/linux-rocky8.5-zen4"),
            "--gpu",
            "9.0",
            "--driver",
            "590.44.01",
            "--repo",
            address,
            "--build-dir",
            str(tmp_path / "build"),
            "--yes",
            "--no-verify",
        ],
    )
    assert result.exit_code == 0, result.output
    assert secret not in result.output and f"from file://localhost{build_repo}" in result.stdout
    record = (tmp_path / "cache/pickvariant/last-install.json").read_text()
    assert secret not in record and json.loads(record)["recipe"]["repo"] == f"file://localhost{build_repo}"
    for output in ("markdown", "json"):
        report = runner.invoke(app, ["report", "--python", "/nonexistent/python3", "--format", output])
        assert report.exit_code == 0 and secret not in report.output and "file://localhost" in report.output


def test_a_catalog_whose_source_holds_credentials_never_shows_them(tmp_path) -> None:
    """A site catalog written before sync stripped them: detect's JSON, list, a generated recipe's header show the address without them."""
    secret = "glpat-CATALOG-SECRET"
    site = dict(
        SHIPPED,
        source={
            **SHIPPED["source"],
            "repo": f"https://ci-token:{secret}@gitlab.example.org/ml/build-pytorch.git?private_token={secret}",
        },
    )
    path = tmp_path / "site-catalog.json"
    path.write_text(json.dumps(site))
    env = {**os.environ, "PICKVARIANT_CATALOG": str(path)}
    # Each command in a process of its own: the library keeps the catalog it loaded first for the process.
    outputs = [
        subprocess.run(
            [sys.executable, "-m", "pickvariant", *argv], env=env, capture_output=True, text=True, check=False
        )
        for argv in (
            [
                "detect",
                "--format",
                "json",
                "--cpuinfo",
                str(REPO / "tests/fixtures/cpuinfo/linux-rhel7-haswell"),
                "--no-gpu",
            ],
            ["list", "--format", "json"],
            ["list"],
            ["recipe", GOOD, "--branch", BRANCH, "--generate"],
        )
    ]
    for result in outputs:
        assert result.returncode == 0, result.stderr
        assert (
            secret not in result.stdout + result.stderr
            and "https://gitlab.example.org/ml/build-pytorch.git" in result.stdout
        )
