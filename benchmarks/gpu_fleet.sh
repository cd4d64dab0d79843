#!/bin/sh
# Issue 46 on a GPU host: the node's verify line as fleet reads it, three times on the same GPU (the spread fleet's
# "slow" threshold is set against), and the fleet's verdict over them; with the wheels plan of the same node.
#   OUT=benchmarks/results/DATE-GPU-fleet sh benchmarks/gpu_fleet.sh
# The host has no Flox: its own PyPI torch is probed with --package naming the plan's assignment, so the checks and
# figures are real and the build is not the Flox one (said in the results' README).
OUT=${OUT:-out}
mkdir -p "$OUT"
. benchmarks/gpu_env.sh
{
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
  nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm,power.limit --format=csv
} >"$OUT/versions.txt" 2>&1
pv detect --format json --compact --label h100-a >"$OUT/cluster.jsonl"
for label in h100-b h100-c; do sed "s/\"label\":\"h100-a\"/\"label\":\"$label\"/" "$OUT/cluster.jsonl" | head -1; done >>"$OUT/cluster.jsonl.more"
cat "$OUT/cluster.jsonl.more" >>"$OUT/cluster.jsonl" && rm "$OUT/cluster.jsonl.more"
pv plan "$OUT/cluster.jsonl" --format json >"$OUT/plan.json"
package=$(python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["nodes"][0]; print(n["package"], n["branch"])' "$OUT/plan.json")
set -- $package
for label in h100-a h100-b h100-c; do
  pv verify --format json --compact --label "$label" --package "$1" --branch "$2" >>"$OUT/results.jsonl" 2>>"$OUT/verify-stderr.txt"
done
step fleet.txt pv fleet "$OUT/plan.json" "$OUT/results.jsonl"
step fleet.json pv fleet "$OUT/plan.json" "$OUT/results.jsonl" --format json
step plan-wheels.txt pv plan --source wheels "$OUT/cluster.jsonl"
