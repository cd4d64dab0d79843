"""A recipe is classified only where its whole text proves its instruction set and GPU architectures (issue 41).

Each fork is made, with real git, from recipes in the upstream build repository's shape (tests/buildrepo.py:
the pinned nixpkgs, the overlays, the `export CXXFLAGS="${… cpuFlags}"` build script), then changed the way an
attacker, or an honest maintainer after a few percent of speed, would change it. Every change that can set the
instruction set or the GPU architectures somewhere pickvariant does not read leaves the recipe out, naming the
line; a change that cannot (a job count, a comment, a patch, another nixpkgs pin) keeps it, and it is
recommended. `catalog sync` of the real upstream repositories was checked by hand (see the closing note): all
967 variants and every companion classify as they did.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from buildrepo import FLAGS, ISA_TABLE, PIN_291, PIN_NEW, commit_branch, companion_recipe, git, recipe
from conftest import cli_runner, cpuinfo_path, generated, require
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pickvariant import api
from pickvariant.cli.main import app

runner = cli_runner()
BRANCH = "pytorch-2.10-python313"
AVX2 = "pytorch-python313-cpu-avx2"
SM90 = "pytorch-python313-cuda13_1-sm90-avx512"
HONEST_AVX2 = recipe("313", "avx2", PIN_NEW, version="2.10.0", pname=AVX2)
HONEST_SM90 = recipe("313", "avx512", PIN_NEW, "sm90", "13_1", version="2.10.0", pname=SM90)
OVERRIDE_END = "  meta = old.meta"  # where a fork adds a derivation attribute, inside overrideAttrs
SCRIPT_END = '$CFLAGS"\n'  # the last line the build script exports: a fork adds its lines after it


@pytest.fixture(autouse=True)
def _git(tmp_path: Path, monkeypatch) -> None:
    require(shutil.which("git") is not None, "git is not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    api.default_catalog.cache_clear()  # each test names its own catalog; detect loads one per process


def _attribute(text: str, binding: str) -> str:
    assert OVERRIDE_END in text
    return text.replace(OVERRIDE_END, f"  {binding}\n{OVERRIDE_END}", 1)


def _script(text: str, line: str) -> str:
    assert SCRIPT_END in text
    return text.replace(SCRIPT_END, f"{SCRIPT_END}    {line}\n", 1)


# An avx2-named recipe that gets AVX-512 (or a newer -march) some other way than its cpuFlags list.
ISA_FORKS = {
    "NIX_CFLAGS_COMPILE": (
        _attribute(HONEST_AVX2, 'NIX_CFLAGS_COMPILE = "-march=sapphirerapids";'),
        "binds NIX_CFLAGS_COMPILE",
    ),
    "env.CXXFLAGS": (_attribute(HONEST_AVX2, 'env.CXXFLAGS = "-mavx512f";'), "binds env"),
    "export -march=native": (
        _script(HONEST_AVX2, "export CXXFLAGS=-march=native"),
        "gives the compiler -march=native: it is not in hardware.json compiler_flags",
    ),
    "cmake CXX flags": (
        _attribute(HONEST_AVX2, 'cmakeFlags = [ "-DCMAKE_CXX_FLAGS=-mavx512f" ];'),
        "sets CMAKE_CXX_FLAGS",
    ),
    "localSystem.gcc.arch": (
        HONEST_AVX2.replace("{ config = {", '{ localSystem = { gcc.arch = "sapphirerapids"; }; config = {'),
        "binds localSystem",
    ),
    "withCFlags": (
        _attribute(
            HONEST_AVX2, 'nativeBuildInputs = [ (nixpkgs_pinned.withCFlags [ "-mavx512f" ] nixpkgs_pinned.stdenv) ];'
        ),
        "uses withCFlags",
    ),
    "impureUseNativeOptimizations": (
        _attribute(
            HONEST_AVX2, "buildInputs = [ (nixpkgs_pinned.impureUseNativeOptimizations nixpkgs_pinned.stdenv) ];"
        ),
        "uses impureUseNativeOptimizations",
    ),
    "a second list": (
        _script(
            HONEST_AVX2.replace("  cpuFlags =", '  extraFlags = [ "-mavx512f" ];\n  cpuFlags ='),
            'export CXXFLAGS="${nixpkgs_pinned.lib.concatStringsSep " " extraFlags} $CXXFLAGS"',
        ),
        "binds extraFlags",
    ),
    "a second list under a name the templates use": (
        _script(
            HONEST_AVX2.replace("  cpuFlags =", '  gpuArchNum = "-mavx512f";\n  cpuFlags ='),
            'export CFLAGS="${gpuArchNum} $CFLAGS"',
        ),
        "its compiler flags need avx512f, which the avx2 rule does not require",
    ),
    "a flag joined from two strings": (
        HONEST_AVX2.replace('"-mf16c"', '"-mf16c" ("-mavx" + "512f")'),
        "its compiler flags need avx512f, which the avx2 rule does not require",
    ),
    "a let that shadows the list": (
        HONEST_AVX2.replace("in (nixpkgs_pinned", 'in let cpuFlags = [ "-mavx512f" "-mavx512bw" ]; in (nixpkgs_pinned'),
        "its compiler flags need avx512bw, avx512f, which the avx2 rule does not require",
    ),
    "an argument's default": (
        HONEST_AVX2.replace("{ pkgs ? import <nixpkgs> {} }", '{ pkgs ? import <nixpkgs> {}, fAvx ? "-mavx512f" }')
        .replace('cpuFlags = [ "-mavx2"', 'cpuFlags = [ fAvx "-mavx2"')
        .replace(OVERRIDE_END, f'  passthru = {{ fAvx = "-mavx2"; }};\n{OVERRIDE_END}', 1),
        "takes the argument fAvx",
    ),
    "a build script that runs sed": (
        _script(HONEST_AVX2, "sed -i 's/-O2/-O2 -mavx512f/' CMakeLists.txt"),
        "runs a command pickvariant does not read",
    ),
    "a command hidden behind an echo": (
        _script(HONEST_AVX2, 'echo "building"; export CXXFLAGS="-mavx512f $CXXFLAGS"'),
        "more than one command on a line",
    ),
    "a with": (
        HONEST_AVX2.replace("in (nixpkgs_pinned", "in with nixpkgs_pinned; (nixpkgs_pinned"),
        "a Nix construct (with_expression)",
    ),
    "an import of a file of the repository": (
        HONEST_AVX2.replace('cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ]', "cpuFlags = import ./flags.nix"),
        "imports ./flags.nix, a file whose content pickvariant does not read",
    ),
}

# An sm90-named recipe that builds for another GPU architecture some other way than its gpuTargets.
GPU_FORKS = {
    "TORCH_CUDA_ARCH_LIST": (_script(HONEST_SM90, 'export TORCH_CUDA_ARCH_LIST="10.0"'), "10.0 (TORCH_CUDA_ARCH_LIST"),
    "CMAKE_CUDA_ARCHITECTURES": (
        _attribute(HONEST_SM90, 'cmakeFlags = [ "-DCMAKE_CUDA_ARCHITECTURES=100" ];'),
        "100 (-DCMAKE_CUDA_ARCHITECTURES)",
    ),
    "-gencode in CUDAFLAGS": (
        _script(HONEST_SM90, 'export CUDAFLAGS="-gencode=arch=compute_100,code=sm_100 $CUDAFLAGS"'),
        "sets CUDAFLAGS to -gencode=arch=compute_100,code=sm_100",
    ),
    "cudaCapabilities": (
        HONEST_SM90.replace(
            "config = { allowUnfree = true; }", 'config = { allowUnfree = true; cudaCapabilities = [ "10.0" ]; }'
        ),
        "10.0 (cudaCapabilities)",
    ),
}


def _fork(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "fork"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    commit_branch(repo, BRANCH, files)
    return repo


def _sync(tmp_path: Path, files: dict[str, str], source_url: str | None = None):
    repo = _fork(tmp_path, files)
    out = tmp_path / "catalog.json"
    extra = ["--source-url", source_url] if source_url else []
    result = runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return repo, out, {row["package"] for row in json.loads(out.read_text())["variants"]}, result.stderr


def _reason(stderr: str, package: str) -> str:
    found = re.search(rf"{BRANCH}:\.flox/pkgs/{package}\.nix: (.*)", stderr)
    assert found, stderr
    return found.group(1)


@pytest.mark.parametrize("case", sorted(ISA_FORKS))
def test_an_instruction_set_set_anywhere_but_the_canonical_list_leaves_the_recipe_out(case, tmp_path) -> None:
    forged, what = ISA_FORKS[case]
    assert forged != HONEST_AVX2
    _, _, rows, stderr = _sync(tmp_path, {f"{AVX2}.nix": forged, f"{SM90}.nix": HONEST_SM90})
    assert rows == {SM90}  # the honest recipe beside it stays
    reason = _reason(stderr, AVX2)
    assert what in reason
    assert re.match(r"line \d+", reason) or "compiler flags need" in reason, reason


@pytest.mark.parametrize("case", sorted(GPU_FORKS))
def test_gpu_architectures_set_anywhere_but_gpu_targets_leave_the_recipe_out(case, tmp_path) -> None:
    forged, what = GPU_FORKS[case]
    assert forged != HONEST_SM90
    _, _, rows, stderr = _sync(tmp_path, {f"{AVX2}.nix": HONEST_AVX2, f"{SM90}.nix": forged})
    assert rows == {AVX2}
    assert what in _reason(stderr, SM90)


def test_a_forged_recipe_is_never_recommended_and_the_honest_fork_is(tmp_path) -> None:
    """An AVX2-only machine, a fork whose avx2 recipe adds -march=native: nothing is recommended from it (exit 3);
    the same fork with only a job count, a comment, a patch and another nixpkgs pin changed: its avx2 recipe is."""
    haswell = str(cpuinfo_path("linux-rhel7-haswell"))
    forged, _ = ISA_FORKS["export -march=native"]
    _, catalog, rows, _ = _sync(tmp_path / "forged", {f"{AVX2}.nix": forged, f"{SM90}.nix": HONEST_SM90})
    assert rows == {SM90}
    refused = runner.invoke(
        app, ["detect", "--cpuinfo", haswell, "--no-gpu", "--format", "json"], env={"PICKVARIANT_CATALOG": str(catalog)}
    )
    assert refused.exit_code == 3, refused.output
    honest = (
        recipe("313", "avx2", PIN_291, version="2.10.0", pname=AVX2)
        .replace("# generated by pickvariant's tests", "# generated by pickvariant's tests\n# a fork's own comment")
        .replace(OVERRIDE_END, '  ninjaFlags = [ "-j8" ];\n  patches = [ ./fix-build.patch ];\n' + OVERRIDE_END, 1)
    )
    _, catalog, rows, _ = _sync(tmp_path / "honest", {f"{AVX2}.nix": honest, "fix-build.patch": "--- a\n+++ b\n"})
    assert rows == {AVX2}
    api.default_catalog.cache_clear()
    result = runner.invoke(
        app, ["detect", "--cpuinfo", haswell, "--no-gpu", "--format", "json"], env={"PICKVARIANT_CATALOG": str(catalog)}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["recommendation"]["package"] == AVX2


def test_a_fork_with_no_provable_recipe_is_refused_by_sync(tmp_path) -> None:
    repo = _fork(tmp_path, {f"{AVX2}.nix": ISA_FORKS["export -march=native"][0]})
    result = runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(tmp_path / "c.json")])
    assert result.exit_code == 2
    assert "has no PyTorch variant pickvariant can read" in result.stderr
    assert "gives the compiler -march=native: it is not in hardware.json compiler_flags" in result.stderr


def test_recipe_repo_re_checks_the_forks_bytes_never_the_catalogs_verdict(tmp_path) -> None:
    """The catalog was made from the honest repository; `recipe --repo FORK` serves the fork's tip only once the
    classifier proves it: a forged recipe is refused naming the line, not passed on as 'checked'."""
    honest_repo, catalog, _, _ = _sync(tmp_path / "honest", {f"{AVX2}.nix": HONEST_AVX2})
    forged_repo = _fork(tmp_path / "forged", {f"{AVX2}.nix": ISA_FORKS["NIX_CFLAGS_COMPILE"][0]})
    env = {"PICKVARIANT_CATALOG": str(catalog)}
    served = runner.invoke(app, ["recipe", AVX2, "--branch", BRANCH, "--repo", str(honest_repo)], env=env)
    assert served.exit_code == 0, served.output
    assert "checked against the catalog" in served.stderr
    refused = runner.invoke(app, ["recipe", AVX2, "--branch", BRANCH, "--repo", str(forged_repo)], env=env)
    assert refused.exit_code == 1
    assert re.search(r"does not match the catalog: line \d+ binds NIX_CFLAGS_COMPILE", refused.stderr), refused.stderr


def test_recipe_serves_the_commit_the_catalog_was_made_from_when_the_branch_moved(tmp_path) -> None:
    """The catalog records each branch's commit; a forged commit pushed on top afterwards is never served: the recipe
    comes from the recorded commit, and the move is said."""
    repo, catalog, _, _ = _sync(tmp_path, {f"{AVX2}.nix": HONEST_AVX2})
    recorded = json.loads(catalog.read_text())["branches"][0]["commit"]
    env = {"PICKVARIANT_CATALOG": str(catalog), "PICKVARIANT_RECIPES_REPO": ""}
    # The catalog's own source is the repository synced (its path): no --repo.
    git(repo, "checkout", "-q", BRANCH)
    (repo / ".flox/pkgs" / f"{AVX2}.nix").write_text(ISA_FORKS["export -march=native"][0])
    git(repo, "commit", "-qam", "faster")
    git(repo, "checkout", "-q", "main")
    result = runner.invoke(app, ["recipe", AVX2, "--branch", BRANCH], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == HONEST_AVX2
    assert f"since the catalog was made from {recorded[:12]}" in result.stderr


def test_a_build_vllm_table_is_read_as_nix_reads_it_not_from_a_decoy(tmp_path, build_repo) -> None:
    """build-vllm's recipes take their flags from lib/cpu-isa.nix: the entry the recipe selects is evaluated, so an
    avx2 entry carrying AVX-512 is found however the file hides it behind a decoy of the same name."""
    forged_table = ISA_TABLE.replace(
        '  avx2 = { name = "avx2"; flags = [ "-mavx2" "-mfma" "-mf16c" ]; };\n',
        '  avx2 = { name = "avx2"; flags = [ "-mavx2" "-mavx512f" ]; };\n'
        '  avx512 = { name = "avx512"; avx2 = { flags = [ "-mavx2" ]; }; flags = [ "-mavx512f" ]; };\n',
    ).replace(
        '  avx512 = { name = "avx512"; flags = [ "-mavx512f" "-mavx512dq" "-mavx512vl" "-mavx512bw" "-mfma" ]; };\n', ""
    )
    assert forged_table != ISA_TABLE
    vllm = tmp_path / "build-vllm"
    vllm.mkdir()
    git(vllm, "init", "-q", "-b", "main")
    honest = companion_recipe("vllm", "313", "avx2", "sm90", "12_9", PIN_291, shared_isa=True)
    commit_branch(vllm, "main", {"vllm-python313-cuda12_9-sm90-avx2.nix": honest, "lib/cpu-isa.nix": forged_table})
    result = runner.invoke(app, ["catalog", "sync", str(build_repo), str(vllm), "-o", str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    assert (
        not (tmp_path / "c.companions.json").exists()
        or "vllm-python313" not in (tmp_path / "c.companions.json").read_text()
    )
    assert "vllm-python313-cuda12_9-sm90-avx2.nix: its compiler flags need avx512f" in result.stderr
    assert FLAGS["avx2"]  # the honest table's flags are what the template writes


@pytest.fixture()
def build_repo(tmp_path: Path) -> Path:
    from buildrepo import make_build_repo

    return make_build_repo(tmp_path / "build-pytorch")


def test_a_name_that_promises_more_than_the_build_does_is_left_out_too(tmp_path) -> None:
    """Either way: an avx512-named recipe built with AVX2's flags would run, slower than its name says, on the
    AVX-512 machines it is recommended to: it is left out, naming the instruction set its flags prove."""
    avx512 = "pytorch-python313-cpu-avx512"
    short = recipe("313", "avx512", PIN_NEW, version="2.10.0", pname=avx512, cpu_flags=FLAGS["avx2"])
    _, _, rows, stderr = _sync(tmp_path, {f"{avx512}.nix": short, f"{AVX2}.nix": HONEST_AVX2})
    assert rows == {AVX2}
    assert "the name says avx512, but its build scripts give the compiler -mavx2 -mfma -mf16c, which the avx2 rule" in (
        _reason(stderr, avx512)
    )


def test_evaluation_is_bounded_in_size_and_depth() -> None:
    """Forty doublings of a list (or a string) would take 2^40 items, a thousand nested parentheses Python's stack:
    the evaluator itself stops at its bounds with a reason (the allowlist would refuse these names first)."""
    from pickvariant.sources.flox.nixeval import Evaluation, Unprovable
    from pickvariant.sources.flox.proof import NotProven, prove

    for joined in ("++", "+"):
        seed = '[ "-mavx2" ]' if joined == "++" else '"-mavx2 "'
        steps = " ".join(f"x{i + 1} = x{i} {joined} x{i};" for i in range(40))
        evaluation = Evaluation({}, lambda name, thunk, owner: False)
        with pytest.raises(Unprovable, match="more than"):
            evaluation.run(f"let x0 = {seed}; {steps} in builtins.fetchTarball {{ flags = x40; }}")
    nested = "(" * 3000 + '"-mavx2"' + ")" * 3000
    with pytest.raises(NotProven, match="nest"):
        prove(HONEST_AVX2.replace('"-mavx2" "-mfma"', f'{nested} "-mfma"'))


@given(st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_cut_or_repeat_of_a_recipe_is_proven_or_left_out_never_a_crash(data) -> None:
    """Real recipes cut or pasted at any byte: prove() answers with a proof or a reason, never another exception."""
    generated("prove: recipes cut and repeated at any byte")
    source = data.draw(st.sampled_from([HONEST_AVX2, HONEST_SM90, ISA_FORKS["a let that shadows the list"][0]]))
    start = data.draw(st.integers(0, len(source)))
    end = data.draw(st.integers(start, len(source)))
    cut = data.draw(st.sampled_from(["delete", "repeat"]))
    text = source[:start] + source[end:] if cut == "delete" else source[:end] + source[start:]
    from pickvariant.sources.flox.proof import NotProven, prove

    try:
        proof = prove(text)
    except NotProven as error:
        assert str(error)
    else:
        assert all(isinstance(flag, str) for flag in proof.flags)


# A patch is build input (issue 51): a local one is read, a fetched one accepted only by a hash upstream carries.
_ADDS_AVX512 = (
    "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -1,1 +1,2 @@\n project(Torch)\n"
    '+string(APPEND CMAKE_CXX_FLAGS " -mavx512f")\n'
)
_NORMAL_DIFF = '1a2\n> string(APPEND CMAKE_CXX_FLAGS " -march=sapphirerapids")\n'
_ED_SCRIPT = '1a\n  string(APPEND CMAKE_CXX_FLAGS " -march=sapphirerapids")\n.\n'  # an added line led by blanks
_MAGMA_PATCH = '(nixpkgs_pinned.fetchpatch {{ url = "{url}"; name = "fix.patch"; hash = "{digest}"; }})'
_KNOWN = "sha256-i9InbxD5HtfonB/GyF9nQhFmok3jZ73RxGcIciGBGvU="


def _with_patches(patches: str) -> str:
    return HONEST_AVX2.replace(OVERRIDE_END, f"  patches = (old.patches or [ ]) ++ [ {patches} ];\n{OVERRIDE_END}", 1)


@pytest.mark.parametrize("diff", [_ADDS_AVX512, _NORMAL_DIFF, _ED_SCRIPT], ids=["unified", "normal", "ed"])
def test_gnu_patch_really_adds_the_flag_these_patches_carry(diff, tmp_path) -> None:
    patch_program = shutil.which("patch")
    require(patch_program is not None, "GNU patch is not installed")
    (tmp_path / "CMakeLists.txt").write_text("project(Torch)\n")
    applied = subprocess.run(
        [str(patch_program), "-p1" if diff.startswith("---") else "CMakeLists.txt"],
        input=diff, text=True, cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "CMAKE_CXX_FLAGS" in (tmp_path / "CMakeLists.txt").read_text()


@pytest.mark.parametrize("diff", [_ADDS_AVX512, _NORMAL_DIFF, _ED_SCRIPT], ids=["unified", "normal", "ed"])
def test_a_local_patch_that_adds_compiler_flags_leaves_the_recipe_out(diff, tmp_path) -> None:
    """sync leaves the recipe out naming the patch and its line."""
    forked = _with_patches("./cmake-flags.patch")
    _, _, rows, stderr = _sync(tmp_path, {f"{AVX2}.nix": forked, "cmake-flags.patch": diff, f"{SM90}.nix": HONEST_SM90})
    assert rows == {SM90}
    reason = _reason(stderr, AVX2)
    assert re.match(
        r"line \d+: it applies ./cmake-flags.patch, whose line \d+ may add a compiler or CMake setting", reason
    )


def test_a_fetched_patch_is_read_only_by_a_hash_upstream_carries(tmp_path) -> None:
    secret = "https://user:TOKEN@example.invalid/evil.patch?private_token=SECRET"
    unknown = _with_patches(_MAGMA_PATCH.format(url=secret, digest="sha256-" + "A" * 43 + "="))
    known = _with_patches(_MAGMA_PATCH.format(url="https://github.com/icl-utk-edu/magma/commit/x.patch", digest=_KNOWN))
    _, _, rows, stderr = _sync(tmp_path / "unknown", {f"{AVX2}.nix": unknown, f"{SM90}.nix": HONEST_SM90})
    assert rows == {SM90}
    reason = _reason(stderr, AVX2)
    assert (
        "a fetched patch (https://example.invalid/evil.patch) whose hash is not one the build repositories carry"
        in (reason)
    )
    assert "TOKEN" not in stderr and "SECRET" not in stderr
    _, _, rows, _ = _sync(tmp_path / "known", {f"{AVX2}.nix": known, f"{SM90}.nix": HONEST_SM90})
    assert rows == {AVX2, SM90}


def test_a_recipe_fetched_alone_that_applies_a_local_patch_is_not_served(tmp_path) -> None:
    """`recipe --repo` reads one recipe, not its branch's patches: a recipe applying one is refused, not served."""
    honest = _with_patches("./fix-build.patch")
    repo, catalog, rows, _ = _sync(tmp_path, {f"{AVX2}.nix": honest, "fix-build.patch": "--- a\n+++ b\n"})
    assert rows == {AVX2}
    result = runner.invoke(
        app, ["recipe", AVX2, "--branch", BRANCH, "--repo", str(repo)], env={"PICKVARIANT_CATALOG": str(catalog)}
    )
    assert result.exit_code == 1
    assert "it applies ./fix-build.patch, a patch whose text pickvariant was not given" in result.stderr
