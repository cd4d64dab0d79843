"""Nix's scoping and precedence, as the real `nix-instantiate --eval` reads them, are how the proof reads them (issue 51).

Each case is a small expression in the build repositories' shape whose build script exports the compiler flags it
computes. `nix-instantiate --eval` says what string the build script really is; the proof (pickvariant/sources/flox/
proof.py) must find exactly the flags in it. Each case is one where a one-line slip in the evaluator reads it
otherwise: a plain set that sees its own bindings, `//` with its sides swapped, `inherit` looked up in the set's own
scope, a `let` inside that does or does not shadow one outside, `rec` against a plain set, `or` defaults.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from conftest import require

from pickvariant.sources.flox.proof import NotProven, prove

AVX2 = '[ "-mavx2" "-mfma" ]'
AVX512 = '[ "-mavx512f" "-mavx512bw" ]'
SCRIPT = 'preConfigure = "export CXXFLAGS=\\"${builtins.concatStringsSep " " cpuFlags} $CXXFLAGS\\"";'

CASES = {
    # The set given to a function is plain: its own cpuFlags is not in scope for its preConfigure.
    "a plain set does not see its own bindings": f"let cpuFlags = {AVX512}; in {{ cpuFlags = {AVX2}; {SCRIPT} }}",
    "a rec set sees its own bindings": f"let cpuFlags = {AVX512}; in rec {{ cpuFlags = {AVX2}; {SCRIPT} }}",
    "// takes the right side": (
        f"let torch = {{ cpuFlags = {AVX512}; {SCRIPT} }}; torchBase = let cpuFlags = {AVX2}; in {{ {SCRIPT} }};"
        f" cpuFlags = {AVX512}; in torch // torchBase"
    ),
    "// takes the right side, swapped": (
        f"let torch = {{ cpuFlags = {AVX512}; {SCRIPT} }}; torchBase = let cpuFlags = {AVX2}; in {{ {SCRIPT} }};"
        f" cpuFlags = {AVX512}; in torchBase // torch"
    ),
    "inherit in a let takes the name from outside": f"let cpuFlags = {AVX2}; in let inherit cpuFlags; in {{ {SCRIPT} }}",
    "inherit in a rec set takes the name from outside": (
        f"let cpuFlags = {AVX2}; in rec {{ inherit cpuFlags; {SCRIPT} }}"
    ),
    "an inner let shadows an outer one": f"let cpuFlags = {AVX2}; in let cpuFlags = {AVX512}; in {{ {SCRIPT} }}",
    "a function's argument shadows a let": (
        f"let cpuFlags = {AVX2}; customPytorch = cpuFlags: {{ {SCRIPT} }}; in customPytorch {AVX512}"
    ),
    "or gives its default only where the attribute is missing": (
        f"let flags = {{ avx512 = {AVX512}; }}; cpuFlags = flags.avx2 or {AVX2}; in {{ {SCRIPT} }}"
    ),
    "or gives the attribute where it is there": (
        f"let flags = {{ avx2 = {AVX512}; }}; cpuFlags = flags.avx2 or {AVX2}; in {{ {SCRIPT} }}"
    ),
    "++ keeps its order": f"let cpuFlags = {AVX2} ++ {AVX512}; in {{ {SCRIPT} }}",
    "+ joins strings before interpolation": ('let cpuFlags = [ ("-mavx" + "512f") ]; in { ' + SCRIPT + " }"),
}


def _nix(expression: str) -> str:
    nix = shutil.which("nix-instantiate")
    require(nix is not None, "nix-instantiate is not installed (Debian: nix-bin)")
    done = subprocess.run(
        [str(nix), "--eval", "--strict", "--json", "--expr", f"({expression}).preConfigure"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_proof_finds_the_flags_nix_itself_computes(case) -> None:
    expression = CASES[case]
    script = _nix(expression)
    exported = re.fullmatch(r'export CXXFLAGS="(.*) \$CXXFLAGS"', script)
    assert exported, script
    try:
        proof = prove(expression, table_names=("avx2", "avx512"))  # as sync reads build-vllm's tables
    except NotProven as error:  # an honest expression must be read, not left out
        pytest.fail(f"{case}: {error}")
    assert list(proof.flags) == exported.group(1).split(), (case, script)


def test_the_cases_tell_the_instruction_sets_apart() -> None:
    """Each pair of cases a slip would confuse has different answers in Nix itself: the test can fail."""
    answers = {case: _nix(expression) for case, expression in CASES.items()}
    assert answers["a plain set does not see its own bindings"] != answers["a rec set sees its own bindings"]
    assert answers["// takes the right side"] != answers["// takes the right side, swapped"]
    assert "-mavx2" in answers["inherit in a let takes the name from outside"]
    assert (
        answers["or gives its default only where the attribute is missing"]
        != answers["or gives the attribute where it is there"]
    )
