"""Catalog load + decide time with the synced 1,000-variant catalog, against baselines in the same run.

Baselines: json.loads of the same file (the floor any loader pays) and the 153-variant
schema_version 1 catalog of pickvariant 0.2 loaded by its own code, when a checkout of it
is given. Prints medians and ratios; asserts nothing (timings belong here, not in tests).

    python benchmarks/catalog_speed.py [--repo CLONE]   # CLONE: a build-pytorch clone to time `catalog sync`
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.machine.cpu import read_cpuinfo_dump
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules.decide import decide
from pickvariant.sources.flox.recipes.load import default_catalog_path, load_catalog

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "cpuinfo"


def median_ms(fn, repeats: int = 30) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", help="a build-pytorch clone: also time `catalog sync` of it")
    args = parser.parse_args()
    path = default_catalog_path()
    catalog = load_catalog(path)
    cpu = read_cpuinfo_dump(FIXTURES / "linux-rocky8.5-zen4")
    cpu = type(cpu)(cpu.os, cpu.arch, cpu.model, catalog.canonical_flags(cpu.flags), cpu.source)
    facts = HostFacts(
        os="linux",
        arch="x86_64",
        cpu=cpu,
        gpus=(GpuFacts(index=0, name="H100", compute_capability=parse_compute_capability("9.0")),),
        driver=DriverFacts(parse_driver_version("570.86.10"), None),
        driver_assumed=False,
        gpu_inconclusive=False,
    )
    floor = median_ms(lambda: json.loads(path.read_bytes()))
    load = median_ms(lambda: load_catalog(path))
    decision_ms = median_ms(lambda: decide(facts, catalog))
    both = median_ms(lambda: decide(facts, load_catalog(path)))
    print(f"catalog: {len(catalog.variants)} variants, {path.stat().st_size} bytes")
    print(f"json.loads alone (floor):  {floor:6.2f} ms")
    print(f"load_catalog:              {load:6.2f} ms  ({load / floor:.1f}x the floor)")
    print(f"decide (H100, driver 570): {decision_ms:6.2f} ms")
    print(f"load + decide:             {both:6.2f} ms  (target <= 15 ms)")
    if args.repo:
        from pickvariant.sources.flox.recipes.sync import sync

        start = time.perf_counter()
        result = sync(args.repo)
        print(
            f"catalog sync of {args.repo}: {time.perf_counter() - start:.2f} s for {result.variant_count} variants (target <= 5 s)"
        )


if __name__ == "__main__":
    main()
