#!/bin/sh
# The faults of README's "What pickvariant does when…" table that need a real GPU,
# run on the device machine from the checkout: sh benchmarks/results/2026-11-22-h200/run.sh
# Writes everything under $OUT (default ./out).
OUT=${OUT:-out}
mkdir -p "$OUT"
# The image's own packages where it has them (its typer 0.27 vendors click);
# carried wheels from .whl only for what is missing.
for module in typer:typer pynvml:nvidia-ml-py pytest:pytest hypothesis:hypothesis; do
  python3 -c "import ${module%%:*}" 2>/dev/null || pip install -q --no-index --find-links .whl --target /tmp/site "${module##*:}" >>"$OUT/pip.txt" 2>&1
done
export PYTHONPATH=/tmp/site:$PWD
pv() { python3 -m pickvariant "$@"; }
step() { name=$1; shift; echo "\$ $*" >"$OUT/$name.txt"; "$@" >>"$OUT/$name.txt" 2>&1; echo "exit $?" >>"$OUT/$name.txt"; }

python3 -c 'import sys, torch, typer, hypothesis; print("python", sys.version.split()[0], "torch", torch.__version__, "typer", typer.__version__, "hypothesis", hypothesis.__version__)' >"$OUT/versions.txt" 2>&1
nvidia-smi --query-gpu=name,compute_cap,driver_version,mig.mode.current --format=csv >>"$OUT/versions.txt" 2>&1
cp /proc/cpuinfo "$OUT/proc-cpuinfo"
step detect pv detect --format json
step detect-visible-none env CUDA_VISIBLE_DEVICES= python3 -m pickvariant detect --format json
step detect-visible-minus1 env CUDA_VISIBLE_DEVICES=-1 python3 -m pickvariant detect
step usage-error pv detect --bogus
step detect-visible-0 env CUDA_VISIBLE_DEVICES=0 python3 -m pickvariant detect --format json
step verify-visible-none env CUDA_VISIBLE_DEVICES= python3 -m pickvariant verify --quick
step verify-quick pv verify --quick
step detect-ascii env PYTHONIOENCODING=ascii python3 -m pickvariant detect
step detect-nocolor env NO_COLOR=1 python3 -m pickvariant detect --format markdown
step detect-own-dump pv detect --cpuinfo "$OUT/proc-cpuinfo" --no-gpu --format json
step readonly-cache env XDG_CACHE_HOME=/proc/pickvariant-cache HOME=/proc/nohome python3 -m pickvariant install --org acme --dir /tmp/proj --yes --no-verify
step tests python3 -m pytest -q -p no:cacheprovider tests/test_faults.py tests/test_gpu.py tests/test_fuzz.py tests/test_verify.py
# The device returns at most 8 files: pack them.
tar -C "$OUT" -czf /tmp/faults.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/faults.tgz "$OUT/faults.tgz"
