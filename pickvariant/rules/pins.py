"""The pins a request names, one rule each, for every source's builds: `--torch` names the releases of PyTorch it
leaves, `--cuda` the CUDA line of the CUDA builds it leaves (docs/reference/commands.md). A build without CUDA (CPU
only, MPS, ROCm, XPU) is no CUDA build of another line: `--cuda` leaves it, so that a machine no CUDA build serves
still gets the build that runs there, and says so (wording.cuda_pin_unused)."""

from __future__ import annotations

from pickvariant._base.versions import release_matches


def torch_pinned_out(pin: str, torch: str) -> bool:
    """Whether `--torch pin` leaves out a build of PyTorch `torch`."""
    return not release_matches(pin, torch, "--torch")


def cuda_pinned_out(pin: str, cuda: str | None) -> bool:
    """Whether `--cuda pin` leaves out a build on CUDA `cuda` (None: a build without CUDA, which it leaves)."""
    return cuda is not None and not release_matches(pin, cuda, "--cuda")
