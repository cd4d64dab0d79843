"""Which convolution shapes let a GPU's tensor cores show their speed: bf16, channels_last, cuDNN
autotuned, each timed as verify's probe times it (median of batches of 10 calls between CUDA events) and as a bare
loop of the same convolution (events around 50 calls), in one run.

    python benchmarks/conv_shapes.py          # on a machine with a CUDA GPU

Prints TFLOP/s per shape, the ratio probe/bare loop and, with --peak TFLOPS, the share of the peak.
The probe's layer shapes (pickvariant/probe.py CONV_LAYERS) were chosen from this table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pickvariant.verify.probe import CONV_LAYERS, conv_flops, time_conv_layer

EXTRA = [
    ("resnet50 3x3 256ch 14x14 b256", 256, 256, 256, 14, 3),
    ("resnet50 3x3 512ch 7x7 b256", 256, 512, 512, 7, 3),
    ("sd-unet 3x3 320ch 64x64 b16", 16, 320, 320, 64, 3),
    ("sd-unet 3x3 1280ch 16x16 b64", 64, 1280, 1280, 16, 3),
    ("resnet50 3x3 64ch 56x56 b256", 256, 64, 64, 56, 3),
    ("resnet50 1x1 256->64 56x56 b256", 256, 256, 64, 56, 1),
    ("nchw-era probe 3x3 64ch 56x56 b32", 32, 64, 64, 56, 3),
]


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--peak", type=float, help="the GPU's dense bf16 peak, TFLOP/s (default: the catalog's for this GPU)"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU here", file=sys.stderr)
        return 1
    name = torch.cuda.get_device_name(0)
    if args.peak is None:
        from pickvariant.sources.flox.recipes.load import load_catalog

        found = load_catalog().peak_for(name)
        args.peak = found.tflops.get("bf16") if found else None
    print(
        f"{name}; torch {torch.__version__}; cuDNN {torch.backends.cudnn.version()}; bf16 peak {args.peak or 'unknown'} TFLOP/s (catalog)"
    )
    print(f"{'shape':40s} {'probe':>9s} {'bare':>9s} {'ratio':>6s} {'% peak':>7s}")
    for layer in list(CONV_LAYERS) + EXTRA:
        name, n, c, k, hw, r = layer
        seconds, _, bare_seconds, _ = time_conv_layer("cuda:0", n, c, k, hw, r, repeats=20, loop=50)
        flops = conv_flops(n, c, k, hw, r)
        probe, bare = flops / seconds / 1e12, flops / bare_seconds / 1e12
        share = f"{100 * probe / args.peak:6.1f}%" if args.peak else "      -"
        marker = "  (probe shape)" if layer in CONV_LAYERS else ""
        print(f"{name:40s} {probe:9.1f} {bare:9.1f} {probe / bare:6.2f} {share}{marker}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
