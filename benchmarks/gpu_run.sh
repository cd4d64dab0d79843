#!/bin/sh
# Issue 15's GPU figures, run on the device machine from the checkout:
#   OUT=benchmarks/results/DATE-GPU sh benchmarks/gpu_run.sh
# verify (full and --quick, text and JSON), report (markdown and JSON), detect, the detection
# speed benchmark (with NVML's import and query cost), the convolution shape table and the
# bare-loop comparison (sequential against interleaved, issue 27.17).
OUT=${OUT:-out}
mkdir -p "$OUT"
. benchmarks/gpu_env.sh

{
  python3 -c 'import sys, torch, typer; print("python", sys.version.split()[0], "torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "typer", typer.__version__)'
  nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm,power.limit,mig.mode.current,ecc.mode.current --format=csv
  grep -m1 "model name" /proc/cpuinfo; nproc
} >"$OUT/versions.txt" 2>&1
step detect.json pv detect --format json
step verify.txt pv verify
step verify.json pv verify --format json
step verify-quick.txt pv verify --quick
step report.md pv report
step report.json pv report --format json
step detect-speed.txt python3 benchmarks/detect_speed.py --runs 20
step conv-shapes.txt python3 benchmarks/conv_shapes.py
step bare-loop.txt python3 benchmarks/bare_loop.py --rounds 5
# The device returns few files: pack them.
tar -C "$OUT" -czf /tmp/gpu-run.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/gpu-run.tgz "$OUT/gpu-run.tgz"
