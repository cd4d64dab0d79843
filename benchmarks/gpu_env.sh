#!/bin/sh
# Sourced by the device scripts: pickvariant from the checkout, with the image's own packages where it has
# them and carried wheels from .whl only for what is missing; OUT must be set.
for module in typer:typer pynvml:nvidia-ml-py rich:rich packaging:packaging archspec:archspec cpuinfo:py-cpuinfo \
    jsonschema:jsonschema fastjsonschema:fastjsonschema tree_sitter:tree-sitter tree_sitter_nix:tree-sitter-nix tree_sitter_bash:tree-sitter-bash highspy:highspy; do
  python3 -c "import ${module%%:*}" 2>/dev/null || pip install -q --no-index --find-links .whl --target /tmp/site "${module##*:}" >>"$OUT/pip.txt" 2>&1
done
export PYTHONPATH=/tmp/site:$PWD
pv() { python3 -m pickvariant "$@"; }
step() { name=$1; shift; echo "\$ $*" >"$OUT/$name"; "$@" >>"$OUT/$name" 2>&1; echo "exit $?" >>"$OUT/$name"; }
