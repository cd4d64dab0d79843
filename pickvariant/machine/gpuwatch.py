"""What NVML says of a GPU while something runs on it: clocks, clock-event reasons, power, and
what holds still (power limits, other processes, MIG, ECC). verify and report use it to explain
a slow result; detection (gpu.py) never does.
"""

from __future__ import annotations

import contextlib
import threading
from types import ModuleType
from typing import Any

from pickvariant.machine import gpu

# nvmlClocksEventReasons bits (nvml.h; pynvml's nvmlClocksThrottleReason* constants), in words.
# GpuIdle (0x1) is left out: an idle GPU between kernels is no slowdown.
CLOCK_EVENT_REASONS = (
    (0x2, "an application clock setting"),
    (0x4, "the software power cap"),
    (0x8, "a hardware slowdown (temperature or power brake)"),
    (0x10, "sync boost"),
    (0x20, "software thermal slowdown"),
    (0x40, "hardware thermal slowdown"),
    (0x80, "the hardware power brake"),
    (0x100, "a display clock setting"),
)
NVML_CLOCK_SM = 1  # nvmlClockType_t NVML_CLOCK_SM
WATCH_INTERVAL_S = 0.2


class GpuWatch:
    """What NVML reports of each GPU while something runs on it (clocks, clock-event reasons, power),
    then what holds still (maximum clock, power limits, other processes, MIG, ECC).

    Every query is optional: a GPU or driver that does not answer one leaves that fact out."""

    def __init__(self, nvml: ModuleType | None, indices: tuple[int, ...], interval_s: float = WATCH_INTERVAL_S) -> None:
        self._nvml = nvml
        self._indices = indices
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._seen: dict[int, dict[str, Any]] = {
            index: {"reasons": 0, "sm_max": None, "power_max": None} for index in indices
        }
        self._thread: threading.Thread | None = None
        self._started = False

    @classmethod
    def for_facts(cls, facts: Any) -> GpuWatch:
        """A watch of the GPUs NVML detected; one that watches nothing for stated or absent GPUs."""
        indices = tuple(device.index for device in facts.gpus)
        # Stated GPUs (--gpu, PICKVARIANT_GPU) are not this machine's: nothing to watch.
        if not indices or not str(facts.sources.get("gpus", "")).startswith("detected"):
            return cls(None, ())
        if not gpu.nvml_library_loads():
            return cls(None, ())
        try:
            import pynvml
        except ImportError:
            return cls(None, ())
        return cls(pynvml, indices)

    def __enter__(self) -> GpuWatch:
        if self._nvml is not None:
            try:
                self._nvml.nvmlInit()
                self._started = True
            except self._nvml.NVMLError:
                return self
            self._thread = threading.Thread(
                target=self._sample_until_stopped, name="pickvariant-gpu-watch", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(gpu.NVML_TIMEOUT_S)

    def _call(self, name: str, *args: Any) -> Any:
        function = getattr(self._nvml, name, None)
        if function is None:
            return None
        try:
            return function(*args)
        except self._nvml.NVMLError:  # type: ignore[union-attr]  # getattr above found a function: a module is there
            return None

    def _sample_until_stopped(self) -> None:
        handles = {index: self._call("nvmlDeviceGetHandleByIndex", index) for index in self._indices}
        while True:
            for index, handle in handles.items():
                if handle is None:
                    continue
                seen = self._seen[index]
                reasons = self._call("nvmlDeviceGetCurrentClocksEventReasons", handle)
                if reasons is None:
                    reasons = self._call("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
                seen["reasons"] |= int(reasons or 0)
                clock = self._call("nvmlDeviceGetClockInfo", handle, NVML_CLOCK_SM)
                if clock is not None:
                    seen["sm_max"] = max(int(clock), seen["sm_max"] or 0)
                power = self._call("nvmlDeviceGetPowerUsage", handle)
                if power is not None:
                    seen["power_max"] = max(int(power) / 1000.0, seen["power_max"] or 0.0)
            if self._stop.wait(self._interval_s):
                return

    def summary(self) -> tuple[dict[str, Any], ...]:
        """One dict per watched GPU; empty when nothing was watched. Ends the NVML session."""
        if not self._started:
            return ()
        gpus = []
        for index in self._indices:
            handle = self._call("nvmlDeviceGetHandleByIndex", index)
            if handle is None:
                continue
            seen = self._seen[index]
            limits = self._call("nvmlDeviceGetPowerManagementLimitConstraints", handle)
            enforced = self._call("nvmlDeviceGetEnforcedPowerLimit", handle)
            mig = self._call("nvmlDeviceGetMigMode", handle)
            ecc = self._call("nvmlDeviceGetEccMode", handle)
            processes = self._call("nvmlDeviceGetComputeRunningProcesses", handle) or []
            gpus.append(
                {
                    "index": index,
                    "sm_clock_mhz_max_seen": seen["sm_max"],
                    "sm_clock_mhz_limit": self._call("nvmlDeviceGetMaxClockInfo", handle, NVML_CLOCK_SM),
                    "throttle_reasons_seen": [words for bit, words in CLOCK_EVENT_REASONS if seen["reasons"] & bit],
                    "power_w_max_seen": seen["power_max"],
                    "power_limit_w": enforced / 1000.0 if enforced is not None else None,
                    "power_limit_max_w": limits[1] / 1000.0 if limits else None,
                    "other_processes": [
                        {"pid": int(p.pid), "used_mib": int(p.usedGpuMemory or 0) // gpu.MIB} for p in processes
                    ],
                    "mig_enabled": None if mig is None else mig[0] == getattr(self._nvml, "NVML_DEVICE_MIG_ENABLE", 1),
                    "ecc_enabled": None if ecc is None else bool(ecc[0]),
                }
            )
        # Only reached after nvmlInit succeeded on the module: it is not None here.
        with contextlib.suppress(self._nvml.NVMLError):  # type: ignore[union-attr]
            self._nvml.nvmlShutdown()  # type: ignore[union-attr]
        self._started = False
        return tuple(gpus)
