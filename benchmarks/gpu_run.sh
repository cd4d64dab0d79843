#!/bin/sh
# Issue 15's GPU figures, run on the device machine from the checkout:
#   OUT=benchmarks/results/DATE-GPU sh benchmarks/gpu_run.sh
# verify (full and --quick, text and JSON), report (markdown and JSON), detect, the detection
# speed benchmark (with NVML's import and query cost), the convolution shape table and the
# bare-loop comparison (sequential against interleaved, issue 27.17).
OUT=${OUT:-out}
mkdir -p "$OUT"
# The image's own packages where it has them; carried wheels from .whl only for what is missing.
for module in typer:typer pynvml:nvidia-ml-py rich:rich packaging:packaging archspec:archspec cpuinfo:py-cpuinfo \
    jsonschema:jsonschema fastjsonschema:fastjsonschema tree_sitter:tree-sitter tree_sitter_nix:tree-sitter-nix highspy:highspy; do
  python3 -c "import ${module%%:*}" 2>/dev/null || pip install -q --no-index --find-links .whl --target /tmp/site "${module##*:}" >>"$OUT/pip.txt" 2>&1
done
export PYTHONPATH=/tmp/site:$PWD
pv() { python3 -m pickvariant "$@"; }
step() { name=$1; shift; echo "\$ $*" >"$OUT/$name"; "$@" >>"$OUT/$name" 2>&1; echo "exit $?" >>"$OUT/$name"; }

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
