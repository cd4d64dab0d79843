"""Running the probe (verify/probe.py) in the target interpreter: its command line, its bounds in time and output,
and its one JSON line read strictly and checked against its schema, or why there is none."""

from __future__ import annotations

import json
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pickvariant._base import strictjson
from pickvariant._base.capture import capture
from pickvariant._base.schema import SchemaError, load_schema, validate

PROBE = Path(__file__).resolve().parent / "probe.py"
PROBE_RESULT_SCHEMA = PROBE.with_name("probe-result.schema.json")
QUICK_TIMEOUT_S = 120.0
FULL_TIMEOUT_S = 600.0
# The probe prints one JSON line of a few KiB; anything near this is some other program.
MAX_PROBE_OUTPUT = 4 * 1024 * 1024


def probe_argv(python: list[str], quick: bool, info_only: bool = False, companions: Sequence[str] = ()) -> list[str]:
    """The command line that runs the probe in `python` (install's --dry-run prints it as it will run)."""
    return (
        [*python, str(PROBE)]
        + (["--quick"] if quick else [])
        + (["--info"] if info_only else [])
        + ([f"--with={','.join(companions)}"] if companions else [])
    )


def run_probe(
    python: list[str],
    quick: bool,
    info_only: bool = False,
    timeout_s: float | None = None,
    companions: Sequence[str] = (),
) -> tuple[dict[str, Any] | None, str | None]:
    """The probe's JSON, or None and why it produced none (a signal, a timeout, no torch, a flood of output)."""
    args = probe_argv(python, quick, info_only, companions)
    limit = timeout_s or (QUICK_TIMEOUT_S if quick or info_only else FULL_TIMEOUT_S)
    done = capture(args, limit, MAX_PROBE_OUTPUT, "the probe")
    if done.problem is not None:
        return None, done.problem
    assert done.returncode is not None
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        cause = {
            "SIGILL": "the build uses CPU instructions this CPU lacks (illegal instruction)",
            "SIGSEGV": "it crashed (segmentation fault)",
            "SIGBUS": "it crashed (bus error)",
            "SIGKILL": "it was killed (out of memory?)",
        }.get(name, "it was killed by a signal")
        return None, f"the probe died with {name}: {cause}"
    last = (done.stderr_tail.strip().splitlines() or ["no output"])[-1]
    if done.returncode != 0:
        if "No module named 'torch'" in done.stderr_tail:
            return None, f"{' '.join(python)} has no torch installed"
        return None, f"the probe failed with exit code {done.returncode}: {last[:300]}"
    try:
        result = strictjson.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError, RecursionError):
        return None, f"the probe printed no result: {last[:300]}"
    try:
        validate(result, load_schema(PROBE_RESULT_SCHEMA))
    except SchemaError as error:
        return None, f"the probe printed something that is not its result ({error})"
    return result, None
