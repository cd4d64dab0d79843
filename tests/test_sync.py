"""`pickvariant catalog sync` against git repositories the tests build with real git.

The repositories come from buildrepo.py, in the shapes the build repository uses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from buildrepo import PIN_28, as_upstream, commit_branch, git, make_build_repo, recipe_for_row
from conftest import REPO, cli_runner, require
from machines import host

from pickvariant._base.errors import BadInput
from pickvariant._base.request import Request
from pickvariant.cli.main import app
from pickvariant.rules.decide import decide
from pickvariant.sources.flox.recipes.load import parse_catalog

runner = cli_runner()


@pytest.fixture()
def build_repo(tmp_path: Path) -> Path:
    require(shutil.which("git") is not None, "git is not installed")
    return make_build_repo(tmp_path / "build-pytorch")


def sync(repo: str, *extra: str):
    return runner.invoke(
        app, ["catalog", "sync", repo, "--source-url", "https://example.org/fork", *as_upstream(repo), *extra]
    )


def test_sync_reads_every_branch_and_derives_each_row_from_the_recipe(build_repo, tmp_path) -> None:
    out = tmp_path / "catalog.json"
    before = git(build_repo, "status", "--porcelain")
    result = sync(str(build_repo), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert git(build_repo, "status", "--porcelain") == before  # nothing of the work tree was touched
    data = json.loads(out.read_text())
    catalog = parse_catalog(data, out)
    rows = {(v.branch, v.package): v for v in catalog.variants}
    assert set(rows) == {
        ("main", "pytorch-python313-cpu-avx2"),
        ("main", "pytorch-python313-cuda12_8-sm90-avx512"),
        ("main", "pytorch-python313-cuda12_8-sm61-avx2"),
        ("pytorch-2.10-python313", "pytorch-python313-cuda13_1-sm90-avx512"),
        ("pytorch-2.10-python313", "pytorch-python313-cuda13_1-sm121-armv9"),
        ("pytorch-2.8-vllm-0.10.0", "pytorch-python312-cuda12_8-sm90-avx512"),
    }
    sm61 = rows[("main", "pytorch-python313-cuda12_8-sm61-avx2")]
    assert (sm61.torch, sm61.python, sm61.cuda, sm61.cudnn, sm61.nixpkgs_rev) == (
        "2.8.0",
        "3.13",
        "12.8",
        False,
        PIN_28,
    )
    assert rows[("main", "pytorch-python313-cpu-avx2")].platform == "x86_64-linux"
    thor_like = rows[("pytorch-2.10-python313", "pytorch-python313-cuda13_1-sm121-armv9")]
    assert (thor_like.torch, thor_like.platform, thor_like.cudnn) == ("2.10.0", "aarch64-linux", True)
    assert (
        catalog.branch("pytorch-2.8-vllm-0.10.0").aligned_with == "vllm 0.10.0"
        and catalog.branch("main").aligned_with is None
    )
    assert data["source"]["repo"] == "https://example.org/fork" and data["source"]["date"].startswith("2026-02-28T")
    assert "main-staging" not in {b.name for b in catalog.branches}
    err = result.stderr
    assert (
        "and 1 torchvision companion recipes from 1 repositories" in err
        and "skipped staging branches: main-staging" in err
    )
    companions = json.loads((tmp_path / "catalog.companions.json").read_text())["companions"]
    assert [(c["package"], c["torch_relation"], c["torch_of"], c["torch"]) for c in companions] == [
        ("torchvision-python313-cuda12_8-sm61-avx2", "identical", "pytorch-python313-cuda12_8-sm61-avx2", "2.8.0")
    ]
    assert (
        "pytorch-2.10-python313:.flox/pkgs/pytorch-python313-cuda13_1-sm90-avx2.nix: the name says sm90 (9.0), "
        "but the recipe sets GPU targets 8.9 (gpuArchSM, gpuTargets)" in err
    )
    assert (
        "pytorch-python313-cuda13_1-sm89-avx512.nix: its compiler flags need avx512_bf16, which the avx512 rule does not require"
        in err
    )
    assert "meta.platforms also lists aarch64-linux, which cannot run avx2" in err


def test_the_output_is_sorted_and_the_same_bytes_every_time(build_repo, tmp_path) -> None:
    first, second = sync(str(build_repo)), sync(str(build_repo))
    assert first.exit_code == 0 and first.stdout == second.stdout
    document = json.loads(first.stdout)
    rows, left_out = document["variants"], document["left_out"]
    assert [(r["branch"], r["package"]) for r in rows] == sorted((r["branch"], r["package"]) for r in rows)
    assert [(r["branch"], r["path"]) for r in left_out] == sorted((r["branch"], r["path"]) for r in left_out)
    assert left_out  # the fixture holds two recipes whose data contradict their names
    # One row a line, left-out recipes too, so that a re-sync's diff shows whole rows.
    assert sum(1 for line in first.stdout.splitlines() if line.startswith('  {"branch": ')) == len(rows) + len(left_out)


def test_check_passes_on_the_written_file_and_fails_when_the_repository_moved(build_repo, tmp_path) -> None:
    out = tmp_path / "catalog.json"
    assert sync(str(build_repo), "-o", str(out)).exit_code == 0
    ok = sync(str(build_repo), "-o", str(out), "--check")
    assert ok.exit_code == 0 and "matches" in ok.stderr
    git(build_repo, "branch", "-m", "pytorch-2.10-python313", "pytorch-2.10-py313")  # a renamed branch
    moved = sync(str(build_repo), "-o", str(out), "--check")
    assert moved.exit_code == 1
    assert (
        "2 variant(s) added" in moved.stderr
        and "2 variant(s) removed" in moved.stderr
        and "(pytorch-2.10-py313)" in moved.stderr
    )
    assert json.loads(out.read_text())["branches"][1]["name"] == "pytorch-2.10-python313"  # --check writes nothing


def test_an_existing_different_file_is_not_overwritten_without_force(build_repo, tmp_path) -> None:
    out = tmp_path / "catalog.json"
    out.write_text("{}\n")
    refused = sync(str(build_repo), "-o", str(out))
    assert refused.exit_code == 2 and out.read_text() == "{}\n"
    assert sync(str(build_repo), "-o", str(out), "--force").exit_code == 0


def test_a_url_is_cloned_bare_and_a_non_repository_is_refused(build_repo, tmp_path) -> None:
    result = runner.invoke(app, ["catalog", "sync", f"file://{build_repo}", *as_upstream(build_repo)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["source"]["repo"] == f"file://{build_repo}"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert sync(str(plain)).exit_code == 2
    missing = runner.invoke(app, ["catalog", "sync", "file:///nonexistent/repo.git"])
    assert missing.exit_code == 1 and missing.stderr.count("\n") == 1


def test_a_synced_catalog_decides_with_branch_python_and_alignment(build_repo, tmp_path) -> None:
    out = tmp_path / "catalog.json"
    sync(str(build_repo), "-o", str(out))
    catalog = parse_catalog(json.loads(out.read_text()), out)
    # The aligned branch is the only Python 3.12 build: without --branch it is never chosen.
    facts = host(catalog, "linux-rocky8.5-zen4", gpus=("9.0",), driver="580.95.05")
    with pytest.raises(BadInput, match=r"no branch matches --python-version 3\.12"):
        decide(facts, catalog, Request(python="3.12"))
    named = decide(facts, catalog, Request(branch="pytorch-2.8-vllm-0.10.0"))
    assert named.build is not None and named.build.python == "3.12"
    assert decide(facts, catalog).build.branch == "pytorch-2.10-python313"


def test_the_shipped_catalog_round_trips_through_sync(tmp_path) -> None:
    """Every row of the shipped catalog, written back as a recipe of the upstream's shape and synced,
    gives the same row: sync derives what the catalog says, for all 967 variants."""
    require(shutil.which("git") is not None, "git is not installed")
    shipped = json.loads((REPO / "catalog.json").read_text())
    repo = tmp_path / "replica"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    for branch in shipped["branches"]:
        files = {
            row["path"].removeprefix(".flox/pkgs/"): recipe_for_row(shipped, row)
            for row in shipped["variants"]
            if row["branch"] == branch["name"]
        }
        commit_branch(repo, branch["name"], files, parent="main")
    result = runner.invoke(
        app, ["catalog", "sync", str(repo), "--source-url", shipped["source"]["repo"], *as_upstream(repo)]
    )
    assert result.exit_code == 0, result.output
    synced = json.loads(result.stdout)
    assert synced["variants"] == shipped["variants"]
    assert [{k: v for k, v in b.items() if k != "commit"} for b in synced["branches"]] == [
        {k: v for k, v in b.items() if k != "commit"} for b in shipped["branches"]
    ]


def test_companion_repositories_are_read_beside_the_build_repository_with_each_torch_as_the_recipe_says(
    build_repo, tmp_path
) -> None:
    """torchvision with its own torch 2.10.0 (a version overlay inside `torch = …`), torchaudio without a pin (unknown, and
    its `armv8.2` spelling read as armv8_2), vLLM through a shared ISA table whose own `version` is vLLM's, not torch's;
    what cannot be read for certain is left out with its reason."""
    from buildrepo import ISA_TABLE, PIN_291, PIN_NEW, companion_recipe, make_companion_repo

    vision = make_companion_repo(
        tmp_path / "build-torchvision",
        {
            "main": {
                "torchvision-python313-cuda13_1-sm90-avx512.nix": companion_recipe(
                    "torchvision", "313", "avx512", "sm90", "13_1", PIN_NEW, torch_version="2.10.0"
                ),
                # The name says sm90, the recipe targets 8.9.
                "torchvision-python313-cuda13_1-sm90-avx2.nix": companion_recipe(
                    "torchvision", "313", "avx2", "sm89", "13_1", PIN_NEW, torch_version="2.10.0"
                ),
            },
        },
    )
    audio = make_companion_repo(
        tmp_path / "build-torchaudio",
        {
            "main": {
                "torchaudio-python313-cuda12_8-sm90-armv8.2.nix": companion_recipe(
                    "torchaudio", "313", "armv8.2", "sm90", target="sm_"
                )
            },
        },
    )
    vllm = make_companion_repo(
        tmp_path / "build-vllm",
        {
            "main": {
                "vllm-python313-cuda12_9-sm90-avx512.nix": companion_recipe(
                    "vllm", "313", "avx512", "sm90", "12_9", PIN_291, own_version="0.14.1", shared_isa=True
                ),
                "vllm-python313-cuda12_9-sm90-armv9.nix": companion_recipe(
                    "vllm", "313", "armv9", "sm90", "12_9", PIN_291, shared_isa=True
                ),
                "vllm-python313-cuda12_9-sm90.nix": companion_recipe(
                    "vllm", "313", "avx512", "sm90", "12_9", PIN_291, shared_isa=True
                ),
                "lib/cpu-isa.nix": ISA_TABLE,
            },
        },
    )
    # An in-repo companion whose name says other axes than the recipe it imports: left out, not taken as identical.
    from buildrepo import PIN_28, commit_branch, recipe

    commit_branch(
        build_repo,
        "pytorch-2.8-mixup",
        {
            "pytorch-python313-cuda12_8-sm61-avx2.nix": recipe("313", "avx2", PIN_28, "sm61", "12_8", cudnn_off=True),
            "torchvision-python313-cuda12_8-sm90-avx2.nix": companion_recipe(
                "torchvision", "313", "avx2", "sm90", "12_8", PIN_28, imports="pytorch-python313-cuda12_8-sm61-avx2"
            ),
        },
    )
    out = tmp_path / "catalog.json"
    result = runner.invoke(
        app,
        [
            "catalog",
            "sync",
            str(build_repo),
            str(vision),
            str(audio),
            str(vllm),
            "--source-url",
            "https://example.org/fork",
            "--source-url",
            "https://example.org/build-torchvision",
            "-o",
            str(out),
            *as_upstream(build_repo, vision, audio, vllm),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "catalog.companions.json").read_text())
    rows = {c["package"]: c for c in data["companions"]}
    assert set(rows) == {
        "torchvision-python313-cuda12_8-sm61-avx2",
        "torchvision-python313-cuda13_1-sm90-avx512",
        "torchaudio-python313-cuda12_8-sm90-armv8.2",
        "vllm-python313-cuda12_9-sm90-avx512",
    }
    vision_row = rows["torchvision-python313-cuda13_1-sm90-avx512"]
    assert (vision_row["repo"], vision_row["torch"], vision_row["torch_pin"], vision_row["torch_relation"]) == (
        "https://example.org/build-torchvision",
        "2.10.0",
        PIN_NEW,
        "separate",
    )
    audio_row = rows["torchaudio-python313-cuda12_8-sm90-armv8.2"]
    assert (audio_row["cpu_isa"], audio_row["torch"], audio_row["torch_relation"], audio_row["repo"]) == (
        "armv8_2",
        None,
        "unknown",
        str(audio),
    )
    vllm_row = rows["vllm-python313-cuda12_9-sm90-avx512"]
    assert (vllm_row["torch"], vllm_row["version"], vllm_row["torch_relation"]) == ("2.9.1", "0.14.1", "separate")
    err = result.stderr
    assert (
        "torchvision-python313-cuda13_1-sm90-avx2.nix: the name says sm90 (9.0), but the recipe sets GPU targets 8.9 (gpuArchSM, gpuTargets)"
        in err
    )
    assert (
        "vllm-python313-cuda12_9-sm90-armv9.nix: its compiler flags need bf16, i8mm, which the armv9 rule does not require of a CPU"
        in err
    )
    assert "vllm-python313-cuda12_9-sm90.nix: its name has no CPU instruction set part" in err
    assert (
        "pytorch-2.8-mixup:.flox/pkgs/torchvision-python313-cuda12_8-sm90-avx2.nix: it imports ./pytorch-python313-cuda12_8-sm61-avx2.nix, "
        "built for other axes: gpu_arch sm61 (its name says sm90)"
    ) in err
    listed = runner.invoke(
        app, ["list", "--project", "vllm", "--format", "json"], env={"PICKVARIANT_CATALOG": str(out)}
    )
    assert [row["package"] for row in json.loads(listed.stdout)["companions"]] == [
        "vllm-python313-cuda12_9-sm90-avx512"
    ]
    # A repository without companion recipes is no companion repository.
    plain = make_companion_repo(tmp_path / "plain", {"main": {"hello.nix": "{ }: { }\n"}})
    refused = runner.invoke(
        app,
        ["catalog", "sync", str(build_repo), str(plain), "-o", str(tmp_path / "again.json"), *as_upstream(build_repo)],
    )
    assert refused.exit_code == 2 and "has no torchvision, torchaudio or vllm recipe" in refused.stderr


def test_a_companions_fork_is_classified_only_where_it_is_the_upstreams_recipe_but_for_values(
    build_repo, tmp_path
) -> None:
    """Forks of build-vllm and build-torchvision whose avx2 recipes take the avx512bf16 entry of lib/cpu-isa.nix, an
    entry chosen by a name the recipe does not bind, a flag list joined with `++`: each left out naming the first
    place it differs from the upstream's recipe (handed to an AVX2 machine, each would crash with an illegal
    instruction); the honest one beside them is classified."""
    from buildrepo import FLAGS, ISA_TABLE, PIN_291, PIN_NEW, companion_recipe, make_companion_repo

    honest = companion_recipe("vllm", "313", "avx2", "sm90", "12_9", PIN_291, shared_isa=True)
    vision_honest = companion_recipe("torchvision", "313", "avx2", "sm90", "13_1", PIN_NEW, torch_version="2.10.0")
    upstream_files = {
        "vllm-python313-cuda12_9-sm90-avx2.nix": honest,
        "vllm-python313-cuda12_9-sm90-avx512.nix": honest.replace("avx2", "avx512"),
        "vllm-python313-cuda12_8-sm90-avx2.nix": honest.replace("12_9", "12_8"),
        "lib/cpu-isa.nix": ISA_TABLE,
    }
    vllm_upstream = make_companion_repo(tmp_path / "up-vllm", {"main": upstream_files})
    vision_upstream = make_companion_repo(
        tmp_path / "up-vision", {"main": {"torchvision-python313-cuda13_1-sm90-avx2.nix": vision_honest}}
    )
    forged = honest.replace("(import ./lib/cpu-isa.nix).avx2;", "(import ./lib/cpu-isa.nix).avx512bf16;")
    chosen_by_name = honest.replace("(import ./lib/cpu-isa.nix).avx2;", "isas.avx2;")
    vllm = _forked(
        vllm_upstream,
        tmp_path / "build-vllm",
        {
            "vllm-python313-cuda12_9-sm90-avx2.nix": forged,
            "vllm-python313-cuda12_9-sm90-avx512.nix": chosen_by_name.replace("avx2", "avx512"),
        },
    )
    joined = vision_honest.replace(
        f"cpuFlags = [ {FLAGS['avx2']} ];", f'cpuFlags = [ {FLAGS["avx2"]} ] ++ [ "-mavx512f" ];'
    )
    vision = _forked(
        vision_upstream, tmp_path / "build-torchvision", {"torchvision-python313-cuda13_1-sm90-avx2.nix": joined}
    )
    out = tmp_path / "catalog.json"
    argv = [str(build_repo), str(vision), str(vllm), "-o", str(out)]
    result = runner.invoke(app, ["catalog", "sync", *argv, *as_upstream(build_repo, vision_upstream, vllm_upstream)])
    assert result.exit_code == 0, result.output
    companions = json.loads((tmp_path / "catalog.companions.json").read_text())["companions"]
    rows = {
        c["package"]
        for c in companions
        if (c["branch"] == "main" and c["project"] != "torchvision") or "13_1" in c["package"]
    }
    assert rows == {"vllm-python313-cuda12_8-sm90-avx2"}  # the honest one alone
    err = result.stderr
    assert re.search(
        r"vllm-python313-cuda12_9-sm90-avx2\.nix: line \d+: 'avx512bf16' where upstream's "
        r"vllm-python313-cuda12_9-sm90-avx2\.nix \(.*\) has 'avx2'",
        err,
    ), err
    assert re.search(r"vllm-python313-cuda12_9-sm90-avx512\.nix: line \d+: 'isas' where upstream's", err), err
    assert re.search(
        r"torchvision-python313-cuda13_1-sm90-avx2\.nix: line \d+: '\[' where upstream's "
        r"torchvision-python313-cuda13_1-sm90-avx2\.nix \(.*\) has its compiler flags \(a value\)",
        err,
    ), err


def _forked(upstream: Path, fork: Path, changed: dict[str, str]) -> Path:
    """A clone of `upstream` whose main branch changes the files `changed` (paths under .flox/pkgs/)."""
    git(upstream.parent, "clone", "-q", "--no-local", str(upstream), str(fork))
    for name, text in changed.items():
        (fork / ".flox/pkgs" / name).write_text(text)
    git(fork, "commit", "-qam", "fork")
    return fork


def test_newer_names_are_read_as_what_they_mean_or_left_out_with_a_reason(build_repo, tmp_path) -> None:
    """build-torchaudio's `-nomagma` recipes are read (built without MAGMA; the build with MAGMA is preferred where
    both fit), its `cpu-darwin` (an Intel Mac build) and a fat `all` build are left out with their reasons, and no
    name fails the sync."""
    from buildrepo import PIN_NEW, commit_branch, companion_recipe, make_companion_repo, recipe

    audio = make_companion_repo(
        tmp_path / "build-torchaudio",
        {
            "main": {
                "torchaudio-python313-cuda13_1-sm90-avx512-nomagma.nix": companion_recipe(
                    "torchaudio", "313", "avx512", "sm90", "13_1", PIN_NEW, torch_version="2.10.0"
                ),
                "torchaudio-python313-cpu-darwin.nix": companion_recipe("torchaudio", "313", "avx2"),
            },
        },
    )
    # The build with MAGMA in a repository whose address sorts after: only the preference for it can choose it.
    with_magma = make_companion_repo(
        tmp_path / "zz-torchaudio",
        {
            "main": {
                "torchaudio-python313-cuda13_1-sm90-avx512.nix": companion_recipe(
                    "torchaudio", "313", "avx512", "sm90", "13_1", PIN_NEW, torch_version="2.10.0"
                ),
            },
        },
    )
    commit_branch(
        build_repo, "fat", {"pytorch-python313-cuda12_8-all-avx2.nix": recipe("313", "avx2", PIN_NEW, "sm90", "12_8")}
    )
    out = tmp_path / "catalog.json"
    result = runner.invoke(
        app,
        [
            "catalog",
            "sync",
            str(build_repo),
            str(audio),
            str(with_magma),
            "-o",
            str(out),
            *as_upstream(build_repo, audio, with_magma),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {c["package"]: c for c in json.loads((tmp_path / "catalog.companions.json").read_text())["companions"]}
    nomagma = rows["torchaudio-python313-cuda13_1-sm90-avx512-nomagma"]
    assert (nomagma["build_options"], nomagma["gpu_arch"], nomagma["cpu_isa"], nomagma["torch"]) == (
        ["nomagma"],
        "sm90",
        "avx512",
        "2.10.0",
    )
    assert "build_options" not in rows["torchaudio-python313-cuda13_1-sm90-avx512"]
    assert "torchaudio-python313-cpu-darwin.nix: an Intel Mac build (x86_64-darwin" in result.stderr
    assert "pytorch-python313-cuda12_8-all-avx2.nix: a build for every SM its recipe lists ('all')" in result.stderr
    from pickvariant.rules.pairing import companions_for
    from pickvariant.sources.flox.recipes.load import load_catalog

    catalog = load_catalog(out)
    variant = next(v for v in catalog.variants if v.package == "pytorch-python313-cuda13_1-sm90-avx512")
    (chosen,) = companions_for(catalog, variant, ["torchaudio"]) or ()
    assert chosen.package == "torchaudio-python313-cuda13_1-sm90-avx512"  # with MAGMA, where both fit


def test_sync_onto_a_disk_that_fills_replaces_neither_file_of_the_pair(tmp_path) -> None:
    """The catalog and its companions are written as a pair (issue 51): a file-size limit (RLIMIT_FSIZE, as a full
    disk refuses a write) that one of the new files exceeds leaves both old files as they were, with exit 1."""
    import resource
    import signal
    import subprocess
    import sys

    from buildrepo import make_build_repo
    from conftest import REPO

    repo = make_build_repo(tmp_path / "repo")
    out = tmp_path / "catalog.json"
    first = runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(out), *as_upstream(repo)])
    assert first.exit_code == 0, first.output
    pair = out, tmp_path / "catalog.companions.json"
    old = [path.read_bytes() for path in pair]
    for path in pair:  # a file written by hand since: the sync that follows must replace it, or neither
        path.write_bytes(path.read_bytes().replace(b'"validated"', b'"validated" ', 1))
    edited = [path.read_bytes() for path in pair]
    limit = max(len(data) for data in old) - 1

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as ENOSPC would
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "pickvariant", "catalog", "sync", str(repo), "-o", str(out), "--force", *as_upstream(repo)],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        preexec_fn=limited, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "cannot write" in done.stderr and "Traceback" not in done.stderr
    assert [path.read_bytes() for path in pair] == edited
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize("fails", ["first", "second"])
def test_a_pair_written_together_is_both_or_neither_whichever_file_the_disk_refuses(tmp_path, fails) -> None:
    """The writer of every pair (_base/files.write_together) under a file-size limit that only the first, or only
    the second, of two new files exceeds: both old files stay as they were (a writer that replaced the first before
    staging the second would leave a mismatched pair), and no staged file is left behind."""
    import resource
    import signal
    import subprocess
    import sys

    from conftest import REPO

    pair = [tmp_path / "catalog.json", tmp_path / "catalog.companions.json"]
    for path in pair:
        path.write_text("old\n")
    small, large = "s" * 1000, "l" * 5000
    new = (large, small) if fails == "first" else (small, large)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as ENOSPC would
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    code = (
        "import sys; from pathlib import Path; from pickvariant._base.files import write_together\n"
        "from pickvariant._base.errors import OperationFailed\n"
        "try:\n write_together([(Path(sys.argv[1]), sys.argv[3]), (Path(sys.argv[2]), sys.argv[4])])\n"
        "except OperationFailed as error:\n print(error, file=sys.stderr); sys.exit(1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, pair), *new], env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path, capture_output=True, text=True, timeout=60, preexec_fn=limited, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "cannot write" in done.stderr, done.stderr
    assert [path.read_text() for path in pair] == ["old\n", "old\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in pair)
