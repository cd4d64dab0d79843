"""Wall time of `pickvariant detect --format json` as a whole process, against archspec's bare
host detection (`import archspec.cpu; archspec.cpu.host()`) measured in the same run.

    pip install -e '.[bench]' && python benchmarks/detect_speed.py [--runs 30]

Prints both medians and their ratio (target: <= 1.0), and checks that detection on Linux
never imports py-cpuinfo (whose CPUID probe spawns a subprocess).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


# Bytecode caches as an installed package has them: with PYTHONDONTWRITEBYTECODE set (as in
# some CI images), an editable checkout would compile every module on every start.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def median_wall_s(command: list[str], runs: int) -> float:
    subprocess.run(command, capture_output=True, check=False, env=ENV)  # warm the page and bytecode caches once
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=False, env=ENV)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    exe = shutil.which("pickvariant") or shutil.which("pickvariant", path=str(__import__("pathlib").Path(sys.executable).parent))
    detect = [exe, "detect", "--format", "json"] if exe else [sys.executable, "-m", "pickvariant", "detect", "--format", "json"]
    baseline = [sys.executable, "-c", "import archspec.cpu; archspec.cpu.host()"]
    if subprocess.run(baseline, capture_output=True).returncode != 0:
        print("archspec is not installed: pip install archspec", file=sys.stderr)
        return 1
    empty = median_wall_s([sys.executable, "-c", "pass"], args.runs)
    ours = median_wall_s(detect, args.runs)
    theirs = median_wall_s(baseline, args.runs)
    imports = subprocess.run([sys.executable, "-X", "importtime", "-m", "pickvariant", "detect", "--format", "json"], capture_output=True, text=True).stderr
    probe = any(line.rstrip().endswith(("| cpuinfo", "| cpuinfo.cpuinfo")) for line in imports.splitlines())
    print(f"runs per command:                      {args.runs}")
    print(f"python -c pass (interpreter start):    {empty * 1000:7.1f} ms")
    print(f"archspec.cpu.host() (baseline):        {theirs * 1000:7.1f} ms")
    print(f"pickvariant detect --format json:      {ours * 1000:7.1f} ms")
    print(f"ratio pickvariant / archspec:          {ours / theirs:7.2f}  (target <= 1.00)")
    print(f"ratio without interpreter start:       {(ours - empty) / (theirs - empty):7.2f}")
    print(f"py-cpuinfo imported during detect:     {'YES' if probe else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
