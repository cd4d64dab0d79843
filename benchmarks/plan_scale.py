"""`pickvariant plan` on generated clusters of 1k, 10k and 100k nodes: wall time and peak memory.

The cluster is realistic in shape: node profiles are real CPU dumps from tests/fixtures/cpuinfo
with the GPUs and drivers of a mixed fleet (A100/H100/H200/L40S/V100/RTX, R550 to R580, CPU-only
and Grace nodes), weighted so that a few profiles hold most nodes. Each line is what
`pickvariant detect --format json --compact --label NODE` prints for that profile. Every size is
planned by `pickvariant plan FILE --format json` in a fresh process; the baseline, in the same
run, is `json.loads` of every line of the same file (the floor any reader of these lines pays).

    python benchmarks/plan_scale.py [--sizes 1000,10000,100000] [--hostile]

With --hostile it also plans two inputs written to exhaust memory: 100k nodes that are all distinct
machines (each its own CPU model name), and lines whose labels are 100 KB long (refused, line by line).
Peak memory is each plan process's own (ru_maxrss of the process, reported by the process itself).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pickvariant._base.request import Request
from pickvariant.machine.facts import gather_facts
from pickvariant.output.present import decision_json
from pickvariant.rules.decide import decide
from pickvariant.sources.flox.recipes.load import load_catalog

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "cpuinfo"
# (cpu dump, GPUs, driver, weight): weights are nodes per 100 of a mixed training/inference fleet.
FLEET = [
    ("linux-unknown-sapphirerapids", ("9.0",) * 8, "580.95.05", 30),
    ("linux-unknown-sapphirerapids", ("9.0",) * 8, "570.172.08", 8),
    ("linux-centos7-cascadelake", ("8.0",) * 8, "550.54.15", 20),
    ("linux-centos7-cascadelake", ("8.0",) * 4, "580.95.05", 6),
    ("linux-rocky8.5-zen4", ("9.0",) * 8, "580.95.05", 10),
    ("linux-rocky8.5-zen4", ("8.9",) * 4, "575.57.08", 6),
    ("linux-rhel7-skylake_avx512", ("7.0",) * 4, "550.54.15", 4),
    ("linux-rhel7-haswell", ("8.6",) * 2, "535.247.01", 3),
    ("linux-rhel9-neoverse_v2", ("9.0",), "580.95.05", 5),
    ("linux-amazon-neoverse_n1", (), None, 3),
    ("linux-rhel7-haswell", (), None, 3),
    ("linux-kvm-epyc-2core", (), None, 2),
]


def profile_lines() -> list[tuple[dict, int]]:
    catalog = load_catalog()
    documents = []
    for dump, gpus, driver, weight in FLEET:
        facts = gather_facts(
            catalog, Request(cpuinfo=FIXTURES / dump, gpus=gpus, no_gpu=not gpus, driver=driver), env={}
        )
        documents.append((decision_json(facts, decide(facts, catalog, Request()), catalog, "general"), weight))
    return documents


def write_cluster(path: Path, size: int, documents: list[tuple[dict, int]], rng: random.Random) -> None:
    weights = [weight for _, weight in documents]
    with path.open("w", encoding="utf-8") as out:
        for node in range(size):
            document, _ = rng.choices(documents, weights)[0]
            out.write(json.dumps({"label": f"node{node:06d}", **document}, separators=(",", ":")) + "\n")


def json_floor(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as lines:
        for line in lines:
            json.loads(line)
    return time.perf_counter() - start


# Runs `pickvariant plan` and then reports its own peak resident memory on the last line of stderr.
_MEASURED = (
    "import resource, sys\nfrom pickvariant.cli.entry import main\ncode = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nraise SystemExit(code)"
)


def plan_once(path: Path) -> tuple[float, float, dict]:
    """Wall seconds and peak RSS (MiB) of one `pickvariant plan` process."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "plan", str(path), "--format", "json"], capture_output=True, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 2, 3):
        raise SystemExit(done.stderr.decode())
    peak_kib = int(done.stderr.decode().strip().splitlines()[-1])
    return (
        wall,
        peak_kib / 1024,
        json.loads(done.stdout) if done.returncode == 0 else {"refused": done.stderr.decode().splitlines()[0]},
    )


def write_distinct(path: Path, size: int, documents: list[tuple[dict, int]]) -> None:
    """`size` nodes, every one a machine of its own: the same fleet, each CPU model name numbered."""
    with path.open("w", encoding="utf-8") as out:
        for node in range(size):
            document = json.loads(json.dumps(documents[node % len(documents)][0]))
            document["hardware"]["cpu"]["model"] = f"{document['hardware']['cpu']['model']} #{node}"
            out.write(json.dumps({"label": f"node{node:06d}", **document}, separators=(",", ":")) + "\n")


def write_long_labels(path: Path, size: int, documents: list[tuple[dict, int]]) -> None:
    """`size` lines whose labels are 100 KB each: refused line by line, never held."""
    label = "x" * 100_000
    with path.open("w", encoding="utf-8") as out:
        for node in range(size):
            out.write(
                json.dumps({"label": f"{label}{node}", **documents[node % len(documents)][0]}, separators=(",", ":"))
                + "\n"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--hostile", action="store_true", help="also plan 100k distinct machines and 100 KB labels")
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    documents = profile_lines()
    rng = random.Random(20261122)
    print(
        f"{'nodes':>8} {'plan s':>8} {'json.loads s':>13} {'ratio':>6} {'peak MiB':>9} {'MiB input':>10}  variants  solver"
    )
    with tempfile.TemporaryDirectory() as scratch:
        for size in sorted(sizes):
            path = Path(scratch) / f"cluster-{size}.jsonl"
            write_cluster(path, size, documents, rng)
            floor = json_floor(path)
            wall, peak, plan = plan_once(path)
            print(
                f"{size:>8} {wall:>8.2f} {floor:>13.2f} {wall / floor:>6.1f} {peak:>9.0f} {path.stat().st_size / 2**20:>10.0f}"
                f"  {len(plan['variants']):>8}  {plan['solver']['status']}"
            )
        if arguments.hostile:
            for name, write, size in (
                ("100k distinct machines", write_distinct, 100_000),
                ("100 KB labels", write_long_labels, 10_000),
            ):
                path = Path(scratch) / "hostile.jsonl"
                write(path, size, documents)
                wall, peak, plan = plan_once(path)
                print(
                    f"{name:>24}: {size} lines, {path.stat().st_size / 2**20:.0f} MiB input, plan {wall:.2f} s, peak {peak:.0f} MiB, "
                    f"{plan['input']['nodes'] if 'input' in plan else plan['refused'][:120]}"
                )
                path.unlink()


if __name__ == "__main__":
    main()
