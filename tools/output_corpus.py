"""Every command's output over a corpus of command lines, as one digest per case: the proof that a
refactor changed no behaviour.

    python tools/output_corpus.py record BEFORE.jsonl     # on the old code
    python tools/output_corpus.py record AFTER.jsonl      # on the new code
    python tools/output_corpus.py compare BEFORE.jsonl AFTER.jsonl

Each case is a command line run in this process through the console entry (pickvariant.cli.entry.main),
with stdout, stderr and the exit code digested. Nothing here depends on a module path inside the
package, so the same script runs on both sides of a move. GPU detection is never asked: every case
states its GPUs, or --no-gpu, so the machine it runs on does not matter.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CPUINFO = REPO / "tests" / "fixtures" / "cpuinfo"

GPU_SETS = (
    ["--no-gpu"],
    ["--gpu", "9.0"],
    ["--gpu", "8.0"],
    ["--gpu", "8.6"],
    ["--gpu", "8.9"],
    ["--gpu", "7.0"],
    ["--gpu", "6.1"],
    ["--gpu", "12.0"],
    ["--gpu", "10.0"],
    ["--gpu", "11.0"],
    ["--gpu", "8.7"],
    ["--gpu", "9.0", "--gpu", "8.0"],
    ["--gpu", "8.0"] * 8,
    ["--gpu", "13.0"],
    ["--gpu", "3.5"],
)
DRIVERS = (
    [],
    ["--driver", "470.57.02"],
    ["--driver", "525.60.13"],
    ["--driver", "535.104.05"],
    ["--driver", "570.86.10"],
    ["--driver", "575.51.03"],
    ["--driver", "580.95.05"],
)
OPTION_SETS = (
    [],
    ["--workload", "int8"],
    ["--workload", "bf16"],
    ["--torch", "2.9"],
    ["--cuda", "12.9"],
    ["--python-version", "3.12"],
    ["--branch", "pytorch-2.9-vllm-0.15.1"],
    ["--gpu-index", "1"],
)
COMMANDS = ("detect", "list", "catalog", "catalog sync", "recipe", "install", "plan", "verify", "report")


def cpu_dumps() -> list[str]:
    return sorted(
        str(path.relative_to(REPO)) for path in CPUINFO.iterdir() if path.name.startswith(("linux-", "darwin-"))
    )


def cases() -> list[list[str]]:
    found: list[list[str]] = []
    for dump, gpus, driver, options in itertools.product(cpu_dumps(), GPU_SETS, DRIVERS, OPTION_SETS):
        found.append(["detect", "--format", "json", "--cpuinfo", dump, *gpus, *driver, *options])
    for dump, gpus, driver in itertools.product(cpu_dumps(), GPU_SETS, DRIVERS):
        for output in ("text", "markdown"):
            found.append(["detect", "--format", output, "--cpuinfo", dump, *gpus, *driver])
    found.append(["detect", "--format", "json", "--compact", "--label", "n1", "--cpuinfo", cpu_dumps()[0], "--no-gpu"])
    for command in COMMANDS:
        found.append([*command.split(), "--help"])
    found.append(["--help"])
    found.append(["--version"])
    for output in ("text", "json", "markdown"):
        found.append(["list", "--format", output])
        found.append(["list", "--all", "--format", output])
        for filters in (
            ["--branch", "pytorch-2.10-python313"],
            ["--cuda", "12.9"],
            ["--cuda", "none"],
            ["--gpu", "sm90"],
            ["--gpu", "mps"],
            ["--gpu", "cpu"],
            ["--isa", "armv9"],
            ["--platform", "aarch64-linux"],
            ["--python-version", "3.12"],
            ["--gpu", "8.0", "--isa", "avx2"],
        ):
            found.append(["list", "--format", output, *filters])
    for package, branch in (
        ("pytorch-python313-cuda13_0-sm90-avx512", "pytorch-2.10-python313"),
        ("pytorch-python313-cpu-avx2", "pytorch-2.10-python313"),
        ("pytorch-python313-cuda12_9-sm61-avx", "pytorch-2.9-python313"),
        ("pytorch-python311-cuda12_9-sm70-avx2", None),
        ("pytorch-python313-cuda13_1-sm121-armv9", None),
        ("pytorch-python313-cuda12_8-sm89-avx512vnni", None),
    ):
        found.append(["recipe", package, "--generate", *(["--branch", branch] if branch else [])])
    # Bad input: one line and exit 2 each.
    found += [
        ["detect", "--gpu", "hopper"],
        ["detect", "--driver", "x"],
        ["detect", "--torch", "9.9", "--no-gpu"],
        ["detect", "--branch", "nope"],
        ["detect", "--gpu-index", "7", "--gpu", "9.0"],
        ["list", "--branch", "nope"],
        ["recipe", "nope", "--generate"],
        ["detect", "--cpuinfo", "/nonexistent"],
        ["detect", "--frobnicate"],
        ["install", "--dry-run", "--org", "-rf", "--no-gpu"],
        ["plan", "/nonexistent"],
    ]
    return found


def run(argv: list[str]) -> tuple[int, str, str]:
    try:
        from pickvariant.cli.entry import main
    except ImportError:  # the layout before issue 44, so one script records both sides of that move
        from pickvariant.entry import main  # type: ignore[no-redef]

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(list(argv))
        except SystemExit as leaving:  # click's --help and --version paths
            code = leaving.code if isinstance(leaving.code, int) else 1
    return code, stdout.getvalue(), stderr.getvalue()


def plan_cases(workdir: Path) -> list[list[str]]:
    """plan over detect lines of the corpus's own machines: one input file, every format."""
    lines = []
    for index, (dump, gpus, driver) in enumerate(itertools.product(cpu_dumps(), GPU_SETS[:8], DRIVERS[::3])):
        _, out, _ = run(
            [
                "detect",
                "--format",
                "json",
                "--compact",
                "--label",
                f"node{index:03d}",
                "--cpuinfo",
                dump,
                *gpus,
                *driver,
            ]
        )
        lines.append(out)
    nodes = workdir / "nodes.jsonl"
    nodes.write_text("".join(lines))
    return [
        ["plan", str(nodes), "--format", output, *extra]
        for output in ("text", "json", "markdown")
        for extra in ([], ["--max-variants", "3"], ["--org", "acme"])
    ]


def record(target: Path) -> None:
    import tempfile

    for name in [name for name in os.environ if name.startswith("PICKVARIANT_")]:
        del os.environ[name]
    os.environ.update(
        {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1", "PICKVARIANT_RECIPES_REPO": "git://127.0.0.1:9/none"}
    )
    with tempfile.TemporaryDirectory() as work:
        all_cases = cases() + plan_cases(Path(work))
        with target.open("w") as out:
            for argv in all_cases:
                code, stdout, stderr = run(argv)
                shown = [arg.replace(work, "WORK") for arg in argv]
                digest = hashlib.sha256(json.dumps([code, stdout, stderr.replace(work, "WORK")]).encode()).hexdigest()[
                    :16
                ]
                out.write(
                    json.dumps(
                        {
                            "argv": shown,
                            "exit": code,
                            "digest": digest,
                            "stdout": stdout[:20000],
                            "stderr": stderr.replace(work, "WORK")[:4000],
                        }
                    )
                    + "\n"
                )
    print(f"{len(all_cases)} cases recorded in {target}")


def compare(before: Path, after: Path) -> int:
    old = [json.loads(line) for line in before.read_text().splitlines()]
    new = [json.loads(line) for line in after.read_text().splitlines()]
    if [case["argv"] for case in old] != [case["argv"] for case in new]:
        print("the two corpora hold different cases")
        return 1
    differ = [(a, b) for a, b in zip(old, new, strict=False) if a["digest"] != b["digest"]]
    for a, b in differ[:5]:
        print("differs:", " ".join(a["argv"]))
        import difflib

        for part in ("stdout", "stderr"):
            sys.stdout.writelines(
                list(difflib.unified_diff(a[part].splitlines(True), b[part].splitlines(True), part, part))[:40]
            )
        print(f"  exit {a['exit']} -> {b['exit']}")
    print(f"{len(old)} cases, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"] and len(sys.argv) == 3:
        record(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) == 4:
        raise SystemExit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        raise SystemExit(__doc__)
