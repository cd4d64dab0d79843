"""GPU facts through NVML (the driver's library, called directly: machine/nvml.py).

No NVML library, no driver, no devices: that is "no GPU" with a note, not an error.
A failure that leaves open whether GPUs are present (a hang, a driver/library
mismatch, a lost GPU) is reported as `inconclusive`, so that no caller mistakes it
for a machine without GPUs.
"""

from __future__ import annotations

import functools
import sys

from pickvariant._base import settings
from pickvariant._base.records import keyword_record, record
from pickvariant._base.versions import (
    ComputeCapability,
    DriverVersion,
    decode_cuda_driver_version,
    parse_driver_version,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from pickvariant._base.request import Request

    # pynvml's module or machine.nvml.Nvml: the same names, checked against each other by tests/test_gpu.py
    NvmlSurface = Any

NVML_TIMEOUT_S = 5.0
MIB = 1024 * 1024


@keyword_record
class GpuFacts:
    index: int
    name: str
    compute_capability: ComputeCapability
    memory_mib: int | None = None
    mig_enabled: bool | None = None
    mig_instances: int | None = None
    # PCI domain:bus:device ("0000:19:00"), which CUDA reports too: how verify matches a CUDA
    # ordinal to this index. Not part of the JSON.
    pci: str | None = None


@record
class DriverFacts:
    version: DriverVersion | None
    cuda: str | None


@keyword_record
class GpuReport:
    gpus: tuple[GpuFacts, ...]
    driver: DriverFacts | None
    notes: tuple[str, ...] = ()
    inconclusive: bool = False
    source: str = "NVML"


def cuda_visible_count(value: str, gpu_count: int) -> int:
    """How many of `gpu_count` GPUs a CUDA program sees under CUDA_VISIBLE_DEVICES=`value`.

    CUDA reads the comma-separated list up to the first entry that names no device
    (so "-1" or "" hides every GPU); UUID entries (GPU-..., MIG-...) count as one each.
    NVML ignores the variable, which is why the two can disagree.
    """
    seen: set[str] = set()
    for entry in (part.strip() for part in value.split(",")):
        if entry.isdigit() and int(entry) < gpu_count:
            seen.add(str(int(entry)))
        elif entry.startswith(("GPU-", "MIG-")) and len(entry) > 4:
            seen.add(entry)
        else:
            break
    return min(len(seen), gpu_count)


def _text(value: str | bytes) -> str:
    # Older bindings return bytes, newer ones str.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def query_nvml(nvml: NvmlSurface) -> GpuReport:
    """Every device's facts through an NVML surface initialised on demand (the binding, pynvml, or a test double)."""
    error_type: type[BaseException] = nvml.NVMLError
    try:
        nvml.nvmlInit()
    except error_type as error:
        if isinstance(error, (nvml.NVMLError_LibraryNotFound, nvml.NVMLError_DriverNotLoaded)):
            return GpuReport(gpus=(), driver=None, notes=(f"no NVIDIA GPU: {_describe(error)}",))
        return GpuReport(gpus=(), driver=None, notes=(f"NVML failed to start: {_describe(error)}",), inconclusive=True)
    try:
        return _query_devices(nvml, error_type)
    finally:
        try:  # noqa: SIM105  # not contextlib.suppress: importing contextlib costs detect 0.6 ms
            nvml.nvmlShutdown()
        except error_type:
            pass


def _query_devices(nvml: NvmlSurface, error_type: type[BaseException]) -> GpuReport:
    notes: list[str] = []
    try:
        driver_text = _text(nvml.nvmlSystemGetDriverVersion())
        count = nvml.nvmlDeviceGetCount()
    except error_type as error:
        return GpuReport(
            gpus=(), driver=None, notes=(f"NVML could not list devices: {_describe(error)}",), inconclusive=True
        )
    driver = DriverFacts(parse_driver_version(driver_text), _cuda_version(nvml, error_type, notes))
    gpus: list[GpuFacts] = []
    inconclusive = False
    for index in range(count):
        try:
            gpus.append(_device(nvml, error_type, index))
        except error_type as error:
            inconclusive = True
            notes.append(f"GPU {index} could not be queried: {_describe(error)}")
    if count == 0:
        notes.append("the NVIDIA driver is loaded but reports no GPU")
    return GpuReport(gpus=tuple(gpus), driver=driver, notes=tuple(notes), inconclusive=inconclusive)


def _cuda_version(nvml: NvmlSurface, error_type: type[BaseException], notes: list[str]) -> str | None:
    # _v2 is what cuDriverGetVersion() reports; v1 may return "a known supported version".
    for getter in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        function = getattr(nvml, getter, None)
        if function is None:
            continue
        try:
            return decode_cuda_driver_version(int(function()))
        except error_type as error:
            notes.append(f"{getter}: {_describe(error)}")
    return None


def _device(nvml: NvmlSurface, error_type: type[BaseException], index: int) -> GpuFacts:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    name = _text(nvml.nvmlDeviceGetName(handle))
    try:
        memory_mib: int | None = int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // MIB
    except error_type:
        memory_mib = None
    mig_enabled: bool | None
    mig_instances: int | None = None
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
        mig_enabled = current == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)
    except error_type:
        mig_enabled = None  # NotSupported on GPUs without MIG
    if mig_enabled:
        try:
            mig_instances = int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))
            mig_instances = sum(1 for slot in range(mig_instances) if _mig_present(nvml, error_type, handle, slot))
        except error_type:
            mig_instances = None
    try:
        info = nvml.nvmlDeviceGetPciInfo(handle)
        pci: str | None = f"{int(info.domain):04x}:{int(info.bus):02x}:{int(info.device):02x}"
    except error_type:
        pci = None
    return GpuFacts(
        index=index,
        name=name,
        compute_capability=ComputeCapability(int(major), int(minor)),
        memory_mib=memory_mib,
        mig_enabled=mig_enabled,
        mig_instances=mig_instances,
        pci=pci,
    )


def _mig_present(nvml: NvmlSurface, error_type: type[BaseException], handle: Any, slot: int) -> bool:
    try:
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        return True
    except error_type:
        return False


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


@functools.cache
def nvml_library_loads() -> bool:
    """Cheap check before a worker starts to ask NVML: the same dlopen NVML's nvmlInit does.

    Answered once per process, as CUDA answers cuInit: a driver installed later needs a new process."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def nvml_binding() -> Any:
    """What detection asks NVML through: on Linux the driver's libnvidia-ml.so.1 called directly (machine/nvml.py),
    pynvml's own module being a tenfold import; elsewhere pynvml, which knows where Windows keeps nvml.dll. Tests put
    a stand-in with pynvml's surface here (tests/fakenvml.py)."""
    if not sys.platform.startswith("linux"):
        import pynvml

        return pynvml
    from pickvariant.machine.nvml import Nvml

    return Nvml()


def start_reading(timeout_s: float | None = None) -> Callable[[], GpuReport]:
    """Start reading this machine's GPUs now, in a worker, and return what waits for the answer (within `timeout_s`
    of the start, so that a wedged driver cannot hang the tool). NVML's library load, init and queries run in C with
    the interpreter free: a caller that starts this first and reads the CPU and the catalog meanwhile hides them."""
    import time

    timeout_s = NVML_TIMEOUT_S if timeout_s is None else timeout_s
    if not nvml_library_loads():
        report = GpuReport(
            gpus=(),
            driver=None,
            notes=("no NVIDIA GPU: libnvidia-ml.so.1 (the NVIDIA driver's NVML library) is not installed",),
        )
        return lambda: report
    try:
        binding = nvml_binding()
    except ImportError:  # off Linux pynvml is asked, and a broken install may lack it
        missing = GpuReport(
            gpus=(),
            driver=None,
            notes=("GPUs not queried: nvidia-ml-py (the pynvml module) is not installed",),
            inconclusive=True,
        )
        return lambda: missing
    deadline = time.monotonic() + timeout_s
    wait = start_bounded(lambda: query_nvml(binding), timeout_s)
    return lambda: wait(max(deadline - time.monotonic(), 0.0))


# The reading a front end started before it loaded anything else (cli/entry.py: `detect` with no GPU stated), taken by
# the first caller that needs this machine's GPUs; NVML's answer is the process's, as nvml_library_loads is.
_EARLY: list[Callable[[], GpuReport]] = []


def start_early() -> None:
    """Start reading this machine's GPUs now, before the program's own modules load, for take_reading to collect."""
    if not _EARLY:
        _EARLY.append(start_reading())


def take_reading() -> Callable[[], GpuReport]:
    """The reading started early, else one started now."""
    return _EARLY.pop() if _EARLY else start_reading()


def pending_reading(request: Request, env: Mapping[str, str]) -> Callable[[], GpuReport] | None:
    """This machine's GPUs, being read, where the request leaves them to detection (none stated); else None."""
    if request.gpus or request.no_gpu or settings.setting(env, settings.GPU) is not None:
        return None
    return take_reading()


def discard_early() -> None:
    _EARLY.clear()


def read_gpus(timeout_s: float | None = None) -> GpuReport:
    """This machine's GPUs, read now (start_reading, waited for)."""
    return start_reading(timeout_s)()


def run_bounded(query: Any, timeout_s: float) -> GpuReport:
    return start_bounded(query, timeout_s)(timeout_s)


def start_bounded(query: Any, timeout_s: float) -> Callable[[float], GpuReport]:
    """Run `query` in a worker now; what it returns waits for it at most the seconds it is given."""
    import threading  # only where an NVIDIA driver is installed; detect elsewhere never starts a thread

    result: list[GpuReport] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(query())
        except Exception as error:  # reported below as an inconclusive query, never a traceback
            failure.append(error)

    worker = threading.Thread(target=work, name="pickvariant-nvml", daemon=True)
    worker.start()

    def wait(seconds: float) -> GpuReport:
        worker.join(seconds)
        if worker.is_alive():
            return GpuReport(
                gpus=(),
                driver=None,
                notes=(f"NVML did not answer within {timeout_s:g} s (a hung driver?)",),
                inconclusive=True,
            )
        if failure:
            return GpuReport(
                gpus=(),
                driver=None,
                notes=(f"NVML query failed: {type(failure[0]).__name__}: {failure[0]}",),
                inconclusive=True,
            )
        return result[0]

    return wait
