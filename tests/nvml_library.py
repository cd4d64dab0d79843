"""A stand-in for the driver's libnvidia-ml.so.1, for machine/nvml.py's binding: NVML cannot run without an NVIDIA
driver, so its functions are ctypes callbacks with the C signatures nvml.h declares (NVML API reference, "Device
Queries" and "System Queries"), answering as the reference says they do:

- a return code, never an exception: 0 success, 1 uninitialized (a call before nvmlInitWithFlags), 2 invalid
  argument (an index past the count, a null pointer), 7 insufficient size (a string buffer shorter than the text
  and its NUL);
- strings copied into the caller's buffer, numbers written through the caller's pointers in nvml.h's order
  (`major` before `minor`), structures written with pynvml's own layouts (`c_nvmlMemory_t`, `nvmlPciInfo_t`), the
  reference the binding is held to, never with the binding's.

So a binding that swaps two pointers, gives a short buffer or reads a structure with a wrong layout reads wrong
values here, as it would from the real library.
"""

from __future__ import annotations

import ctypes
import types
from ctypes import POINTER, c_char, c_int, c_uint, c_void_p

import pynvml

SUCCESS, UNINITIALIZED, INVALID_ARGUMENT, INSUFFICIENT_SIZE = 0, 1, 2, 7
_HANDLE_BASE = 0x1000  # device handles are opaque pointers; MIG handles start further on
_MIG_BASE = 0x8000
_nvml = ctypes.CFUNCTYPE


def stand_in_library(devices, driver="580.159.04", cuda=13000, errors=None):
    """A loader for Nvml(load=…): each device a dict (name, cc, mem MiB, bus, mig mode or None, instances);
    `errors` maps (function name, device index or None) to the return code that call gives."""
    errors = errors or {}
    state = {"init": False}
    library = types.SimpleNamespace()

    def failing(name, index=None):
        if not state["init"] and name != "nvmlInitWithFlags":
            return UNINITIALIZED
        return errors.get((name, index), SUCCESS)

    def device(handle):
        index = (handle or 0) - _HANDLE_BASE
        return index if 0 <= index < len(devices) else None

    def text_into(text, buffer, length):
        data = text.encode()
        if not buffer or length < len(data) + 1:
            return INSUFFICIENT_SIZE
        ctypes.memmove(buffer, data + b"\0", len(data) + 1)
        return SUCCESS

    def function(name, *argtypes):
        def decorate(body):
            setattr(library, name, _nvml(c_int, *argtypes)(body))
            return body

        return decorate

    @function("nvmlInitWithFlags", c_uint)
    def _init(flags):
        code = failing("nvmlInitWithFlags")
        state["init"] = code == SUCCESS
        return code

    @function("nvmlShutdown")
    def _shutdown():
        code = failing("nvmlShutdown")
        state["init"] = False
        return code

    @function("nvmlSystemGetDriverVersion", POINTER(c_char), c_uint)
    def _driver(buffer, length):
        return failing("nvmlSystemGetDriverVersion") or text_into(driver, buffer, length)

    @function("nvmlSystemGetCudaDriverVersion_v2", POINTER(c_int))
    def _cuda(out):
        if code := failing("nvmlSystemGetCudaDriverVersion_v2"):
            return code
        out[0] = cuda
        return SUCCESS

    @function("nvmlDeviceGetCount_v2", POINTER(c_uint))
    def _count(out):
        if code := failing("nvmlDeviceGetCount_v2"):
            return code
        out[0] = len(devices)
        return SUCCESS

    @function("nvmlDeviceGetHandleByIndex_v2", c_uint, POINTER(c_void_p))
    def _handle(index, out):
        if code := failing("nvmlDeviceGetHandleByIndex_v2", index):
            return code
        if index >= len(devices) or not out:
            return INVALID_ARGUMENT
        out[0] = _HANDLE_BASE + index
        return SUCCESS

    def on_device(name, *argtypes):
        """A device query: the handle checked, the device's configured error returned, then the body."""

        def decorate(body):
            def call(handle, *args):
                index = device(handle)
                if index is None:
                    return failing(name) or INVALID_ARGUMENT
                return failing(name, index) or body(devices[index], *args)

            setattr(library, name, _nvml(c_int, c_void_p, *argtypes)(call))
            return body

        return decorate

    @on_device("nvmlDeviceGetName", POINTER(c_char), c_uint)
    def _name(gpu, buffer, length):
        return text_into(gpu["name"], buffer, length)

    @on_device("nvmlDeviceGetCudaComputeCapability", POINTER(c_int), POINTER(c_int))
    def _capability(gpu, major, minor):
        major[0], minor[0] = gpu["cc"]
        return SUCCESS

    # A structure pointer is an address to C: taken as one, and written with pynvml's layout of the structure.
    @on_device("nvmlDeviceGetMemoryInfo", c_void_p)
    def _memory(gpu, address):
        total = gpu["mem"] * 1024 * 1024
        ctypes.cast(address, POINTER(pynvml.c_nvmlMemory_t))[0] = pynvml.c_nvmlMemory_t(
            total=total, free=total // 2, used=total - total // 2
        )
        return SUCCESS

    @on_device("nvmlDeviceGetMigMode", POINTER(c_uint), POINTER(c_uint))
    def _mig_mode(gpu, current, pending):
        if gpu.get("mig") is None:
            return 3  # NVML_ERROR_NOT_SUPPORTED: a GPU without MIG
        current[0] = pending[0] = gpu["mig"]
        return SUCCESS

    @on_device("nvmlDeviceGetMaxMigDeviceCount", POINTER(c_uint))
    def _mig_count(gpu, out):
        out[0] = 7
        return SUCCESS

    @on_device("nvmlDeviceGetMigDeviceHandleByIndex", c_uint, POINTER(c_void_p))
    def _mig_handle(gpu, slot, out):
        if slot >= gpu.get("instances", 0):
            return 6  # NVML_ERROR_NOT_FOUND: no instance in that slot
        out[0] = _MIG_BASE + slot
        return SUCCESS

    @on_device("nvmlDeviceGetPciInfo_v3", c_void_p)
    def _pci(gpu, address):
        bus = gpu.get("bus", 0x19)
        info = pynvml.nvmlPciInfo_t()
        info.domain, info.bus, info.device = 0, bus, 0
        info.busId = f"00000000:{bus:02X}:00.0".encode()
        ctypes.cast(address, POINTER(pynvml.nvmlPciInfo_t))[0] = info
        return SUCCESS

    return lambda path: library
