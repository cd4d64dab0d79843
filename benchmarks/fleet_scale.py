"""`pickvariant fleet` on 10,000 nodes' verify lines (and hostile lines among them): wall time and peak memory.

The plan is a real `pickvariant plan` of 10,000 H100 nodes; each node's line is tests/data/verify-h100.json (a real
H100's verify output) with its label, the plan's package and branch, and a bf16 figure spread as a healthy fleet's
is (a few nodes failed, slow, on another build or missing). Among them, 1% hostile lines: not JSON, nested without
end, a label of control characters, a line of 2 MiB. `pickvariant fleet PLAN LINES --format json` runs in a fresh
process; the baseline, in the same run, is `json.loads` of every line of the same file in a fresh process (the floor
any reader of these lines pays). Peak memory is each process's own ru_maxrss.

    python benchmarks/fleet_scale.py [--nodes 10000]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
H100 = json.loads((ROOT / "tests" / "data" / "verify-h100.json").read_text())
SPR = ROOT / "tests" / "fixtures" / "cpuinfo" / "linux-unknown-sapphirerapids"

MEASURED = """
import json, resource, sys, time
start = time.perf_counter()
{body}
print(json.dumps({{"seconds": time.perf_counter() - start,
                  "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}), file=sys.stderr)
"""
FLEET = """
sys.argv = ["pickvariant", "fleet", sys.argv[1], sys.argv[2], "--format", "json"]
from pickvariant.cli.entry import console_main
try:
    console_main()
except SystemExit:
    pass
"""
FLOOR = """
with open(sys.argv[2], "rb") as lines:
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            pass
"""


def _plan(folder: Path, nodes: int) -> Path:
    one = subprocess.run(
        [sys.executable, "-m", "pickvariant", "detect", "--format", "json", "--compact", "--label", "x",
         "--cpuinfo", str(SPR), "--gpu", "9.0", "--driver", "580.95.05"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    with open(folder / "cluster.jsonl", "w") as cluster:
        for n in range(nodes):
            cluster.write(one.replace('"label":"x"', f'"label":"gpu{n:05d}"', 1))
    plan = subprocess.run(
        [sys.executable, "-m", "pickvariant", "plan", str(folder / "cluster.jsonl"), "--format", "json"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    (folder / "plan.json").write_text(plan)
    return folder / "plan.json"


def _lines(plan: Path, folder: Path) -> Path:
    rng = random.Random(0)
    nodes = json.loads(plan.read_text())["nodes"]
    bf16 = next(c for c in H100["checks"] if c["name"] == "matmul bf16" and c["device"] == "cuda:0")["tflops"]
    with open(folder / "lines.jsonl", "w") as out:
        for i, node in enumerate(nodes):
            if i % 500 == 7:
                continue  # missing
            line = copy.deepcopy(H100)
            line.update(label=node["label"], package=node["package"], branch=node["branch"])
            for check in line["checks"]:
                if check["name"] == "matmul bf16" and check["device"] == "cuda:0":
                    check["tflops"] = bf16 * (0.4 if i % 997 == 3 else rng.uniform(0.95, 1.03))
            if i % 800 == 5:
                line.update(passed=False, reasons=["GPU 0: a kernel failed to run"])
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
            if i % 100 == 50:
                out.write(
                    ["not json", "[" * 50000, '{"label":"\\u001b[2J","passed":true}', "x" * (2 << 20)][i % 4] + "\n"
                )
    return folder / "lines.jsonl"


def _measure(body: str, plan: Path, lines: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", MEASURED.format(body=body), str(plan), str(lines)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    return json.loads(done.stderr.strip().splitlines()[-1]) | {"stdout": done.stdout}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10000)
    nodes = parser.parse_args().nodes
    with tempfile.TemporaryDirectory() as folder:
        plan = _plan(Path(folder), nodes)
        lines = _lines(plan, Path(folder))
        size = lines.stat().st_size / (1 << 20)
        floor = _measure(FLOOR, plan, lines)
        started = time.perf_counter()
        fleet = _measure(FLEET, plan, lines)
        verdict = json.loads(fleet["stdout"])
        print(f"{nodes} nodes, {size:.1f} MiB of lines (bad lines: {verdict['input']['bad_lines']})")
        print(f"  counts: {verdict['counts']}")
        print(f"  json.loads of every line: {floor['seconds']:.2f} s, {floor['max_rss_mib']:.0f} MiB peak")
        print(f"  pickvariant fleet:        {fleet['seconds']:.2f} s, {fleet['max_rss_mib']:.0f} MiB peak")
        print(
            f"  ratio: {fleet['seconds'] / floor['seconds']:.2f}x the floor's time; whole process {time.perf_counter() - started:.2f} s"
        )


if __name__ == "__main__":
    main()
