#!/bin/sh
# Issue 51/52's GPU check, run on the device machine from the checkout:
#   OUT=benchmarks/results/DATE-GPU sh benchmarks/gpu_judge.sh
# verify's judge now asks the one kernel rule (rules/kernels.py, verify/devices.py): the real probe on this GPU,
# text and JSON; detect and report for both sources (the report names no local path).
OUT=${OUT:-out}
mkdir -p "$OUT"
. benchmarks/gpu_env.sh
{
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
} >"$OUT/versions.txt" 2>&1
step detect.txt pv detect
step detect-wheels.txt pv detect --source wheels
step verify.txt pv verify
step verify.json pv verify --format json
step report-wheels.md pv report --source wheels --python python3
step report.md pv report --python python3
