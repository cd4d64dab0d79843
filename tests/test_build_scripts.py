"""A recipe's build script is read as bash reads it (issue 51): real bash is the judge of what each script does.

Every case is run twice: through pickvariant's reader (pickvariant/sources/flox/bashscript.py and buildscript.py)
and through the real bash, as stdenv runs a hook (the commands it may call stubbed, nothing written outside the
test's folder), which reports the CFLAGS, CXXFLAGS and TORCH_CUDA_ARCH_LIST the script leaves. A script the reader
accepts must leave in bash exactly the flags and targets the reader found; each hostile script below makes bash
build with `-march=sapphirerapids` or for 10.0, and the reader refuses it. A generated corpus of scripts glued
from bash's hard cases checks the same agreement on scripts nobody wrote by hand.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from buildrepo import PIN_NEW, commit_branch, git, recipe
from conftest import cli_runner, cpuinfo_path, generated, require
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pickvariant import api
from pickvariant.cli.main import app
from pickvariant.sources.flox import buildscript
from pickvariant.sources.flox.nixeval import Text
from pickvariant.sources.flox.proof import allowlist

runner = cli_runner()
EVIL = 'export CXXFLAGS="-march=sapphirerapids $CXXFLAGS"'
HONEST = 'export CXXFLAGS="-mavx2 -mfma $CXXFLAGS"'
# Commands a hook may run are stubbed: bash still parses, expands and redirects as it would in the build.
_PRELUDE = "mkdir() { :; }\nln() { :; }\ncat() { command cat >/dev/null; }\n"
_REPORT = 'trap \'printf "%s\\n" "$CFLAGS" "$CXXFLAGS" "${TORCH_CUDA_ARCH_LIST-}" >"$PV_REPORT"\' EXIT\n'

# Scripts bash reads otherwise than a line-by-line checker: each makes bash build for another CPU or GPU.
HOSTILE = {
    "a # inside a word": f'echo "Configuring"#; {EVIL}',
    "a # after a quote, its quote swallowing lines": f"echo a#'\n{HONEST}\n'; {EVIL}",
    "a carriage return": f"echo building''\r; {EVIL}",
    "a raw carriage return line break": f"# note\r{EVIL}",
    "a vertical tab": f"# note\x0b; {EVIL}",
    "a form feed": f"echo x\x0c; {EVIL}",
    "a file separator": f"echo x\x1c; {EVIL}",
    "a group separator": f"echo x\x1d; {EVIL}",
    "a record separator": f"echo x\x1e; {EVIL}",
    "a next line (U+0085)": f"echo x\u0085; {EVIL}",
    "a line separator (U+2028)": f"echo x\u2028; {EVIL}",
    "a paragraph separator (U+2029)": f"echo x\u2029; {EVIL}",
    "a no-break space before a comment": f"export USE_X=0\u00a0#; {EVIL}",
    "a unit separator before a comment": f"export USE_X=0\x1f#; {EVIL}",
    "ANSI-C quoting": f"echo $'\\n'; {EVIL}",
    "a line continuation": 'export CXXFLAGS=\\\n"-march=sapphirerapids $CXXFLAGS"',
    "a heredoc whose end has a trailing blank": f"cat > a.cmake << 'EOF'\nif(NOT X)\nEOF \n{EVIL}\nEOF",
    "an unquoted heredoc": f"cat > a.cmake << EOF\n$({EVIL})\nEOF",
    "a command substitution in an echo": f'echo "$({EVIL}; echo x)"',
    "an assigning expansion": 'echo "${CXXFLAGS:=-march=sapphirerapids}"',
    "an export of two names": 'export USE_X=0 CXXFLAGS="-march=sapphirerapids"',
    "an append": 'export CXXFLAGS+=" -march=sapphirerapids"',
    "an assignment before a command": 'CXXFLAGS="-march=sapphirerapids" echo x; export CXXFLAGS',
    "a background command": f"echo x & {EVIL}",
    "an and-list": f"true && {EVIL}",
    "a function": f"f() {{ {EVIL}; }}\nf",
    "a subshell echo": f"(echo x); {EVIL}",
    "a value from another variable": 'export CXXFLAGS="$EVIL_FLAGS $CXXFLAGS"',
    "GPU targets through a #": 'echo "x"#; export TORCH_CUDA_ARCH_LIST="10.0"',
    "GPU targets through an expansion": 'export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-10.0}"',
}

# What the build repositories' templates write, and harmless variations: accepted, and bash agrees.
ACCEPTED = {
    "the template": (
        "# CPU optimizations via compiler flags — an em dash in a comment\n"
        f"{HONEST}\n"
        'export CFLAGS="-mavx2 -mfma $CFLAGS"\n'
        "export USE_FBGEMM=0      # FBGEMM hard-requires AVX2\n"
        'echo "CPU Features: AVX2 — broad" \n'
        'echo "2.10.0" > version.txt\n'
        "echo 1 > $out/.metadata-rev\n"
        "mkdir -p /build/cccl-compat/cccl\n"
        "ln -sf /nix/store/x/include/cuda /build/cccl-compat/cccl/cuda\n"
        "cat > cmake/Modules/FindCUDAToolkit.cmake << 'EOF'\n"
        "if(NOT CUDAToolkit_FOUND)\n"
        "include(FindCUDAToolkit)\n"
        "endif()\n"
        "EOF\n"
        'export TORCH_CUDA_ARCH_LIST="9.0"\n'
    ),
    "a # that starts a word": f"{HONEST} # -march=sapphirerapids in a comment",
    "a # inside quotes": 'echo "# export CXXFLAGS=-march=sapphirerapids"\n' + HONEST,
    "a trailing backslash in a comment": f"# a comment \\\n{HONEST}",
    "flags appended after the old ones": 'export CFLAGS="$CFLAGS -march=armv8.2-a+fp16+dotprod"',
}


def _read(script: str) -> buildscript.Found | buildscript.Refused:
    found = buildscript.Found()
    try:
        buildscript.read_script(Text((script,)), "preConfigure", allowlist().rules, found)
    except buildscript.Refused as refused:
        return refused
    return found


def _bash(script: str, folder: Path) -> tuple[bool, list[str], list[str]]:
    """(bash -n accepts it, the compiler flags the script leaves, the GPU targets it leaves), by the real bash."""
    bash = shutil.which("bash")
    require(bash is not None, "bash is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    report = folder / "report"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "out": str(folder), "CFLAGS": "", "CXXFLAGS": ""}
    env["PV_REPORT"] = str(report)
    syntax = subprocess.run([bash, "-n"], input=script.encode(), env=env, capture_output=True, timeout=30, check=False)
    report.unlink(missing_ok=True)
    command = [bash, "--norc", "--noprofile", "-c", _PRELUDE + _REPORT + script]
    subprocess.run(command, env=env, cwd=folder, capture_output=True, timeout=30, check=False)
    cflags, cxxflags, targets = [*report.read_text().split("\n"), "", "", ""][:3]
    flags = [flag for flag in (cflags + " " + cxxflags).split() if not flag.startswith("-I")]
    return syntax.returncode == 0, flags, [t for t in targets.replace(";", " ").split() if t]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_script_bash_reads_otherwise_is_refused_and_bash_shows_why(case, tmp_path) -> None:
    script = HOSTILE[case]
    refused = _read(script)
    assert isinstance(refused, buildscript.Refused), f"{case}: read as {refused}"
    assert refused.what
    _, flags, targets = _bash(script, tmp_path)
    # What the refusal prevents: bash itself builds with these (where the script is valid bash at all).
    if "GPU" in case:
        assert targets in ([], ["10.0"]), targets
    else:
        assert set(flags) <= {"-march=sapphirerapids", "-mavx2", "-mfma"}, flags


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_most_hostile_scripts_really_build_for_another_machine_in_bash(case, tmp_path) -> None:
    """The cases are real: bash, given each, leaves -march=sapphirerapids or 10.0 (or refuses the script itself)."""
    valid, flags, targets = _bash(HOSTILE[case], tmp_path)
    assert "-march=sapphirerapids" in flags or "10.0" in targets or not valid or case in _HARMLESS_IN_BASH, (
        case,
        flags,
    )


# Cases whose danger depends on the shell: refused all the same (pickvariant cannot prove them).
_HARMLESS_IN_BASH = {
    "a raw carriage return line break",
    "a heredoc whose end has a trailing blank",
    "an unquoted heredoc",
    "a value from another variable",
    "a vertical tab",
    "a line continuation",
    "a command substitution in an echo",
    "an assignment before a command",
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_what_the_reader_accepts_bash_builds_with_exactly(case, tmp_path) -> None:
    script = ACCEPTED[case]
    found = _read(script)
    assert isinstance(found, buildscript.Found), f"{case}: {found}"
    valid, flags, targets = _bash(script, tmp_path)
    assert valid
    assert found.flags == flags or sorted(found.flags) == sorted(flags), (found.flags, flags)
    assert [target for target, _ in found.targets] == targets


_PIECES = [
    HONEST, EVIL, 'export TORCH_CUDA_ARCH_LIST="9.0"', 'export TORCH_CUDA_ARCH_LIST="10.0"', "export USE_X=0",
    'echo "x"', "echo x", "# c", "#", ";", " ", "\t", "\n", "\n", "\n", "\r", "'", '"', "\\", "\\\n", "\u2028",
    "\u00a0", "\x0b", "$'", "cat > a.cmake << 'EOF'\n", "EOF", "EOF ", "if(NOT X)", "$(", ")", "`", "&", "{", "}",
    "mkdir -p /build/x", "ln -sf a b", "=", "x", "—",
]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12))
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
def test_any_script_the_reader_accepts_bash_builds_as_the_reader_says(tmp_path, pieces) -> None:
    generated("build scripts: glued from bash's hard cases, judged by real bash")
    script = "".join(pieces)
    found = _read(script)
    if isinstance(found, buildscript.Refused):
        return
    # Each example in a folder of its own: what one script leaves in its working folder (a file a later glob would
    # match) must not change how bash reads the next (hypothesis runs every example in the one tmp_path).
    import tempfile

    valid, flags, targets = _bash(script, Path(tempfile.mkdtemp(dir=tmp_path)))
    assert valid, script
    assert sorted(found.flags) == sorted(flags), (script, found.flags, flags)
    assert [target for target, _ in found.targets] == targets, script


def test_a_fork_hiding_an_export_behind_a_hash_recommends_nothing_from_it(tmp_path) -> None:
    """End to end: a fork whose avx2 recipe hides `export CXXFLAGS=-march=sapphirerapids` behind `"…"#;` is left
    out by sync (naming the line); an AVX2-only Haswell is recommended nothing from it."""
    require(shutil.which("git") is not None, "git is not installed")
    package = "pytorch-python313-cpu-avx2"
    honest = recipe("313", "avx2", PIN_NEW, version="2.10.0", pname=package)
    forged = honest.replace("    echo building\n", f'    echo "Configuring"#; {EVIL}\n', 1)
    assert forged != honest
    repo = tmp_path / "fork"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    commit_branch(repo, "pytorch-2.10-python313", {f"{package}.nix": forged, "pytorch-python313-cpu-avx512.nix": recipe(
        "313", "avx512", PIN_NEW, version="2.10.0", pname="pytorch-python313-cpu-avx512")})  # fmt: skip
    out = tmp_path / "catalog.json"
    synced = runner.invoke(app, ["catalog", "sync", str(repo), "-o", str(out)], env={"XDG_CACHE_HOME": str(tmp_path)})
    assert synced.exit_code == 0, synced.output
    assert f"{package}.nix: line" in synced.stderr and "more than one command on a line" in synced.stderr
    api.default_catalog.cache_clear()  # detect loads one catalog per process: this test names its own
    try:
        detect = runner.invoke(
            app,
            ["detect", "--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--no-gpu", "--format", "json"],
            env={"PICKVARIANT_CATALOG": str(out)},
        )
    finally:
        api.default_catalog.cache_clear()
    assert detect.exit_code == 3, detect.output
