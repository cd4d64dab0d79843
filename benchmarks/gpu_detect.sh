#!/bin/sh
# Issue 43's figures and the README's answer, run on a GPU host (the device machine) from the checkout:
#   OUT=benchmarks/results/DATE-GPU-detect sh benchmarks/gpu_detect.sh
# detect as a user sees it (text, --explain, JSON), the direct NVML binding checked against pynvml on the real
# driver, and benchmarks/detect_speed.py with its GPU-host rows (archspec + nvidia-smi, with and without bytecode).
OUT=${OUT:-out}
mkdir -p "$OUT"
. benchmarks/gpu_env.sh
{
  python3 -c 'import sys, pynvml; print("python", sys.version.split()[0], "nvidia-ml-py", pynvml.__version__ if hasattr(pynvml, "__version__") else "?")'
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
  grep -m1 "model name" /proc/cpuinfo; nproc
} >"$OUT/versions.txt" 2>&1
step detect.txt pv detect
step detect-explain.txt pv detect --explain
step detect.json pv detect --format json
step detect-with-torchaudio.txt pv detect --with torchaudio
step detect-wheels.txt pv detect --source wheels --python python3
step detect-wheels.json pv detect --source wheels --python python3 --format json
step phases.txt python3 benchmarks/detect_phases.py --runs 15
step binding.txt python3 -c '
import pynvml
from pickvariant.machine.gpu import query_nvml
from pickvariant.machine.nvml import Nvml
ours, theirs = query_nvml(Nvml()), query_nvml(pynvml)
print(ours)
print("the same as pynvml:", ours == theirs)'
[ -n "${COMPARE:-}" ] || step detect-speed.txt python3 benchmarks/detect_speed.py --runs 15
# With COMPARE=DIR (a folder holding another commit's pickvariant package), that commit beside this one.
if [ -n "${COMPARE:-}" ]; then
  step detect-speed-compared.txt python3 benchmarks/detect_speed.py --runs 15 --compare "$COMPARE"
fi
python3 -X importtime -m pickvariant detect --format json >/dev/null 2>"$OUT/importtime-detect-json.txt"
