"""The dozen NVML calls detection makes, straight from the driver's libnvidia-ml.so.1 through ctypes.

pynvml (nvidia-ml-py's one module, 8,000 lines of structures and wrappers) costs detect 19 ms to import where its
bytecode is cached and 90 ms where it is not (read-only site-packages in containers), more than NVML's own
answers (benchmarks/results/2026-11-25-h100-detect-speed). Detection needs twelve functions of NVML's C API
(nvml.h, a stable ABI: every function named here keeps its signature across driver releases), so it calls them
itself and leaves the rest of pynvml unloaded; pynvml stays the dependency for verify's GpuWatch (gpuwatch.py) and
is the reference this module is held to (tests/test_gpu.py: names, error classes and text). This object has the
module-like surface of pynvml that gpu.query_nvml uses, so that one query reads either.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

# nvml.h's return codes detection tells apart, with pynvml's NVMLError_* class names and its text for each
# (nvidia-ml-py 13.615.71, NVMLError._errcode_to_string), so that a note reads the same whichever answered.
_CODES = {
    1: ("Uninitialized", "Uninitialized"),
    2: ("InvalidArgument", "Invalid Argument"),
    3: ("NotSupported", "Not Supported"),
    4: ("NoPermission", "Insufficient Permissions"),
    6: ("NotFound", "Not Found"),
    9: ("DriverNotLoaded", "Driver Not Loaded"),
    12: ("LibraryNotFound", "NVML Shared Library Not Found"),
    13: ("FunctionNotFound", "Function Not Found"),
    15: ("GpuIsLost", "GPU is lost"),
    18: ("LibRmVersionMismatch", "RM has detected an NVML/RM version mismatch."),
    999: ("Unknown", "Unknown Error"),
}
NVML_DEVICE_MIG_ENABLE = 1
_DRIVER_VERSION_BUFFER = 80  # NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
_NAME_BUFFER = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE


class NVMLError(Exception):
    """An NVML return code other than success, worded as pynvml words it."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        known = _CODES.get(self.value)
        return known[1] if known else f"NVML Error with code {self.value}"


_CLASSES = {code: type(f"NVMLError_{name}", (NVMLError,), {}) for code, (name, _) in _CODES.items()}


class _Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = (("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong))


class _PciInfo(ctypes.Structure):  # nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3)
    _fields_ = (
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    )


class Nvml:
    """libnvidia-ml.so.1, loaded on nvmlInit; each method returns what pynvml's function of the same name returns."""

    NVMLError = NVMLError
    NVML_DEVICE_MIG_ENABLE = NVML_DEVICE_MIG_ENABLE

    def __init__(self, path: str = "libnvidia-ml.so.1", load: Callable[[str], object] = ctypes.CDLL) -> None:
        self._path = path
        self._load = load  # tests give a stand-in library of ctypes functions with nvml.h's signatures
        self._library: object | None = None

    def _call(self, name: str, *args: object) -> None:
        if self._library is None:
            raise _CLASSES[1](1)
        try:
            function = getattr(self._library, name)
        except AttributeError:  # a driver older than the function: pynvml's FunctionNotFound, not a crash
            raise _CLASSES[13](13) from None
        result = function(*args)
        if result != 0:
            raise _CLASSES.get(result, NVMLError)(result)

    def nvmlInit(self) -> None:
        try:
            self._library = self._load(self._path)
        except OSError:
            raise _CLASSES[12](12) from None
        self._call("nvmlInitWithFlags", ctypes.c_uint(0))

    def nvmlShutdown(self) -> None:
        self._call("nvmlShutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        buffer = ctypes.create_string_buffer(_DRIVER_VERSION_BUFFER)
        self._call("nvmlSystemGetDriverVersion", buffer, ctypes.c_uint(_DRIVER_VERSION_BUFFER))
        return buffer.value.decode("utf-8", "replace")

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        version = ctypes.c_int()
        self._call("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(version))
        return version.value

    def nvmlDeviceGetCount(self) -> int:
        count = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(count))
        return count.value

    def nvmlDeviceGetHandleByIndex(self, index: int) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
        return handle

    def nvmlDeviceGetName(self, handle: ctypes.c_void_p) -> str:
        buffer = ctypes.create_string_buffer(_NAME_BUFFER)
        self._call("nvmlDeviceGetName", handle, buffer, ctypes.c_uint(_NAME_BUFFER))
        return buffer.value.decode("utf-8", "replace")

    def nvmlDeviceGetCudaComputeCapability(self, handle: ctypes.c_void_p) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call("nvmlDeviceGetCudaComputeCapability", handle, ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value

    def nvmlDeviceGetMemoryInfo(self, handle: ctypes.c_void_p) -> _Memory:
        memory = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", handle, ctypes.byref(memory))
        return memory

    def nvmlDeviceGetMigMode(self, handle: ctypes.c_void_p) -> list[int]:
        current, pending = ctypes.c_uint(), ctypes.c_uint()
        self._call("nvmlDeviceGetMigMode", handle, ctypes.byref(current), ctypes.byref(pending))
        return [current.value, pending.value]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: ctypes.c_void_p) -> int:
        count = ctypes.c_uint()
        self._call("nvmlDeviceGetMaxMigDeviceCount", handle, ctypes.byref(count))
        return count.value

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: ctypes.c_void_p, index: int) -> ctypes.c_void_p:
        mig = ctypes.c_void_p()
        self._call("nvmlDeviceGetMigDeviceHandleByIndex", handle, ctypes.c_uint(index), ctypes.byref(mig))
        return mig

    def nvmlDeviceGetPciInfo(self, handle: ctypes.c_void_p) -> _PciInfo:
        info = _PciInfo()
        self._call("nvmlDeviceGetPciInfo_v3", handle, ctypes.byref(info))
        return info


for _class in _CLASSES.values():  # Nvml().NVMLError_GpuIsLost, as pynvml.NVMLError_GpuIsLost
    setattr(Nvml, _class.__name__, _class)
