"""Checking one row's hardware: what the catalog, its companions file and the generated companions' data share (and
the data folder)."""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping

from pickvariant._base.schema import SchemaError
from pickvariant.sources.build import MPS
from pickvariant.sources.hardware import HardwareFacts

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path
if TYPE_CHECKING:
    from typing import Any

DATA_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "data")  # as text: see _base/files.py
HARDWARE_KEY = operator.itemgetter("platform", "gpu_arch", "cpu_isa", "cuda")


def check_hardware(where: str, raw: Mapping[str, Any], hardware: HardwareFacts) -> None:
    platform = hardware.platforms.get(raw["platform"])
    if platform is None:
        raise SchemaError(f"{where}.platform", f"{raw['platform']!r} is not in platforms")
    gpu, isa_name, cuda = raw["gpu_arch"], raw["cpu_isa"], raw["cuda"]
    if gpu == MPS:
        if isa_name is not None or cuda is not None or platform.os != "darwin":
            raise SchemaError(
                where, "an MPS variant has no CPU instruction set and no CUDA line, and is built for darwin"
            )
        return
    if isa_name not in hardware.isas:
        raise SchemaError(f"{where}.cpu_isa", f"unknown CPU instruction set {isa_name!r}")
    isa = hardware.isas[isa_name]
    if platform.os != "linux" or platform.arch != isa.platform:
        raise SchemaError(f"{where}.platform", f"{raw['platform']} cannot run {isa_name} ({isa.platform} Linux)")
    if (gpu is None) != (cuda is None):
        raise SchemaError(where, "a CUDA variant has both gpu_arch and cuda; a CPU-only one has neither")
    if gpu is None:
        return
    if gpu not in hardware.gpu_archs:
        raise SchemaError(f"{where}.gpu_arch", f"unknown GPU architecture {gpu!r}")
    arch = hardware.gpu_archs[gpu]
    if not arch.builds_with(cuda):
        raise SchemaError(
            f"{where}.gpu_arch",
            f"{gpu} cannot be built with CUDA {cuda} (needs {arch.min_cuda}..{arch.max_cuda or ''})",
        )
    if not arch.has_host(isa.platform):
        raise SchemaError(f"{where}.cpu_isa", f"{gpu} has no {isa.platform} host (platforms {list(arch.platforms)})")
