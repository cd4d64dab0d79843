"""The recipe cache, a catalog handed over, paths and addresses: inputs from places the user does not control
(issue 41). A second user is simulated with a folder of another owner (root's chown) or another mode; the
repositories are real git ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from buildrepo import PIN_NEW, as_upstream, commit_branch, git, recipe
from conftest import REPO, cli_runner, cpuinfo_path, generated, require
from hypothesis import given, settings
from hypothesis import strategies as st

from pickvariant import api
from pickvariant.cli import entry
from pickvariant.cli.main import app

runner = cli_runner()
BRANCH = "pytorch-2.10-python313"
AVX2 = "pytorch-python313-cpu-avx2"
SECRET = "glpat-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _git() -> None:
    require(shutil.which("git") is not None, "git is not installed")
    api.default_catalog.cache_clear()


@pytest.fixture()
def synced(tmp_path: Path) -> tuple[Path, Path]:
    """(a build repository with one recipe, the catalog synced from it: its own source)."""
    repo = tmp_path / "build-pytorch"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    commit_branch(repo, BRANCH, {f"{AVX2}.nix": recipe("313", "avx2", PIN_NEW, version="2.10.0", pname=AVX2)})
    catalog = tmp_path / "catalog.json"
    result = runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(catalog), *as_upstream(repo)])
    assert result.exit_code == 0, result.output
    return repo, catalog


def _recipe(catalog: Path, cache_home: Path):
    env = {"PICKVARIANT_CATALOG": str(catalog), "XDG_CACHE_HOME": str(cache_home), "PICKVARIANT_RECIPES_REPO": ""}
    return runner.invoke(app, ["recipe", AVX2, "--branch", BRANCH], env=env)


def test_a_cache_folder_others_may_write_is_refused_naming_it_and_the_fix(synced, tmp_path) -> None:
    _, catalog = synced
    home = tmp_path / "shared"
    (home / "pickvariant").mkdir(parents=True)
    os.chmod(home / "pickvariant", 0o777)  # made by somebody before the user's first run
    result = _recipe(catalog, home)
    assert result.exit_code == 2
    assert f"the cache folder {home / 'pickvariant'} may be written by others (mode 0777)" in result.stderr
    assert "chmod go-w" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (home / "pickvariant" / "recipes").exists()  # nothing was read or written there


def test_a_cache_folder_of_another_user_is_refused(synced, tmp_path) -> None:
    require(os.geteuid() == 0, "a folder of another user can only be made by root (chown)")
    _, catalog = synced
    home = tmp_path / "shared"
    (home / "pickvariant" / "recipes").mkdir(parents=True, mode=0o755)
    subprocess.run(["chown", "-R", "nobody", str(home / "pickvariant")], check=True)
    result = _recipe(catalog, home)
    assert result.exit_code == 2
    assert re.search(r"the cache folder .*/shared/pickvariant belongs to another user \(uid \d+\)", result.stderr)


def test_a_shared_parent_must_be_sticky(synced, tmp_path) -> None:
    _, catalog = synced
    home = tmp_path / "everyone"
    home.mkdir()
    os.chmod(home, 0o777)
    refused = _recipe(catalog, home)
    assert refused.exit_code == 2 and "may be written by every user and is not sticky" in refused.stderr
    os.chmod(home, 0o1777)  # as /tmp is: nobody can rename another's folder away
    assert _recipe(catalog, home).exit_code == 0


def test_links_planted_in_the_cache_are_never_followed(synced, tmp_path) -> None:
    """The cache's reading repository replaced by a link to the user's own repository, its lock by a link to a
    file that does not exist: the run is refused, the repository's alternates are untouched, nothing is created."""
    repo, catalog = synced
    home = tmp_path / "cache"
    assert _recipe(catalog, home).exit_code == 0
    (root,) = (home / "pickvariant" / "recipes").iterdir()
    users = tmp_path / "users-own"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(users))
    alternates = users / "objects" / "info" / "alternates"
    before = alternates.read_bytes() if alternates.exists() else None
    shutil.rmtree(root / "read.git")
    (root / "read.git").symlink_to(users)
    refused = _recipe(catalog, home)
    assert refused.exit_code == 2 and "read.git is a symbolic link, which pickvariant never follows" in refused.stderr
    assert (alternates.read_bytes() if alternates.exists() else None) == before
    assert git(users, "log", "--oneline", "-1", BRANCH)  # the user's repository still reads
    (root / "read.git").unlink()
    (root / ".lock").unlink()
    target = tmp_path / "created-by-the-link"
    (root / ".lock").symlink_to(target)
    locked = _recipe(catalog, home)
    assert locked.exit_code == 1 and "cannot lock the recipe cache" in locked.stderr
    assert not target.exists()


def test_the_offline_copy_is_served_only_at_the_catalogs_commit(synced, tmp_path) -> None:
    """A commit fetched after the catalog was made is never served from the cache when the repository is gone."""
    repo, catalog = synced
    home = tmp_path / "cache"
    assert _recipe(catalog, home).exit_code == 0
    shutil.rmtree(repo)
    offline = _recipe(catalog, home)
    assert offline.exit_code == 0, offline.output
    recorded = json.loads(catalog.read_text())["branches"][0]["commit"]
    assert f"using the recipe cached from commit {recorded[:12]}" in offline.stderr


def test_a_catalog_whose_hardware_facts_were_edited_is_refused_naming_the_field(tmp_path) -> None:
    """avx512's requirements cut to avx2's in a catalog handed over: it would recommend AVX-512 builds to an AVX2
    machine. The facts are pickvariant's own: the catalog is refused, naming the field."""
    data = json.loads((REPO / "catalog.json").read_text())
    avx2 = next(isa for isa in data["cpu_isas"] if isa["name"] == "avx2")
    next(isa for isa in data["cpu_isas"] if isa["name"] == "avx512")["requires"] = avx2["requires"]
    site = tmp_path / "site-catalog.json"
    site.write_text(json.dumps(data))
    haswell = str(cpuinfo_path("linux-rhel7-haswell"))
    for args in (["detect", "--cpuinfo", haswell, "--no-gpu"], ["list"]):
        result = runner.invoke(app, args, env={"PICKVARIANT_CATALOG": str(site)})
        assert result.exit_code == 2, result.output
        assert "its hardware facts differ from pickvariant's own at cpu_isas[avx512].requires" in result.stderr
    data["cpu_isas"] = json.loads((REPO / "catalog.json").read_text())["cpu_isas"]
    site.write_text(json.dumps(data))
    api.default_catalog.cache_clear()
    restored = runner.invoke(app, ["detect", "--cpuinfo", haswell, "--no-gpu"], env={"PICKVARIANT_CATALOG": str(site)})
    assert restored.exit_code == 0, restored.output


LONG = "a" * 300


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["install", "--dry-run", "--dir", f"/tmp/{LONG}"], "--dir"),
        (["install", "--dry-run", "--build", "--build-dir", f"/tmp/{LONG}"], "--build-dir"),
        (["catalog", "sync", f"/tmp/{LONG}"], "REPO"),
        (["catalog", "sync", ".", "-o", f"/tmp/{LONG}/c.json"], "--output"),
        (["recipe", AVX2, "--branch", "main", "--repo", f"/tmp/{LONG}"], "--repo"),
        (["detect", "--cpuinfo", f"/tmp/{LONG}"], "--cpuinfo"),
        (["detect", "--cpuinfo", "/tmp/" + "b/" * 2100], "--cpuinfo"),
    ],
)
def test_a_path_no_system_can_open_is_bad_input_naming_the_option(args, named, capsys) -> None:
    assert entry.main(args) == 2  # the console script's own entry: usage errors become one line there
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("pickvariant: ") and named in line and ("NAME_MAX" in line or "PATH_MAX" in line)
    assert captured.out == ""


@pytest.mark.parametrize("variable", ["XDG_CACHE_HOME", "PICKVARIANT_CATALOG", "PICKVARIANT_RECIPES_REPO"])
def test_a_variable_naming_a_path_no_system_can_open_is_bad_input_naming_it(variable) -> None:
    result = runner.invoke(app, ["recipe", AVX2, "--branch", "main"], env={variable: f"/tmp/{LONG}"})
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"pickvariant: {variable}: a name in the path is 300 bytes long")


@pytest.mark.parametrize(
    "origin",
    [
        f"https://ci-token:{SECRET}@gitlab.example.org/ml/build pytorch",
        f"https://ci-token:{SECRET}@gitlab.example.org/ml/build-pytorch\x1b]0;pwned\x07\x1b[2J",
        f"ci-token:{SECRET}@gitlab.example.org:ml/build-pytorch.git",
        f"ssh://git:{SECRET}@gitlab.example.org:2222/ml/build-pytorch.git",
        f"https://{SECRET}@gitlab.example.org/ml/build-pytorch?private_token={SECRET}",
    ],
)
def test_no_credential_or_control_character_of_an_origin_reaches_any_output(origin, synced, tmp_path) -> None:
    """A clone whose origin carries a token, in every shape git accepts, and escape sequences: the catalog, `list`,
    a generated recipe's header and install's plan show it without them."""
    repo, _ = synced
    git(repo, "config", "remote.origin.url", origin)
    catalog = tmp_path / "from-origin.json"
    synced_now = runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(catalog), *as_upstream(repo)])
    assert synced_now.exit_code == 0, synced_now.output
    env = {"PICKVARIANT_CATALOG": str(catalog), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    outputs = [catalog.read_text(), synced_now.output]
    for args in (
        ["list"],
        ["list", "--all", "--format", "markdown"],
        ["recipe", AVX2, "--branch", BRANCH, "--generate"],
        ["install", "--dry-run", "--package", AVX2, "--branch", BRANCH, "--build", "--generate"],
    ):
        result = runner.invoke(app, args, env=env)
        outputs.append(result.output)
    for text in outputs:
        assert SECRET not in text
        assert "\x1b" not in text and "\x07" not in text
    assert "gitlab.example.org" in json.loads(catalog.read_text())["source"]["repo"]


@pytest.mark.parametrize(("limit", "said"), [(64 * 1024, "64 KiB"), (4 * 1024 * 1024, "4 MiB"), (64, "64 bytes")])
def test_a_file_over_its_bound_is_refused_naming_the_bound_as_it_is(tmp_path: Path, limit: int, said: str) -> None:
    """A bounded read says the bound it read to ("larger than 64 KiB"), never "larger than 0 MiB" (the last-install
    record's bound is 64 KiB, the recipe cache's record 64 bytes)."""
    from pickvariant._base.errors import BadInput
    from pickvariant._base.files import read_input, read_regular

    big = tmp_path / "big.json"
    big.write_bytes(b" " * (limit + 1))
    for read in (read_regular, read_input):
        with pytest.raises(BadInput) as refused:
            read(big, limit, "the record")
        assert str(refused.value) == f"the record {big} is larger than {said}", refused.value


_PATH_PIECES = ["/", "//", "///", ".", "..", "a", "b c", "~", "é", "\udcff"]


@given(
    st.lists(st.sampled_from(_PATH_PIECES), max_size=8).map("".join),
    st.lists(st.lists(st.sampled_from(["a", ".", "..", "/", "b"]), max_size=4).map("".join), max_size=3),
)
@settings(max_examples=300)
def test_a_path_joined_as_text_is_the_one_pathlib_writes(prefix: str, parts: list[str]) -> None:
    """detect names its files by path text (pathlib's import costs it 7-8 ms): the text is byte for byte what
    pathlib would have written (the typer CLI's Path, the interpreter an active environment names)."""
    from pathlib import PurePosixPath

    from pickvariant._base.files import joined

    generated("joined: paths as PurePosixPath writes them")
    relative = [part.lstrip("/") for part in parts]
    assert joined(prefix, *relative) == str(PurePosixPath(prefix, *relative))
