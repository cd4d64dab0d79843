"""A stand-in for the `pynvml` module with its API surface (names, tuples, exception classes):
NVML cannot run without an NVIDIA driver. test_gpu checks these names against the real pynvml.

The errors are the real pynvml's own exception classes, so they read as real ones do
(`str(NVMLError_DriverNotLoaded())` is "Driver Not Loaded", from pynvml's error table).
"""

from __future__ import annotations

import ctypes
import types

import pynvml
from conftest import require

ERROR_NAMES = (
    "LibraryNotFound",
    "DriverNotLoaded",
    "NotSupported",
    "NoPermission",
    "GpuIsLost",
    "LibRmVersionMismatch",
    "Unknown",
)
# What the real pynvml says for each, as `str(error)` (pynvml's NVMLError._errcode_to_string).
ERROR_TEXT = {name: str(getattr(pynvml, f"NVMLError_{name}")()) for name in ERROR_NAMES}


def fake_nvml(devices=(), driver="580.159.04", cuda=13000, init_error=None, device_error=None, init_blocks_until=None):
    """`init_blocks_until`: a threading.Event that nvmlInit waits for (a wedged driver)."""
    module = types.SimpleNamespace()
    for name in ERROR_NAMES:
        setattr(module, f"NVMLError_{name}", getattr(pynvml, f"NVMLError_{name}"))
    module.NVMLError = pynvml.NVMLError
    module.NVML_DEVICE_MIG_ENABLE = 1
    module.calls = []

    def init():
        module.calls.append("init")
        if init_blocks_until is not None:
            init_blocks_until.wait(60)
        if init_error:
            raise getattr(module, f"NVMLError_{init_error}")()

    def handle(index):
        if device_error and index == device_error[0]:
            raise getattr(module, f"NVMLError_{device_error[1]}")()
        return devices[index]

    def mig(h):
        if h.get("mig") is None:
            raise module.NVMLError_NotSupported()
        return [h["mig"], h["mig"]]

    module.nvmlInit = init
    module.nvmlShutdown = lambda: module.calls.append("shutdown")
    module.nvmlSystemGetDriverVersion = lambda: driver
    module.nvmlSystemGetCudaDriverVersion_v2 = lambda: cuda
    module.nvmlDeviceGetCount = lambda: len(devices)
    module.nvmlDeviceGetHandleByIndex = handle
    module.nvmlDeviceGetName = lambda h: h["name"]
    module.nvmlDeviceGetCudaComputeCapability = lambda h: h["cc"]
    module.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=h["mem"] * 1024 * 1024)
    module.nvmlDeviceGetMigMode = mig
    module.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(domain=0, bus=h.get("bus", 0x19), device=0)
    module.nvmlDeviceGetMaxMigDeviceCount = lambda h: 7
    module.nvmlDeviceGetMigDeviceHandleByIndex = lambda h, i: (
        i if i < h.get("instances", 0) else (_ for _ in ()).throw(module.NVMLError_NotSupported())
    )
    return module


H200 = {"name": "NVIDIA H200", "cc": (9, 0), "mem": 143771, "mig": 0}


def skip_where_the_nvidia_driver_is_installed() -> None:
    """These checks are about a machine without libnvidia-ml.so.1 (CI, this one): skipped elsewhere, and
    failed there too under PICKVARIANT_TESTS_STRICT=1, since the suite then did not check what it says."""
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return
    require(False, "this machine has an NVIDIA driver: the check needs one without libnvidia-ml.so.1")
