#!/bin/sh
# Issue 28's GPU run, on the device machine from the checkout:
#   OUT=benchmarks/results/DATE-GPU-with sh benchmarks/gpu_with.sh
# detect --with on this machine, verify --with on the image's own torch, torchvision and torchaudio (a
# matched set), with vllm (not installed there), and a mismatched pair: torchvision 0.25.0, built
# against torch 2.10, carried as a wheel in .whl/mismatch, beside the image's torch 2.11.
OUT=${OUT:-out}
mkdir -p "$OUT"
. benchmarks/gpu_env.sh
{
  python3 -c 'import sys, torch, torchvision, torchaudio; print("python", sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__, "torchaudio", torchaudio.__version__)'
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
} >"$OUT/versions.txt" 2>&1
step detect-with.json pv detect --format json --with torchvision
step detect-with.txt pv detect --with torchvision,torchaudio
step verify-with.txt pv verify --with torchvision,torchaudio
step verify-with.json pv verify --format json --with torchvision,torchaudio
step verify-with-vllm.txt pv verify --quick --with vllm
pip install -q --no-deps --target /tmp/mismatch .whl/mismatch/torchvision-0.25.0-*.whl >>"$OUT/pip.txt" 2>&1
export PYTHONPATH=/tmp/mismatch:$PYTHONPATH  # the last steps: the carried torchvision shadows the image's
step verify-mismatch.txt pv verify --quick --with torchvision
step verify-mismatch.json pv verify --quick --format json --with torchvision
tar -C "$OUT" -czf /tmp/gpu-with.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/gpu-with.tgz "$OUT/gpu-with.tgz"
