"""NVML cannot run on a machine without an NVIDIA driver, so these tests drive the query code
through a stand-in module with pynvml's API surface (names, tuples, exception classes)."""

from __future__ import annotations

import threading
import time

import pytest
from fakenvml import ERROR_TEXT, H200, fake_nvml, skip_where_the_nvidia_driver_is_installed

from pickvariant._base.versions import ComputeCapability
from pickvariant.machine.gpu import query_nvml, read_gpus, run_bounded


def test_devices_driver_and_cuda_version_are_read() -> None:
    module = fake_nvml([H200, {"name": b"NVIDIA A100-SXM4-80GB", "cc": (8, 0), "mem": 81920}])
    report = query_nvml(module)
    assert not report.inconclusive
    assert [(g.index, g.name, g.compute_capability, g.memory_mib) for g in report.gpus] == [
        (0, "NVIDIA H200", ComputeCapability(9, 0), 143771),
        (1, "NVIDIA A100-SXM4-80GB", ComputeCapability(8, 0), 81920),
    ]
    assert str(report.driver.version) == "580.159.04" and report.driver.cuda == "13.0"
    assert report.gpus[0].mig_enabled is False and report.gpus[1].mig_enabled is None
    assert module.calls == ["init", "shutdown"]


def test_mig_instances_are_counted_and_the_parent_capability_kept() -> None:
    report = query_nvml(fake_nvml([dict(H200, mig=1, instances=3)]))
    assert report.gpus[0].mig_enabled and report.gpus[0].mig_instances == 3
    assert report.gpus[0].compute_capability == ComputeCapability(9, 0)


@pytest.mark.parametrize("error", ["LibraryNotFound", "DriverNotLoaded"])
def test_no_library_or_driver_means_no_gpu_with_a_note(error) -> None:
    report = query_nvml(fake_nvml(init_error=error))
    assert report.gpus == () and not report.inconclusive
    assert report.notes[0] == f"no NVIDIA GPU: {ERROR_TEXT[error]}"


@pytest.mark.parametrize("error", ["NoPermission", "LibRmVersionMismatch"])
def test_failures_that_leave_gpus_possible_are_inconclusive(error) -> None:
    report = query_nvml(fake_nvml(init_error=error))
    assert report.inconclusive and report.notes[0] == f"NVML failed to start: {ERROR_TEXT[error]}"


def test_a_gpu_lost_mid_query_is_inconclusive_but_the_others_are_reported() -> None:
    report = query_nvml(fake_nvml([H200, H200], device_error=(1, "GpuIsLost")))
    assert report.inconclusive
    assert len(report.gpus) == 1 and "GPU 1" in report.notes[-1]


def test_a_hanging_nvml_is_bounded() -> None:
    release = threading.Event()
    report = run_bounded(lambda: release.wait(10), timeout_s=0.2)
    release.set()
    assert report.inconclusive and "did not answer within 0.2 s" in report.notes[0]


def test_an_unexpected_exception_in_the_query_is_reported_not_raised() -> None:
    def broken():
        raise RuntimeError("boom")

    report = run_bounded(broken, timeout_s=2)
    assert report.inconclusive and "RuntimeError: boom" in report.notes[0]


def test_the_stand_in_uses_only_names_the_real_pynvml_has() -> None:
    import pynvml

    stand_in = fake_nvml()
    assert [name for name in vars(stand_in) if name != "calls" and not hasattr(pynvml, name)] == []
    assert issubclass(pynvml.NVMLError_GpuIsLost, pynvml.NVMLError)


def test_without_the_driver_library_there_is_no_gpu_through_either_path() -> None:
    import pynvml

    skip_where_the_nvidia_driver_is_installed()
    quick = read_gpus()  # the dlopen check alone
    assert quick.gpus == () and not quick.inconclusive and "libnvidia-ml.so.1" in quick.notes[0]
    real = query_nvml(pynvml)  # the real pynvml, as when the library exists but cannot load
    assert real.gpus == () and not real.inconclusive and real.notes[0].startswith("no NVIDIA GPU")


def test_the_gpu_watch_reports_clocks_reasons_power_sharing_mig_and_ecc() -> None:
    import types

    from pickvariant.machine.gpuwatch import GpuWatch

    nvml = fake_nvml([H200])
    nvml.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4 | 0x1  # software power cap (+ idle, not a slowdown)
    nvml.nvmlDeviceGetClockInfo = lambda h, kind: 1410
    nvml.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1980
    nvml.nvmlDeviceGetPowerUsage = lambda h: 450_000
    nvml.nvmlDeviceGetEnforcedPowerLimit = lambda h: 450_000
    nvml.nvmlDeviceGetPowerManagementLimitConstraints = lambda h: (200_000, 700_000)
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=4242, usedGpuMemory=8 * 1024**3)]
    nvml.nvmlDeviceGetEccMode = lambda h: (1, 1)
    with GpuWatch(nvml, (0,), interval_s=0.01) as watch:
        time.sleep(0.05)
    (gpu,) = watch.summary()
    assert gpu["sm_clock_mhz_max_seen"] == 1410 and gpu["sm_clock_mhz_limit"] == 1980
    assert gpu["throttle_reasons_seen"] == ["the software power cap"]
    assert (gpu["power_w_max_seen"], gpu["power_limit_w"], gpu["power_limit_max_w"]) == (450.0, 450.0, 700.0)
    assert (
        gpu["other_processes"] == [{"pid": 4242, "used_mib": 8192}]
        and gpu["mig_enabled"] is False
        and gpu["ecc_enabled"] is True
    )
    from pickvariant.verify.judge import _health_lines

    lines = _health_lines(gpu)
    assert any("1410 MHz under load, of 1980 MHz" in line for line in lines) and any(
        "450 W limit (the board allows 700 W)" in line for line in lines
    )
    assert "shutdown" in nvml.calls
    # A driver that answers none of it leaves the facts out; nothing is raised.
    bare = fake_nvml([H200])
    with GpuWatch(bare, (0,), interval_s=0.01) as quiet:
        pass
    (unknown,) = quiet.summary()
    assert (
        unknown["sm_clock_mhz_limit"] is None
        and unknown["throttle_reasons_seen"] == []
        and unknown["other_processes"] == []
    )


def test_the_direct_nvml_binding_matches_pynvml_names_layouts_and_words() -> None:
    """machine/nvml.py calls the driver's library itself (pynvml costs detect tens of ms to import): each function it
    offers is pynvml's of that name, each structure has pynvml's layout, each error pynvml's class name and text."""
    import ctypes

    import pynvml

    from pickvariant.machine import nvml

    binding = nvml.Nvml()
    offered = [name for name in dir(binding) if name.startswith("nvml")]
    assert offered and [name for name in offered if not hasattr(pynvml, name)] == []
    for ours, theirs in ((nvml._PciInfo, pynvml.nvmlPciInfo_t), (nvml._Memory, pynvml.c_nvmlMemory_t)):
        assert ctypes.sizeof(ours) == ctypes.sizeof(theirs)
        assert [(f[0], getattr(ours, f[0]).offset) for f in ours._fields_] == [
            (f[0], getattr(theirs, f[0]).offset) for f in theirs._fields_
        ]
    for code, (name, _) in nvml._CODES.items():
        ours_error = getattr(binding, f"NVMLError_{name}")(code)
        assert isinstance(ours_error, binding.NVMLError) and hasattr(pynvml, f"NVMLError_{name}")
        assert str(ours_error) == str(pynvml.NVMLError(code))


def test_without_the_library_the_binding_says_what_pynvml_says() -> None:
    import ctypes.util

    import pynvml

    from pickvariant.machine.nvml import Nvml

    missing = Nvml("libnvidia-ml-not-here.so.1")
    with pytest.raises(missing.NVMLError_LibraryNotFound):
        missing.nvmlInit()
    # A library without the function asked for (a driver older than it) is FunctionNotFound, as in pynvml: libc is
    # a real shared library that has no NVML function at all.
    with pytest.raises(missing.NVMLError_FunctionNotFound):
        Nvml(ctypes.util.find_library("c") or "libc.so.6").nvmlInit()
    skip_where_the_nvidia_driver_is_installed()
    assert query_nvml(missing) == query_nvml(pynvml)  # the same note, word for word


def test_off_linux_detection_asks_nvml_through_pynvml(monkeypatch) -> None:
    """The direct binding knows only Linux's libnvidia-ml.so.1; on Windows pynvml finds nvml.dll where the driver puts
    it, so a Windows machine's GPUs are still read (a Linux-only binding there would report none)."""
    import sys

    import pynvml

    from pickvariant.machine import gpu
    from pickvariant.machine.nvml import Nvml

    assert isinstance(gpu.nvml_binding(), Nvml) == sys.platform.startswith("linux")
    monkeypatch.setattr(sys, "platform", "win32")
    assert gpu.nvml_binding() is pynvml
    monkeypatch.setattr(gpu, "nvml_library_loads", lambda: True)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # an install that lost it: said, never a traceback
    report = gpu.read_gpus()
    assert report.inconclusive and "nvidia-ml-py (the pynvml module) is not installed" in report.notes[0]


def test_gpus_read_in_the_background_are_waited_for_within_the_bound(monkeypatch) -> None:
    """start_reading returns at once; the answer is the query's, waited for within what is left of the bound."""
    from pickvariant.machine import gpu

    release = threading.Event()
    monkeypatch.setattr(gpu, "nvml_library_loads", lambda: True)
    monkeypatch.setattr(gpu, "nvml_binding", lambda: fake_nvml([H200], init_blocks_until=release))
    pending = gpu.start_reading(timeout_s=30)
    release.set()  # the query was under way while the caller did other work
    assert [g.name for g in pending().gpus] == ["NVIDIA H200"]
    monkeypatch.setattr(gpu, "nvml_binding", lambda: fake_nvml([H200], init_blocks_until=threading.Event()))
    report = gpu.start_reading(timeout_s=0.2)()  # a wedged driver: bounded, never a hang
    assert report.inconclusive and "did not answer within 0.2 s" in report.notes[0]


@pytest.mark.parametrize("source", [[], ["--source", "wheels"]])
def test_detect_starts_reading_the_gpus_before_it_loads_the_rest_and_keeps_no_reading_after(
    monkeypatch, capsys, source
) -> None:
    """The console script's detect starts NVML first (its work in C overlaps the imports and the catalog), takes that
    reading for its answer, and leaves none behind for a later call; a detect that states its GPUs starts none. The
    same for every source: the wheels' answer once read NVML a second time, after its catalog, leaving the early
    reading unused."""
    import json

    from conftest import cpuinfo_path

    from pickvariant.cli import entry
    from pickvariant.machine import gpu

    started = []
    monkeypatch.setattr(gpu, "nvml_library_loads", lambda: True)
    monkeypatch.setattr(gpu, "nvml_binding", lambda: started.append(1) or fake_nvml([H200], driver="580.95.05"))
    haswell = str(cpuinfo_path("linux-rhel7-haswell"))
    assert entry.main(["detect", "--format", "json", "--cpuinfo", haswell, *source]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["hardware"]["gpus"][0]["name"] == "NVIDIA H200" and started == [1]
    assert gpu._EARLY == []
    assert entry.main(["detect", "--format", "json", "--cpuinfo", haswell, "--no-gpu", *source]) == 0
    assert started == [1] and gpu._EARLY == []


def _through_the_binding(devices, **library) -> tuple[object, object]:
    from nvml_library import stand_in_library

    from pickvariant.machine.nvml import Nvml

    binding = Nvml(load=stand_in_library(devices, **library))
    return binding, query_nvml(binding)


def test_the_binding_reads_what_the_library_answers_through_nvmls_signatures() -> None:
    """The binding against a library with nvml.h's C signatures (tests/nvml_library.py): every value as the
    library wrote it, so that swapped pointers (9.0 read as 0.9), a short buffer (error 7) or a wrong layout fail."""
    gpus = [dict(H200, bus=0x19), {"name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "mem": 81920, "mig": 1,
                                   "instances": 3, "bus": 0xA3}]  # fmt: skip
    _, report = _through_the_binding(gpus, driver="580.159.04", cuda=13000)
    assert not report.inconclusive and report.notes == ()
    assert str(report.driver.version) == "580.159.04" and report.driver.cuda == "13.0"
    assert [(g.index, g.name, g.compute_capability, g.memory_mib, g.pci) for g in report.gpus] == [
        (0, "NVIDIA H200", ComputeCapability(9, 0), 143771, "0000:19:00"),
        (1, "NVIDIA A100-SXM4-80GB", ComputeCapability(8, 0), 81920, "0000:a3:00"),
    ]
    assert [(g.mig_enabled, g.mig_instances) for g in report.gpus] == [(False, None), (True, 3)]
    # Through the binding and through the pynvml-shaped stand-in: the same report for the same machine.
    assert report == query_nvml(fake_nvml([dict(H200, bus=0x19), dict(gpus[1], name=gpus[1]["name"])]))


def test_each_nvml_return_code_is_raised_as_its_own_class_with_pynvmls_words() -> None:
    import pynvml

    binding, report = _through_the_binding([H200, H200], errors={("nvmlDeviceGetHandleByIndex_v2", 1): 15})
    assert report.inconclusive and len(report.gpus) == 1 and "GPU 1" in report.notes[-1]
    binding.nvmlInit()
    with pytest.raises(binding.NVMLError) as raised:
        binding.nvmlDeviceGetHandleByIndex(1)
    assert type(raised.value).__name__ == "NVMLError_GpuIsLost" and type(raised.value) is not binding.NVMLError
    assert str(raised.value) == str(pynvml.NVMLError_GpuIsLost())
    binding.nvmlShutdown()
    with pytest.raises(binding.NVMLError_Uninitialized):  # a call after shutdown, as the library answers it
        binding.nvmlDeviceGetCount()


@pytest.mark.parametrize(("code", "inconclusive"), [(9, False), (4, True), (18, True)])
def test_a_library_that_fails_to_start_reads_as_through_pynvml(code, inconclusive) -> None:
    _, report = _through_the_binding([H200], errors={("nvmlInitWithFlags", None): code})
    assert report.gpus == () and report.inconclusive is inconclusive
    name = {9: "DriverNotLoaded", 4: "NoPermission", 18: "LibRmVersionMismatch"}[code]
    assert report.notes == query_nvml(fake_nvml(init_error=name)).notes
