"""verify's "% of a bare loop", taken the old way and the new way in the same run (issue 27.17).

    python benchmarks/bare_loop.py [--rounds 5]      # on a machine with CUDA GPUs

For each GPU and each of the probe's layer shapes, `rounds` times: the old way (all of the probe's
samples, then one bare loop of 50 calls, as the probe did before) and the new way
(probe.timed_beside_bare_loop: the two interleaved on the same warmed-up state). Prints each
round's probe/bare ratio as a percentage and, per way, the median and the range: the baseline is
the old way in the same run. A quiet GPU should read 95-105% the new way.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pickvariant.verify.probe import CONV_LAYERS, LAYER_BATCH, on_device, timed, timed_beside_bare_loop


def _layer(device: str, batch: int, in_channels: int, out_channels: int, size: int, kernel: int):
    import torch

    with on_device(device):
        x = torch.randn(batch, in_channels, size, size, device=device, dtype=torch.bfloat16).to(
            memory_format=torch.channels_last
        )
        w = torch.randn(out_channels, in_channels, kernel, kernel, device=device, dtype=torch.bfloat16).to(
            memory_format=torch.channels_last
        )
    return lambda: torch.nn.functional.conv2d(x, w, padding=kernel // 2)


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU here", file=sys.stderr)
        return 1
    torch.backends.cudnn.benchmark = True
    print(
        f"torch {torch.__version__}; cuDNN {torch.backends.cudnn.version()}; {args.rounds} rounds; percent = probe TFLOP/s / bare-loop TFLOP/s"
    )
    for index in range(torch.cuda.device_count()):
        device = f"cuda:{index}"
        print(f"\n{device}: {torch.cuda.get_device_name(index)}")
        print(f"{'shape':36s} {'way':12s} {'median':>7s} {'min':>7s} {'max':>7s}  rounds")
        for name, batch, in_channels, out_channels, size, kernel in CONV_LAYERS:
            conv = _layer(device, batch, in_channels, out_channels, size, kernel)
            old, new = [], []
            for _ in range(args.rounds):
                seconds, _ = timed(conv, device, 5, batch=LAYER_BATCH)
                bare, _ = timed(conv, device, 1, batch=50)
                old.append(100 * bare / seconds)
                seconds, _, bare = timed_beside_bare_loop(conv, device, 6, LAYER_BATCH, 50)
                new.append(100 * bare / seconds)
            for way, ratios in (("sequential", old), ("interleaved", new)):
                shown = " ".join(f"{r:.0f}" for r in ratios)
                print(
                    f"{name:36s} {way:12s} {statistics.median(ratios):6.1f}% {min(ratios):6.1f}% {max(ratios):6.1f}%  {shown}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
