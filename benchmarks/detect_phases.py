"""Where detect's time goes on a GPU host, in process, one fresh interpreter per sample (medians):

    python benchmarks/detect_phases.py [--runs 15]

Three ways of reading the GPUs, each timed over the same phases (imports, starting the read, loading the catalog,
gathering the facts and waiting for NVML, deciding and printing JSON), taking turns:
- early: what `detect` does: NVML's worker started before pickvariant's modules load (cli/entry.py), through the
  direct binding (machine/nvml.py);
- sequential: the direct binding, read where the facts are gathered, nothing overlapped;
- pynvml: nvidia-ml-py's module imported and queried where the facts are gathered (what detect did before).
`gpu_wait` is what is left of NVML's work once the main thread needs its answer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROGRAM = r"""
import time, json, sys
MODE = sys.argv[1]
t0 = time.perf_counter()
if MODE == "early":
    from pickvariant.machine import gpu as early
    early.start_early()
import pickvariant.api as api
from pickvariant._base.request import Request
from pickvariant.machine import gpu
from pickvariant.machine.facts import gather_facts
t1 = time.perf_counter()
if MODE == "early":
    pending = gpu.take_reading()
elif MODE == "pynvml":
    import pynvml
    pending = lambda: gpu.run_bounded(lambda: gpu.query_nvml(pynvml), gpu.NVML_TIMEOUT_S)
else:
    pending = gpu.read_gpus
t2 = time.perf_counter()
catalog = api.default_catalog()
t3 = time.perf_counter()
waited = []
def timed():
    start = time.perf_counter(); report = pending(); waited.append(time.perf_counter() - start); return report
facts = gather_facts(catalog, Request(), read_gpus_fn=timed)
t4 = time.perf_counter()
text = json.dumps(api.recommend_request(Request(), facts=facts, catalog=catalog).to_json())
t5 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "start": t2 - t1, "catalog": t3 - t2, "facts": t4 - t3,
                  "gpu_wait": waited[0], "decide_json": t5 - t4, "total": t5 - t0, "gpus": len(facts.gpus)}))
"""
MODES = ("early", "sequential", "pynvml")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rows: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for _ in range(args.runs):
        for mode in MODES:  # taking turns: a slow spell falls on all of them alike
            done = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True)
            rows[mode].append(json.loads(done.stdout))
    print(f"detect's phases in process, median of {args.runs} fresh interpreters each (ms):")
    keys = [key for key in rows[MODES[0]][0] if key != "gpus"]
    print(f"  {'':12s}" + "".join(f"{key:>12s}" for key in keys))
    for mode in MODES:
        medians = [statistics.median(row[key] for row in rows[mode]) * 1000 for key in keys]
        print(f"  {mode:12s}" + "".join(f"{value:12.1f}" for value in medians))
    early, pynvml = (statistics.median(row["total"] for row in rows[mode]) for mode in ("early", "pynvml"))
    print(f"  early / pynvml (what detect does now against before): {early / pynvml:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
