"""How long deciding a set (torch with companions) takes, beside torch alone in the same run (issue 28).

    python benchmarks/set_decision.py [--runs 200]

In-process, the catalog and its companions loaded once (as a long-lived caller has them): an H100
(Sapphire Rapids dump, driver 580.95.05) with --with torchvision, with torchvision and torchaudio (no set:
torchaudio's torch is unknown, so every candidate is looked at), and with vllm; a CPU-only node with
torchvision. Prints the median and best of each and the ratio to torch alone. Target: <= 2 ms for an H100.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's pickvariant, installed or not

from pickvariant import api  # noqa: E402
from pickvariant._base.request import Request  # noqa: E402
from pickvariant.machine.facts import gather_facts  # noqa: E402
from pickvariant.rules.decide import decide  # noqa: E402
from pickvariant.sources.flox.recipes.stack import load_stack  # noqa: E402

DUMPS = ROOT.parent / "shared" / "fixtures" / "cpuinfo"


def timed(call, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3, min(samples) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    catalog = api.default_catalog()
    load_stack(catalog)
    h100 = gather_facts(
        catalog, Request(cpuinfo=DUMPS / "linux-unknown-sapphirerapids", gpus=("9.0",), driver="580.95.05"), env={}
    )
    cpu = gather_facts(catalog, Request(cpuinfo=DUMPS / "linux-unknown-sapphirerapids", no_gpu=True), env={})
    cases = [
        ("H100, torch alone", h100, ()),
        ("H100 --with torchvision", h100, ("torchvision",)),
        ("H100 --with torchvision,torchaudio (no set)", h100, ("torchvision", "torchaudio")),
        ("H100 --with vllm", h100, ("vllm",)),
        ("CPU-only --with torchvision", cpu, ("torchvision",)),
    ]
    alone = None
    print(f"{'case':46s} {'median ms':>10s} {'best ms':>8s} {'x alone':>8s}")
    for name, facts, projects in cases:
        request = Request(with_projects=projects)
        decide(facts, catalog, request)  # the first answer fills the catalog's caches, as in a long-lived caller
        median, best = timed(lambda facts=facts, request=request: decide(facts, catalog, request), args.runs)
        alone = alone or median
        print(f"{name:46s} {median:10.3f} {best:8.3f} {median / alone:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
