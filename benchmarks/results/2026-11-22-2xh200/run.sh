#!/bin/sh
# Issue 16 on a machine with two GPUs: verify's figures per GPU, full and quick, with and without
# CUDA_VISIBLE_DEVICES, run on the device machine from the checkout:
#   sh benchmarks/results/2026-11-22-2xh200/run.sh
# Writes everything under $OUT (default ./out).
OUT=${OUT:-out}
mkdir -p "$OUT"
# The image's own packages where it has them; carried wheels from .whl only for what is missing.
for module in typer:typer pynvml:nvidia-ml-py rich:rich packaging:packaging; do
  python3 -c "import ${module%%:*}" 2>/dev/null || pip install -q --no-index --find-links .whl --target /tmp/site "${module##*:}" >>"$OUT/pip.txt" 2>&1
done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
step() { name=$1; shift; echo "\$ $*" >"$OUT/$name.txt"; "$@" >>"$OUT/$name.txt" 2>&1; echo "exit $?" >>"$OUT/$name.txt"; }

{
  python3 -c 'import sys, torch, typer; print("python", sys.version.split()[0], "torch", torch.__version__, "typer", typer.__version__)'
  nvidia-smi --query-gpu=index,name,pci.bus_id,compute_cap,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
} >"$OUT/versions.txt" 2>&1
step detect python3 -m pickvariant detect --format json
step verify-full python3 -m pickvariant verify --format json
step verify-full-text python3 -m pickvariant verify
step verify-quick python3 -m pickvariant verify --quick
step verify-quick-visible-1 env CUDA_VISIBLE_DEVICES=1 python3 -m pickvariant verify --quick
step verify-quick-pci-order env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1,0 python3 -m pickvariant verify --quick
step tests python3 -m pytest -q -p no:cacheprovider tests/test_verify.py tests/test_gpu.py
# The device returns at most 8 files: pack them.
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/results.tgz "$OUT/results.tgz"
