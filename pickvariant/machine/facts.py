"""Host facts: one frozen record of what this (or a described) machine is.

Each fact comes from the first of: a command-line flag, an environment variable
(PICKVARIANT_CPUINFO, PICKVARIANT_GPU, PICKVARIANT_DRIVER, PICKVARIANT_DRIVER_CUDA), detection. The record
says which source won, so that a support ticket shows it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.files import joined
from pickvariant._base.records import keyword_record
from pickvariant._base.request import STATED_PLATFORMS, Request
from pickvariant._base.versions import (
    DriverVersion,
    parse_compute_capability,
    parse_cuda_version,
    parse_driver_version,
    version_key,
)
from pickvariant.machine.cpu import CpuFacts, detect_cpu, read_cpuinfo_dump
from pickvariant.machine.gpu import DriverFacts, GpuFacts, GpuReport, read_gpus
from pickvariant.sources.hardware import Hardware

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any, Literal

    from pickvariant.machine.othergpu import OtherGpu

    # The facts whose source is recorded (closed); "all": every fact from one detect line (plan).
    FactName = Literal["cpu", "gpus", "driver", "all"]

ENV_CPUINFO = settings.CPUINFO
ENV_GPU = settings.GPU
ENV_DRIVER = settings.DRIVER
ENV_DRIVER_CUDA = settings.DRIVER_CUDA
# NVML lists every GPU whatever this says; CUDA programs (PyTorch) see only these.
ENV_CUDA_VISIBLE = "CUDA_VISIBLE_DEVICES"
NO_GPU_WORDS = frozenset({"none", "no", "0", "cpu"})


@keyword_record
class HostFacts:
    os: str
    arch: str
    cpu: CpuFacts
    gpus: tuple[GpuFacts, ...]
    driver: DriverFacts | None
    driver_assumed: bool
    gpu_inconclusive: bool
    # Which option, variable or detection each of cpu, gpus and driver came from.
    sources: Mapping[FactName, str] = MappingProxyType({})
    notes: tuple[str, ...] = ()
    # The raw value, where set and the GPUs were detected (a stated machine has no environment).
    cuda_visible_devices: str | None = None
    # AMD and Intel GPUs (machine/othergpu.py): facts only, for which no build is chosen yet.
    other_gpus: tuple[OtherGpu, ...] = ()

    @property
    def mixes_machines(self) -> bool:
        """A stated CPU beside this machine's detected GPUs: its first note says so, and views show it first."""
        return _mixes_machines(self.sources)


def _mixes_machines(sources: Mapping[FactName, str]) -> bool:
    return sources.get("gpus", "").startswith("detected") and not sources.get("cpu", "").startswith("detected")


NOT_STATED = "not stated"


def states_a_machine(request: Request, env: Mapping[str, str]) -> bool:
    """Does the request (or a PICKVARIANT_* variable) describe a machine's CPU, GPUs or driver?"""
    stated = (
        request.cpuinfo,
        request.platform,
        request.gpus or None,
        request.no_gpu or None,
        request.driver,
        request.driver_cuda,
    )
    return any(value is not None for value in stated) or any(
        settings.setting(env, variable) is not None for variable in (ENV_CPUINFO, ENV_GPU, ENV_DRIVER, ENV_DRIVER_CUDA)
    )


def gather_facts(
    catalog: Hardware,
    request: Request = Request(),
    env: Mapping[str, str] | None = None,
    detect_cpu_fn: Callable[[], CpuFacts] = detect_cpu,
    read_gpus_fn: Callable[[], GpuReport] = read_gpus,
    detect_unstated: bool = True,
    platform_allowed: bool = False,
) -> HostFacts:
    """The facts the request and PICKVARIANT_* state, the rest detected on this machine; with
    detect_unstated False (a machine described for a report) nothing is detected: GPUs not stated are
    unknown (inconclusive), a CPU not stated is bad input, and no driver is assumed."""
    env = os.environ if env is None else env
    if request.platform is not None and not platform_allowed:
        from pickvariant.sources import registry  # only to name, in the refusal, every source that takes it

        takers = " or ".join(s.flag for s in map(registry.named, registry.names()) if "--platform" in s.options)
        raise BadInput(
            f"--platform {request.platform}: only with {takers} (a recipe is chosen by the CPU's instruction set: "
            "give the machine's --cpuinfo)"
        )
    sources: dict[FactName, str] = {}
    notes: list[str] = []
    cpu = _platform(request, _cpu(catalog, request, env, detect_cpu_fn, detect_unstated, sources), sources)
    notes.extend(cpu.notes)
    gpus = _gpus(request, env, cpu, read_gpus_fn, detect_unstated, sources)
    notes.extend(gpus.notes)
    if _mixes_machines(sources):
        # Another machine's CPU beside this one's GPUs answers for neither: said first, wherever the facts go.
        notes.insert(0, MIXED_MACHINES.format(given=sources["cpu"].split("=")[0].split(" ")[0]))
    driver, driver_assumed = _driver(catalog, request, env, gpus, detect_unstated, sources, notes)
    if cpu.os == "darwin" and driver_assumed:
        driver_assumed = False  # a Mac runs no NVIDIA driver: nothing to assume, nothing to pass
        notes.remove(ASSUMED_DRIVER_NOTE)
        sources.pop("driver", None)
    return HostFacts(
        os=cpu.os,
        arch=cpu.arch,
        cpu=cpu,
        gpus=gpus.gpus,
        driver=driver,
        driver_assumed=driver_assumed,
        gpu_inconclusive=gpus.inconclusive,
        sources=sources,
        notes=tuple(notes),
        cuda_visible_devices=gpus.cuda_visible,
        other_gpus=gpus.others,
    )


def _cpu(
    catalog: Hardware,
    request: Request,
    env: Mapping[str, str],
    detect_cpu_fn: Callable[[], CpuFacts],
    detect_unstated: bool,
    sources: dict[FactName, str],
) -> CpuFacts:
    """The CPU: a stated dump (--cpuinfo, PICKVARIANT_CPUINFO), else this machine's; its flags canonical. A machine
    stated by --platform alone has no CPU here (_platform gives it)."""
    if request.platform is not None and request.cpuinfo is None and settings.setting(env, ENV_CPUINFO) is None:
        return CpuFacts(os="", arch="", model=None, flags=frozenset(), source="--platform")
    if request.cpuinfo is not None:
        cpu = _dump(request.cpuinfo, "--cpuinfo")
        sources["cpu"] = f"--cpuinfo {request.cpuinfo}"
    elif (stated_cpuinfo := settings.setting(env, ENV_CPUINFO)) is not None:
        cpu = _dump(joined(stated_cpuinfo), ENV_CPUINFO)  # as a Path writes it, as before
        sources["cpu"] = f"{ENV_CPUINFO}={stated_cpuinfo}"
    elif detect_unstated:
        cpu = detect_cpu_fn()
        sources["cpu"] = f"detected ({cpu.source})"
    else:
        raise BadInput(
            f"--cpuinfo: a described machine needs its CPU (a copy of its /proc/cpuinfo, or {ENV_CPUINFO}); "
            "nothing of this machine is mixed in"
        )
    canonical = catalog.canonical_flags(cpu.flags)
    if canonical is not cpu.flags:  # canonical_flags hands back the same frozenset when nothing was renamed
        cpu = CpuFacts(os=cpu.os, arch=cpu.arch, model=cpu.model, flags=canonical, source=cpu.source, notes=cpu.notes)
    return cpu


def _platform(request: Request, cpu: CpuFacts, sources: dict[FactName, str]) -> CpuFacts:
    """The CPU facts of a machine stated by --platform: its OS and architecture, no instruction set known (a prebuilt
    build is not chosen by it); with a dump, the dump must be of that platform."""
    if request.platform is None:
        return cpu
    os_name, arch = STATED_PLATFORMS[request.platform]
    if cpu.source != "--platform":
        if (cpu.os, cpu.arch) != (os_name, arch):
            raise BadInput(
                f"--platform {request.platform}: the CPU dump is of {cpu.os}/{cpu.arch}, not {os_name}/{arch}: give one "
                "or the other"
            )
        return cpu
    sources["cpu"] = f"--platform {request.platform}"
    note = f"--platform {request.platform} states no CPU: its instruction set is not known (no prebuilt build is "
    note += "chosen by it: ATen picks its CPU kernels at run time)"
    return CpuFacts(os=os_name, arch=arch, model=None, flags=frozenset(), source="--platform", notes=(note,))


@keyword_record
class _Gpus:
    gpus: tuple[GpuFacts, ...]
    inconclusive: bool = False
    detected_driver: DriverFacts | None = None
    cuda_visible: str | None = None
    notes: tuple[str, ...] = ()
    others: tuple[OtherGpu, ...] = ()


def _stated_gpus(request: Request, env: Mapping[str, str], sources: dict[FactName, str]) -> tuple[str, ...] | None:
    """The compute capabilities stated (--gpu, repeatable or comma-separated as PICKVARIANT_GPU; --no-gpu), or None."""
    if request.no_gpu and request.gpus:
        raise BadInput("--gpu and --no-gpu contradict each other: give one of them")
    if request.no_gpu:
        sources["gpus"] = "--no-gpu"
        return ()
    if request.gpus:
        sources["gpus"] = "--gpu"
        # Each part is judged, an empty one too ("8.6,", ""): a capability left out is no capability.
        return tuple(part for text in request.gpus for part in text.split(","))
    if (value := settings.setting(env, ENV_GPU)) is not None:
        sources["gpus"] = f"{ENV_GPU}={value}"
        return () if value.strip().lower() in NO_GPU_WORDS else tuple(part for part in value.split(",") if part.strip())
    return None


def _gpus(
    request: Request,
    env: Mapping[str, str],
    cpu: CpuFacts,
    read_gpus_fn: Callable[[], GpuReport],
    detect_unstated: bool,
    sources: dict[FactName, str],
) -> _Gpus:
    """The GPUs: stated, else none on a Mac, else unknown for a described machine, else this machine's (NVML)."""
    stated = _stated_gpus(request, env, sources)
    if stated is None and cpu.os == "darwin":
        # No Mac has an NVIDIA GPU CUDA can use, and this host's NVML says nothing of a described Mac.
        own = "; its Apple GPU is used through MPS" if cpu.arch == "aarch64" else ""
        sources["gpus"] = f"none: macOS has no NVIDIA GPU CUDA can use{own}"
        return _Gpus(gpus=())
    if stated is None and not detect_unstated:
        sources["gpus"] = NOT_STATED
        return _Gpus(gpus=(), inconclusive=True)
    if stated is None:
        report = read_gpus_fn()
        sources["gpus"] = f"detected ({report.source})"
        return _Gpus(
            gpus=report.gpus,
            inconclusive=report.inconclusive,
            detected_driver=report.driver,
            # Only a machine whose GPUs were detected has a CUDA_VISIBLE_DEVICES that means something.
            cuda_visible=env.get(ENV_CUDA_VISIBLE) if report.gpus else None,
            notes=tuple(report.notes),
            others=_other_gpus(env),
        )
    given = sources["gpus"].split("=")[0]
    others, capabilities = _split_stated(stated, given)
    return _Gpus(
        gpus=tuple(
            GpuFacts(index=index, name=f"stated GPU ({given})", compute_capability=capability)
            for index, capability in enumerate(capabilities)
        ),
        others=others,
    )


def _split_stated(stated: tuple[str, ...], given: str) -> tuple[tuple[OtherGpu, ...], list[Any]]:
    """The AMD and Intel GPUs stated (gfx1100, xpu), and the compute capabilities of the NVIDIA ones."""
    if not any(text.strip().lower().startswith(("gfx", "xpu")) for text in stated):
        return (), [_parsed_as(parse_compute_capability, (given, text)) for text in stated]
    from pickvariant.machine.othergpu import stated_other_gpu  # read only where another vendor's GPU is stated

    others: list[OtherGpu] = []
    capabilities: list[Any] = []
    for text in stated:
        other = stated_other_gpu(text, len(others), given)
        if other is None:
            capabilities.append(_parsed_as(parse_compute_capability, (given, text)))
        else:
            others.append(other)
    return tuple(others), capabilities


def _other_gpus(env: Mapping[str, str]) -> tuple[OtherGpu, ...]:
    """This machine's AMD and Intel GPUs (Linux's sysfs; PICKVARIANT_SYSFS names another root). Where neither the
    KFD nor the DRM class is there (most NVIDIA hosts in containers, every CPU host in one), two stat calls and no
    import."""
    import sys

    if not sys.platform.startswith("linux"):
        return ()
    root = settings.setting(env, settings.SYSFS) or "/sys"
    if not (os.path.isdir(os.path.join(root, "class", "kfd")) or os.path.isdir(os.path.join(root, "class", "drm"))):
        return ()
    from pickvariant.machine.othergpu import read_other_gpus

    return read_other_gpus(root)


def _driver(
    catalog: Hardware,
    request: Request,
    env: Mapping[str, str],
    gpus: _Gpus,
    detect_unstated: bool,
    sources: dict[FactName, str],
    notes: list[str],
) -> tuple[DriverFacts | None, bool]:
    """The driver and whether it is assumed: stated (--driver, --driver-cuda), else detected, else assumed new enough."""
    stated_version = _stated(request.driver, "--driver", env, ENV_DRIVER)
    stated_cuda = _stated(request.driver_cuda, "--driver-cuda", env, ENV_DRIVER_CUDA)
    if stated_version or stated_cuda:
        # A stated driver replaces the detected one whole: this machine's CUDA version says nothing of another's driver.
        version = stated_driver_version(catalog, stated_version, notes) if stated_version else None
        sources["driver"] = " ".join(stated[0] for stated in (stated_version, stated_cuda) if stated)
        return DriverFacts(version, _parsed_as(parse_cuda_version, stated_cuda)), False
    if gpus.detected_driver is not None:
        sources["driver"] = "detected (NVML)"
        return gpus.detected_driver, False
    if not detect_unstated:
        sources["driver"] = NOT_STATED
    if not gpus.gpus:
        return None, False
    sources["driver"] = "assumed new enough for every branch (no --driver given)"
    notes.append(ASSUMED_DRIVER_NOTE)
    return None, True


MIXED_MACHINES = (
    "the CPU is {given}'s, the GPUs and driver are this machine's (detected): to answer for another machine, state "
    "its GPUs too (--gpu CC, repeatable or comma-separated, or --no-gpu) and its driver (--driver)"
)
ASSUMED_DRIVER_NOTE = "no driver version given: assuming one new enough for every branch; pass --driver to check it"
_DRIVER_TEXT = r"[Rr]?(\d{3})(\.\d{1,3}){0,2}"  # compiled by re's cache when a driver is stated: never on detect's path
OLDEST_DRIVER_BRANCH = 300  # no NVIDIA driver older than R300 knows a GPU any catalog builds for


def stated_driver_version(catalog: Hardware, stated: tuple[str, str], notes: list[str]) -> DriverVersion:
    """A stated driver version, as nvidia-smi prints it (580.65.06, 580.65) or a branch alone (580, R580: read as the
    oldest driver of that branch, and said). Refused where it is not an NVIDIA driver version: 0, 999, 580.65.06.1."""
    given, text = stated
    flag = given.split("=")[0]
    match = re.fullmatch(_DRIVER_TEXT, text.strip())
    if match is None:
        raise BadInput(
            f"{flag}: {text!r:.40} is not an NVIDIA driver version: write it as nvidia-smi prints it (e.g. 580.65.06)"
        )
    newest = max(version_key(release.toolkit_driver)[0] for release in catalog.cuda_releases.values())
    branch = int(match.group(1))
    if not OLDEST_DRIVER_BRANCH <= branch <= newest + 100:
        raise BadInput(
            f"{flag}: {text!r:.40} is not an NVIDIA driver version: the branches pickvariant knows run from "
            f"R{OLDEST_DRIVER_BRANCH} to R{newest}; write it as nvidia-smi prints it (e.g. 580.65.06)"
        )
    version = parse_driver_version(text.strip().lstrip("Rr"))
    if len(version.parts) > 1:
        return version
    # A branch alone: every driver of it is at least its first release, where the facts give it (Hardware.as_judged,
    # the one reading of a branch); else the branch's .00, which no CUDA minimum of another branch depends on.
    known = catalog.first_release(branch)
    if known is not None:
        first, cuda = known
        notes.append(
            f"{flag} {text.strip()} is read as {first}, the first release of branch R{branch} (CUDA {cuda}'s minimum "
            "driver, the facts say): give the version nvidia-smi prints to be sure"
        )
        return first
    notes.append(
        f"{flag} {text.strip()} is read as {branch}.00, the oldest driver of branch R{branch}: give the version "
        "nvidia-smi prints to be sure"
    )
    return version


def _stated(option_value: str | None, flag: str, env: Mapping[str, str], variable: str) -> tuple[str, str] | None:
    """(where it was given, the value) for a fact stated by option or else by variable; None when neither states it."""
    if option_value is not None:
        return flag, option_value
    value = settings.setting(env, variable)
    return None if value is None else (f"{variable}={value}", value)


def _dump(path: str | os.PathLike[str], given: str) -> CpuFacts:
    """The stated CPU dump read, a refusal naming the option or variable that stated it."""
    try:
        return read_cpuinfo_dump(path)
    except BadInput as error:
        raise BadInput(f"{given}: {error}") from None


def _parsed_as(parse: Callable[[str], Any], stated: tuple[str, str] | None) -> Any:
    """The stated value parsed, a refusal naming the option or variable it came from."""
    if stated is None:
        return None
    given, value = stated
    try:
        return parse(value)
    except BadInput as error:
        raise BadInput(f"{given.split('=')[0]}: {error}") from None
