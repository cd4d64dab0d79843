"""What pickvariant reads is data, never instructions: hostile build repositories, their git config, credentials
in their addresses, recipes written to fool the classifier. Each repository is built by the test, with real git,
from the synthetic build repository (tests/buildrepo.py) the other tests use."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from buildrepo import PIN_NEW, as_upstream, commit_branch, fork_of, git, make_build_repo, recipe, recipe_for_row
from conftest import REPO, cli_runner, generated, require
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pickvariant.cli.main import app

runner = cli_runner()
SHIPPED = json.loads((REPO / "catalog.json").read_text())
BRANCH = "pytorch-2.10-python313"
GOOD = "pytorch-python313-cuda13_1-sm90-avx512"
SECRET = "glpat-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _git() -> None:
    require(shutil.which("git") is not None, "git is not installed")


def _row(package: str) -> dict:
    return next(r for r in SHIPPED["variants"] if r["branch"] == BRANCH and r["package"] == package)


def _marker_program(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A program that leaves a mark when anything runs it: (program, mark)."""
    mark = tmp_path / f"ran-{name}"
    program = tmp_path / f"evil-{name}"
    program.write_text(f"#!/bin/sh\necho ran >> {mark}\nexit 0\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program, mark


def _signed_head(repo: Path) -> None:
    """HEAD becomes a commit carrying a (fake) signature: `git log` with log.showSignature hands it to gpg.program."""
    raw = git(repo, "cat-file", "commit", "HEAD")
    header, _, message = raw.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n =abcd\n -----END PGP SIGNATURE-----"
    signed = f"{header}\n{signature}\n\n{message}"
    new = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo,
        input=signed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "update-ref", "refs/heads/main", new)


def _hostile(repo: Path, tmp_path: Path) -> list[Path]:
    """Every setting of the repository's own config that makes git run a program, each pointing at a marker."""
    marks = []
    settings = {
        "log.showSignature": "true",
        "core.fsmonitor": None,
        "core.pager": None,
        "diff.external": None,
        "credential.helper": None,
        "core.sshCommand": None,
        "core.askPass": None,
        "core.gitProxy": None,
        "remote.origin.uploadpack": None,
        "gpg.program": None,
        "core.alternateRefsCommand": None,
    }
    for key, value in settings.items():
        if value is None:
            program, mark = _marker_program(tmp_path, key.replace(".", "-"))
            value, marks = str(program), [*marks, mark]
        git(repo, "config", key, value)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in (
        "reference-transaction",
        "post-checkout",
        "pre-push",
        "post-merge",
        "fsmonitor-watchman",
        "post-index-change",
    ):
        program, mark = _marker_program(tmp_path, f"hook-{hook}")
        shutil.copy(program, hooks / hook)
        marks.append(mark)
    git(repo, "config", "core.hooksPath", str(hooks))
    git(
        repo, "config", "remote.origin.url", f"https://gitlab-ci-token:{SECRET}@gitlab.example.org/ml/build-pytorch.git"
    )
    git(repo, "config", f"url.ext::{tmp_path / 'evil-ext'} %S.insteadOf", "https://")
    return marks


def test_a_clones_own_git_config_runs_no_program_in_sync_or_recipe(tmp_path, monkeypatch) -> None:
    repo = make_build_repo(tmp_path / "build-pytorch")
    commit_branch(repo, BRANCH, {f"{GOOD}.nix": recipe_for_row(SHIPPED, _row(GOOD))}, parent="main")
    _signed_head(repo)
    marks = _hostile(repo, tmp_path)
    # The same checkout is also where the user stands: a repository around the current directory is not read either.
    monkeypatch.chdir(repo)
    synced = runner.invoke(
        app, ["catalog", "sync", str(repo), "-o", str(tmp_path / "catalog.json"), *as_upstream(repo)]
    )
    assert synced.exit_code == 0, synced.output
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(tmp_path / "catalog.json"))
    fetched = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", str(repo)])
    assert fetched.exit_code == 0, fetched.output
    assert [mark.name for mark in marks if mark.exists()] == []
    # The origin it records is the address without the token, in the catalog and so in every detect line.
    source = json.loads((tmp_path / "catalog.json").read_text())["source"]["repo"]
    assert source == "https://gitlab.example.org/ml/build-pytorch.git"


def test_the_environment_cannot_allow_a_transport_that_runs_a_command(tmp_path, monkeypatch) -> None:
    program, mark = _marker_program(tmp_path, "ext")
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "ext:file")
    for argv in (
        ["recipe", GOOD, "--branch", BRANCH, "--repo", f"ext::{program} %S"],
        ["catalog", "sync", f"ext::{program} %S", "-o", str(tmp_path / "c.json")],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code in (1, 2), result.output
    assert not mark.exists()


def test_credentials_in_a_repository_address_are_never_written_printed_or_named(tmp_path, monkeypatch) -> None:
    """`--repo file://user:TOKEN@localhost/…` fetches (git takes the address as given) and appears nowhere with its token."""
    repo = _served_repo(tmp_path, {f"{GOOD}.nix": recipe_for_row(SHIPPED, _row(GOOD))}, monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    address = f"file://ci-token:{SECRET}@localhost{repo}"
    fetched = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", address])
    assert fetched.exit_code == 0, fetched.output
    assert f"from file://localhost{repo}" in fetched.stderr
    unreachable = runner.invoke(
        app, ["recipe", GOOD, "--branch", BRANCH, "--repo", f"http://ci-token:{SECRET}@127.0.0.1:9/x.git"]
    )
    assert unreachable.exit_code == 1 and "http://127.0.0.1:9/x.git" in unreachable.stderr
    for result in (fetched, unreachable):
        assert SECRET not in result.output
    names = [str(path) for path in cache.rglob("*")]
    assert names and not [name for name in names if SECRET in name]
    for path in cache.rglob("*"):
        if path.is_file() and "objects" not in path.parts:
            assert SECRET.encode() not in path.read_bytes(), path


def test_credentials_that_git_or_a_probe_prints_are_shown_without_them(tmp_path) -> None:
    """git does not always quote the address it was given: for git://user:TOKEN@host it says "unable to look up
    user:TOKEN@host"; after a redirect it names the new address; a probe's stderr may hold any URL."""
    unreachable = runner.invoke(
        app, ["recipe", GOOD, "--branch", BRANCH, "--repo", f"git://ci-token:{SECRET}@127.0.0.1:9/x.git"]
    )
    assert (
        unreachable.exit_code == 1 and "git ls-remote on git://127.0.0.1:9/x.git failed: fatal:" in unreachable.stderr
    )
    assert SECRET not in unreachable.output, unreachable.output
    from pickvariant._base.git import git_said

    redirected = (
        f"warning: redirecting to https://ci-token:{SECRET}@mirror.example.org/ml/x.git/\n"
        f"fatal: could not read Username for 'https://ci-token:{SECRET}@mirror.example.org': terminal prompts disabled\n"
    )
    assert (
        git_said(redirected, 128)
        == "fatal: could not read Username for 'https://mirror.example.org': terminal prompts disabled"
    )
    # A report's every string: a probe that fails naming an address with its token (this machine's report: a
    # stated machine's interpreter is only read from its files, never probed).
    python = tmp_path / "python"
    python.write_text(
        f"#!/bin/sh\necho 'fatal: unable to access https://ci-token:{SECRET}@pypi.example.org/simple?token={SECRET}' >&2\nexit 1\n"
    )
    python.chmod(0o755)
    report = runner.invoke(app, ["report", "--format", "json", "--python", str(python)], env={"PICKVARIANT_GPU": ""})
    assert report.exit_code == 0, report.output
    assert json.loads(report.stdout)["installed_torch"]["error"].endswith(
        "fatal: unable to access https://pypi.example.org/simple"
    )
    assert SECRET not in report.output


def _sync(repo: Path | str, out: Path):
    """The tests' repositories are upstream-shaped and synced as the trusted upstream (buildrepo.as_upstream)."""
    return runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(out), *as_upstream(repo)])


DECOYS = {
    # The flags the build really gets are the ones after ++; a comment and a string hold the AVX2-only list.
    "cpu flags joined with ++": recipe(
        "313", "avx2", PIN_NEW, version="2.10.0", cpu_flags='"-mavx2" "-mfma" "-mf16c" ] ++ [ "-mavx512f" "-mavx512bw"'
    ).replace("in (nixpkgs_pinned", "  decoy = '' cpuFlags = [ \"-mavx2\" ]; '';\nin (nixpkgs_pinned"),
    "gpu targets joined with ++": recipe("313", "avx512", PIN_NEW, "sm90", "13_1", version="2.10.0").replace(
        "gpuTargets = [ gpuArchSM ]", 'gpuTargets = [ "8.0" ] ++ [ ]'
    ),
    "cpu flags bound twice": recipe("313", "avx2", PIN_NEW, version="2.10.0").replace(
        "in (nixpkgs_pinned", '  other = { cpuFlags = [ "-mavx512f" ]; };\nin (nixpkgs_pinned'
    ),
    "cpu flags from a function call": recipe("313", "avx2", PIN_NEW, version="2.10.0").replace(
        'cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ]', 'cpuFlags = builtins.filter (x: true) [ "-mavx2" ]'
    ),
    "a NUL byte before the real flags": recipe("313", "avx2", PIN_NEW, version="2.10.0")
    + '\0cpuFlags = [ "-mavx512f" ];\n',
    "not valid Nix": recipe("313", "avx2", PIN_NEW, version="2.10.0").replace(
        "in (nixpkgs_pinned", "in ((nixpkgs_pinned"
    ),
    "an inherited version": recipe("313", "avx2", PIN_NEW, version="2.10.0").replace(
        'version = "2.10.0";', "inherit version;"
    ),
}
NAMES = {"gpu targets joined with ++": "pytorch-python313-cuda13_1-sm90-avx512"}


@pytest.mark.parametrize("case", sorted(DECOYS))
def test_a_fact_that_is_no_plain_literal_leaves_the_recipe_unclassified(case, tmp_path) -> None:
    """A fork's recipe whose fact is anything but the literal the upstream's holds there: left out, naming the line."""
    name = NAMES.get(case, "pytorch-python313-cpu-avx2")
    honest = recipe("313", "avx512", PIN_NEW, version="2.10.0")
    upstream_recipe = recipe(
        "313", *(("avx512", PIN_NEW, "sm90", "13_1") if "sm90" in name else ("avx2", PIN_NEW)), version="2.10.0"
    )
    files = {f"{name}.nix": upstream_recipe, "pytorch-python313-cpu-avx512.nix": honest}
    upstream, fork = fork_of(tmp_path, BRANCH, files, {f"{name}.nix": DECOYS[case]})
    out = tmp_path / "catalog.json"
    result = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(out), *as_upstream(upstream)])
    assert result.exit_code == 0, result.output
    rows = {row["package"] for row in json.loads(out.read_text())["variants"]}
    assert rows == {"pytorch-python313-cpu-avx512"}
    reason = result.stderr.split(f"pytorch-2.10-python313:.flox/pkgs/{name}.nix: ", 1)[1].splitlines()[0]
    assert reason.startswith(("line ", "the recipe cannot be read as Nix reads it")), reason


def test_recipe_repo_refuses_a_fetched_recipe_that_hides_avx512_flags(tmp_path, monkeypatch) -> None:
    """A fork whose tip joins AVX-512 flags to the list: refused, naming the line where it is no longer the recipe the
    catalog was made from."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    package = "pytorch-python313-cpu-avx2"
    honest = recipe_for_row(SHIPPED, _row(package))
    hidden = honest.replace(
        '"-mavx2" "-mfma" "-mf16c" ]', '"-mavx2" "-mfma" "-mf16c" ] ++ [ "-mavx512f" "-mavx512bw" ]'
    )
    assert hidden != honest
    upstream, fork = fork_of(tmp_path, BRANCH, {f"{package}.nix": honest}, {f"{package}.nix": hidden})
    assert _sync(upstream, tmp_path / "c.json").exit_code == 0
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(tmp_path / "c.json"))
    result = runner.invoke(app, ["recipe", package, "--branch", BRANCH, "--repo", str(fork)])
    assert result.exit_code == 1
    assert re.search(r"does not match the catalog: line \d+: '\[' where upstream's", result.stderr), result.stderr


def test_one_bad_branch_is_left_out_with_its_reason_and_the_rest_is_written(tmp_path) -> None:
    repo = make_build_repo(tmp_path / "build-pytorch")
    good = recipe("313", "avx512", PIN_NEW, version="2.10.0")
    commit_branch(repo, "pytorch-2.11-python313;id$(x)", {"pytorch-python313-cpu-avx512.nix": good})
    commit_branch(repo, "pytorch-2.12-python313", {"pytorch-python313-cpu-avx512.nix": good})
    (repo / ".flox").exists()
    git(repo, "checkout", "-q", "pytorch-2.12-python313")
    nested = repo / ".flox" / "pkgs" / "pytorch-python313-cpu-avx512"
    nested.mkdir()
    (nested / "default.nix").write_text(good)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "twice")
    git(repo, "checkout", "-q", "main")
    out = tmp_path / "catalog.json"
    result = _sync(repo, out)
    assert result.exit_code == 0, result.output
    branches = {branch["name"] for branch in json.loads(out.read_text())["branches"]}
    assert "main" in branches and not {"pytorch-2.11-python313;id$(x)", "pytorch-2.12-python313"} & branches
    assert "left out branch pytorch-2.11-python313;id$(x): its name is not one a catalog can record" in result.stderr
    assert (
        "left out branch pytorch-2.12-python313: it defines pytorch-python313-cpu-avx512 twice "
        "(.flox/pkgs/pytorch-python313-cpu-avx512.nix and .flox/pkgs/pytorch-python313-cpu-avx512/default.nix)"
    ) in result.stderr


def test_sync_reads_blobs_one_at_a_time(tmp_path) -> None:
    """Memory is bounded by the largest recipe: the reader hands out each blob before it reads the next."""
    from pickvariant._base.git import stream_blobs

    repo = make_build_repo(tmp_path / "build-pytorch")
    blobs = [line.split()[2] for line in git(repo, "ls-tree", "-r", "main", "--", ".flox/pkgs").splitlines()]
    reader = stream_blobs(repo, "repo", blobs, 1 << 20)
    first_id, first = next(reader)
    assert first_id == blobs[0] and first == git(repo, "cat-file", "blob", blobs[0]).encode()
    assert [blob for blob, _ in reader] == blobs[1:]


def _served_repo(tmp_path: Path, files: dict[str, str], monkeypatch=None) -> Path:
    """A repository with `files` on BRANCH and the catalog synced from it (tmp_path/served-catalog.json), named in
    PICKVARIANT_CATALOG where `monkeypatch` is given: `recipe` serves the catalog's own recipes from it."""
    repo = tmp_path / "served"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    commit_branch(repo, BRANCH, files)
    synced = _sync(repo, tmp_path / "served-catalog.json")
    assert synced.exit_code == 0, synced.output
    if monkeypatch is not None:
        monkeypatch.setenv("PICKVARIANT_CATALOG", str(tmp_path / "served-catalog.json"))
    return repo


def test_five_fetches_at_once_into_a_cold_cache_all_succeed(tmp_path) -> None:
    repo = _served_repo(tmp_path, {f"{GOOD}.nix": recipe_for_row(SHIPPED, _row(GOOD))})
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PICKVARIANT_CATALOG": str(tmp_path / "served-catalog.json"),
    }
    argv = [str(Path(os.sys.executable)), "-m", "pickvariant", "recipe", GOOD, "--branch", BRANCH, "--repo", str(repo)]
    runs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(5)
    ]
    results = [(run.wait(timeout=120), *run.communicate()) for run in runs]
    assert [code for code, _, _ in results] == [0] * 5, [err for _, _, err in results]
    assert len({out for _, out, _ in results}) == 1


def test_a_damaged_cache_is_fetched_again_never_served(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    text = recipe_for_row(SHIPPED, _row(GOOD))
    repo = _served_repo(tmp_path, {f"{GOOD}.nix": text}, monkeypatch)
    assert runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", str(repo)]).exit_code == 0
    (git_dir,) = (tmp_path / "cache").glob("pickvariant/recipes/*/git")
    blob = git(repo, "rev-parse", f"{BRANCH}:.flox/pkgs/{GOOD}.nix").strip()
    # The blob, loosened out of its pack and then replaced on disk by another object's bytes.
    for pack in (git_dir / "objects" / "pack").glob("*.pack"):
        moved = tmp_path / pack.name
        pack.rename(moved)
        pack.with_suffix(".idx").unlink()
        with moved.open("rb") as stream:
            subprocess.run(["git", "unpack-objects", "-q"], cwd=git_dir, stdin=stream, check=True)
    loose = git_dir / "objects" / blob[:2] / blob[2:]
    other = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=git_dir,
        input="# not the recipe\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    loose.chmod(0o644)
    loose.write_bytes((git_dir / "objects" / other[:2] / other[2:]).read_bytes())
    again = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", str(repo)])
    assert again.exit_code == 0, again.output
    assert again.stdout == text and "(cached)" not in again.stderr


def test_a_recipe_larger_than_a_recipe_may_be_is_refused_without_being_downloaded(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    honest = recipe_for_row(SHIPPED, _row(GOOD))
    upstream, fork = fork_of(
        tmp_path, BRANCH, {f"{GOOD}.nix": honest}, {f"{GOOD}.nix": honest + "#" * (3 << 20) + "\n"}
    )
    assert _sync(upstream, tmp_path / "c.json").exit_code == 0
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(tmp_path / "c.json"))
    result = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", str(fork)])
    assert result.exit_code == 1 and "larger than 1048576 bytes: too large to be a recipe" in result.stderr
    stored = sum(path.stat().st_size for path in (tmp_path / "cache").rglob("*") if path.is_file())
    assert stored < 1024 * 1024  # the 3 MiB file never reached the cache


def test_a_server_that_never_answers_is_given_up_on_within_the_stated_time(tmp_path, monkeypatch) -> None:
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # takes every connection and says nothing
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PICKVARIANT_NETWORK_TIMEOUT", "2")
    try:
        result = runner.invoke(
            app, ["recipe", GOOD, "--branch", BRANCH, "--repo", f"git://127.0.0.1:{listener.getsockname()[1]}/x"]
        )
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        listener.close()
    assert result.exit_code == 1
    assert "took longer than 2 s" in result.stderr and "PICKVARIANT_NETWORK_TIMEOUT" in result.stderr


@pytest.mark.parametrize("value", ["0", "-5", "soon", "1e9"])
def test_a_network_timeout_that_is_no_number_of_seconds_is_bad_input(value, monkeypatch) -> None:
    monkeypatch.setenv("PICKVARIANT_NETWORK_TIMEOUT", value)
    result = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH])
    assert result.exit_code == 2 and "PICKVARIANT_NETWORK_TIMEOUT" in result.stderr


SCHEMAS = {
    "catalog": REPO / "pickvariant" / "sources" / "flox" / "recipes" / "data" / "catalog.schema.json",
    "detect line": REPO / "pickvariant" / "rules" / "detect-line.schema.json",
    "probe result": REPO / "pickvariant" / "verify" / "probe-result.schema.json",
    "last install": REPO / "pickvariant" / "install" / "last-install.schema.json",
}
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 300) | st.floats(allow_nan=False) | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def _samples() -> dict[str, dict]:
    detect = json.loads(
        subprocess.run(
            [
                os.sys.executable,
                "-m",
                "pickvariant",
                "detect",
                "--format",
                "json",
                "--cpuinfo",
                str(REPO / "tests/fixtures/cpuinfo/linux-rhel7-haswell"),
                "--gpu",
                "9.0",
                "--driver",
                "580.95.05",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    probe = {
        "torch": "2.10.0",
        "cuda": "13.0",
        "cpu_capability": "AVX2",
        "arch_list": ["sm_90"],
        "cuda_available": True,
        "mps_available": None,
        "cudnn": 91900,
        "devices": [{"index": 0, "name": "H100", "capability": [9, 0], "kernel_ran": True}],
        "checks": [{"name": "matmul bf16", "device": "cuda:0", "dtype": "bf16", "ok": True, "tflops": 700.0}],
    }
    last = {
        "package": GOOD,
        "branch": BRANCH,
        "torch": "2.10.0",
        "method": "published",
        "directory": "/x",
        "build_dir": None,
        "result": None,
        "python": ["python3"],
        "recipe": None,
    }
    # The catalog with each list cut to the first eight items, all a mutation ever reaches (_mutated draws from
    # keys[:8]): the items past them are never changed, and validating them on every example cost 40 s of the suite.
    return {"catalog": _first_items(SHIPPED, 8), "detect line": detect, "probe result": probe, "last install": last}


def _first_items(value, count: int):
    if isinstance(value, list):
        return [_first_items(item, count) for item in value[:count]]
    if isinstance(value, dict):
        return {key: _first_items(item, count) for key, item in value.items()}
    return value


@pytest.fixture(scope="module")
def samples() -> dict[str, dict]:
    return _samples()


def _mutated(document, data) -> object:
    """The document with one value somewhere inside it replaced, removed or joined by another."""
    copy = json.loads(json.dumps(document))
    node, path = copy, []
    for _ in range(data.draw(st.integers(0, 5))):
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            break
        key = data.draw(st.sampled_from(keys[:8]))
        if not isinstance(node[key], (dict, list)):
            break
        path.append(key)
        node = node[key]
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if not keys:
        return copy
    key = data.draw(st.sampled_from(keys[:8]))
    action = data.draw(st.sampled_from(["replace", "remove", "add"]))
    if action == "replace":
        node[key] = data.draw(_JSON)
    elif action == "remove" and isinstance(node, dict):
        del node[key]
    elif isinstance(node, dict):
        node[data.draw(st.text(max_size=8))] = data.draw(_JSON)
    return copy


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@given(data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_fast_schema_check_and_jsonschema_give_the_same_answer(name, samples, data) -> None:
    """Documents from outside are accepted on fastjsonschema's word: it must never accept what jsonschema, the reference, refuses."""
    from pickvariant._base import schema

    generated(f"schemas: fastjsonschema vs jsonschema ({name})")
    rules = schema.load_schema(SCHEMAS[name])
    assert schema._validator(rules).is_valid(samples[name])  # each mutation starts from a valid document
    document = _mutated(samples[name], data)
    assert schema._compiled(rules)(document) == schema._validator(rules).is_valid(document)


def test_a_repository_with_no_pytorch_recipe_says_so_and_what_to_give(tmp_path) -> None:
    repo = tmp_path / "unrelated"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("nothing here\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "unrelated")
    result = _sync(repo, tmp_path / "c.json")
    assert result.exit_code == 2 and not (tmp_path / "c.json").exists()
    assert (
        "has no PyTorch variant pickvariant can read (no branch has .flox/pkgs/pytorch-*.nix recipes)" in result.stderr
    )


ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[41m"


def test_escape_sequences_from_a_probe_a_repository_and_a_dump_reach_no_terminal_raw(tmp_path, monkeypatch) -> None:
    python = tmp_path / "python"
    python.write_text(
        f"#!/bin/sh\nprintf '{ESCAPES}\\nfake: no torch here{ESCAPES}\\n' >&2\nexit 3\n".replace(
            "\x1b", "\\033"
        ).replace("\x07", "\\007")
    )
    python.chmod(0o755)
    verify = runner.invoke(app, ["verify", "--python", str(python)])
    assert verify.exit_code == 1 and "\\e]0;PWNED\\x07" in verify.stdout
    # A recipe file name and a pname with escapes, in sync's summary and in recipe --repo's refusal.
    honest = recipe_for_row(SHIPPED, _row(GOOD))
    upstream, fork = fork_of(
        tmp_path,
        BRANCH,
        {f"{GOOD}.nix": honest, "pytorch-python313-cpu-avx512.nix": recipe("313", "avx512", PIN_NEW, version="2.10.0")},
        {
            f"{GOOD}.nix": honest.replace(f'pname = "{GOOD}";', f'pname = "{GOOD}{ESCAPES}";'),
            f"pytorch-python313-cpu-avx2{ESCAPES}.nix": honest,
        },
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert _sync(upstream, tmp_path / "c.json").exit_code == 0
    synced = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(tmp_path / "f.json"), *as_upstream(upstream)])
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(tmp_path / "c.json"))
    refused = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", str(fork)])
    dump = tmp_path / "cpuinfo"
    # The model name carries C1's one-byte CSI (U+009B: ESC [ to a terminal) and a right-to-left override too.
    dump.write_text(
        (REPO / "tests/fixtures/cpuinfo/linux-rhel7-haswell")
        .read_text()
        .replace("model name\t: ", f"model name\t: {ESCAPES}\x9b2J\u202e", 1)
    )
    report = runner.invoke(
        app,
        ["report", "--python", "/nonexistent/python3"],
        env={"PICKVARIANT_CPUINFO": str(dump), "PICKVARIANT_GPU": "none"},
    )
    for result in (verify, synced, refused, report):
        assert "\x1b" not in result.output and "\x07" not in result.output, result.output
    assert "\\e]0;PWNED" in synced.stderr and refused.exit_code == 1 and "'\\x1b'" in refused.stderr
    # The report is Markdown: the shown escape is itself escaped there, so that it renders as \e]0;PWNED.
    assert "\\\\e\\]0;PWNED" in report.stdout
    assert "\x9b" not in report.output and "\u202e" not in report.output and "\\\\x9b2J\\\\u202e" in report.stdout


def test_recipe_repo_reads_a_plain_clone_whose_branches_are_remote_tracking(tmp_path, monkeypatch) -> None:
    """`git clone URL` makes only main local: the variant's branch is origin/BRANCH, as catalog sync reads it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    upstream = _served_repo(tmp_path, {f"{GOOD}.nix": recipe_for_row(SHIPPED, _row(GOOD))}, monkeypatch)
    subprocess.run(["git", "clone", "-q", str(upstream), str(tmp_path / "plain")], check=True, capture_output=True)
    assert BRANCH not in git(tmp_path / "plain", "branch", "--list")
    result = runner.invoke(app, ["recipe", GOOD, "--branch", BRANCH, "--repo", str(tmp_path / "plain")])
    assert result.exit_code == 0, result.output
    assert result.stdout == recipe_for_row(SHIPPED, _row(GOOD))


def test_git_refusals_name_the_cause_and_the_remedy(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    result = _sync(empty, tmp_path / "c.json")
    assert result.exit_code == 2 and "has no commit (an empty repository)" in result.stderr
    require(os.geteuid() == 0, "a repository of another user can only be made by root (chown)")
    theirs = make_build_repo(tmp_path / "theirs")
    subprocess.run(["chown", "-R", "nobody", str(theirs)], check=True)
    for argv in (
        ["catalog", "sync", str(theirs), "-o", str(tmp_path / "c.json")],
        ["recipe", GOOD, "--branch", BRANCH, "--repo", str(theirs)],
    ):
        refused = runner.invoke(app, argv)
        assert refused.exit_code in (1, 2) and "belongs to another user" in refused.stderr
        assert (
            "git config --global --add safe.directory" in refused.stderr
            and "and the repository exists" not in refused.stderr
        )


def test_catalog_sync_of_a_stalled_server_stops_at_the_stated_time(tmp_path, monkeypatch) -> None:
    import socket

    monkeypatch.setenv("PICKVARIANT_NETWORK_TIMEOUT", "1")
    with socket.socket() as listener:  # listens, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        result = _sync(f"git://127.0.0.1:{listener.getsockname()[1]}/build-pytorch", tmp_path / "c.json")
    assert result.exit_code == 1 and not (tmp_path / "c.json").exists()
    assert "took longer than 1 s" in result.stderr and "PICKVARIANT_NETWORK_TIMEOUT" in result.stderr
