"""The console entry point, and what every command shares about the process (streams, exit codes).

`pickvariant detect --format json` with well-formed options is answered through pickvariant.api
without importing typer, click or rich: importing them costs more than detecting and deciding
(benchmarks/detect_speed.py). Every other command line, including every malformed one and every
--help, goes to the typer CLI (cli.py), which alone owns usage errors and help text; the fast path
only accepts what that CLI would parse to the same values, and tests hold the two to the same output.
"""

from __future__ import annotations

import errno
import gc
import json
import os
import re
import sys
from pathlib import Path

from pickvariant._base.errors import PickVariantError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from pickvariant.api import Recommendation

# detect's options as cli.py declares them (a test compares this table with the typer command).
DETECT_VALUE_OPTIONS = frozenset({"--workload", "--format", "--cpuinfo", "--gpu", "--driver", "--torch", "--cuda",
                                  "--gpu-index", "--branch", "--python-version", "--label"})
DETECT_FLAG_OPTIONS = frozenset({"--no-gpu", "--compact"})
DETECT_REPEATABLE = frozenset({"--gpu"})
WORKLOADS = ("general", "int8", "bf16")
_PLAIN_INT = re.compile(r"[0-9]{1,9}")
OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF, errno.EFBIG, errno.EDQUOT})


def one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def error_line(error: PickVariantError) -> str:
    """The stderr line for an error: a failed operation may add its log's tail; anything else is one line."""
    return f"pickvariant: {error if error.exit_code == 1 else one_line(str(error))}"


def prepare_streams() -> bool:
    """False when stdout is closed (`>&-`), after saying so; otherwise make encoding errors harmless."""
    if sys.stdout is None:
        print("pickvariant: standard output is closed: nothing could be printed", file=sys.stderr)
        return False
    for stream in (sys.stdout, sys.stderr):
        # An ASCII or Latin-1 locale must not turn a "…" or a box line into a traceback.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    return True


def output_failed(error: OSError) -> int:
    """stdout went away (a closed pipe) or filled up (a full disk): one line, exit 1, no second failure at exit."""
    if error.errno != errno.EPIPE:
        print(f"pickvariant: cannot write the output: {error.strerror or error}", file=sys.stderr)
    # The interpreter flushes stdout once more on the way out: point it where that cannot fail.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1


def detect_json(workload: str = "general", cpuinfo: Path | None = None, gpu: list[str] | None = None, no_gpu: bool = False,
                driver: str | None = None, torch: str | None = None, cuda: str | None = None, gpu_index: int | None = None,
                branch: str | None = None, python_version: str | None = None, compact: bool = False,
                label: str | None = None) -> tuple[str, Recommendation]:
    """`detect --format json`'s output and the Recommendation it shows (both paths print exactly this)."""
    from pickvariant import api
    from pickvariant._base import settings
    from pickvariant.machine.facts import WhatIf, gather_facts

    catalog = api.default_catalog()
    facts = gather_facts(catalog, WhatIf(cpuinfo, tuple(gpu or ()), no_gpu, driver))
    choice = api.recommend(workload=workload, torch=torch, cuda=cuda, gpu_index=gpu_index, branch=branch,
                           python_version=python_version, facts=facts, catalog=catalog)
    document = choice.to_json()
    label = label if label is not None else settings.setting(os.environ, settings.LABEL)
    if label is not None:
        document = {"label": label, **document}
    return (json.dumps(document, separators=(",", ":")) if compact else json.dumps(document, indent=2)), choice


def simple_detect_json(args: list[str]) -> dict[str, object] | None:
    """detect_json's arguments for `detect --format json …` with options given plainly, else None.

    None for anything the CLI should judge: an unknown or repeated option, a value that looks like
    an option, a workload or index the CLI would refuse, --help, a positional argument."""
    if not args or args[0] != "detect":
        return None
    values: dict[str, list[str]] = {}
    flags: set[str] = set()
    position = 1
    while position < len(args):
        name, equals, value = args[position].partition("=")
        position += 1
        if name in DETECT_FLAG_OPTIONS and not equals:
            if name in flags:
                return None
            flags.add(name)
            continue
        if name not in DETECT_VALUE_OPTIONS:
            return None
        if not equals:
            if position >= len(args):
                return None
            value, position = args[position], position + 1
        if value.startswith("-") or (name in values and name not in DETECT_REPEATABLE):
            return None
        values.setdefault(name, []).append(value)
    single = {name: found[0] for name, found in values.items()}
    if single.get("--format") != "json" or single.get("--workload", "general") not in WORKLOADS:
        return None
    if "--gpu-index" in single and not _PLAIN_INT.fullmatch(single["--gpu-index"]):
        return None
    return {
        "workload": single.get("--workload", "general"),
        "cpuinfo": Path(single["--cpuinfo"]) if "--cpuinfo" in single else None,
        "gpu": values.get("--gpu"),
        "no_gpu": "--no-gpu" in flags,
        "driver": single.get("--driver"),
        "torch": single.get("--torch"),
        "cuda": single.get("--cuda"),
        "gpu_index": int(single["--gpu-index"]) if "--gpu-index" in single else None,
        "branch": single.get("--branch"),
        "python_version": single.get("--python-version"),
        "compact": "--compact" in flags,
        "label": single.get("--label"),
    }


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    request = simple_detect_json(args)
    if request is None:
        from pickvariant.cli import main as cli_main

        return cli_main(args)
    if not prepare_streams():
        return 1
    try:
        text, choice = detect_json(**request)  # type: ignore[arg-type]  # the keys are detect_json's parameters
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except PickVariantError as error:
        print(error_line(error), file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("pickvariant: interrupted", file=sys.stderr)
        return 130
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            raise
        return output_failed(error)
    if choice.variant is None:
        print(error_line(choice.no_variant_error()), file=sys.stderr)
        return 3
    return 0


def console() -> int:
    """The `pickvariant` command: main(), then a process exit that skips what cannot matter any more.

    At exit the interpreter's last collections would walk every object still alive (the catalog's
    thousand variants among them) to find garbage that dies with the process anyway: 6 ms on a
    2-core VM, more than deciding. Frozen objects are still finalised, just not searched for cycles.
    Not part of main(), which tests and other programs call in a process that goes on."""
    code = main()
    gc.freeze()
    return code
