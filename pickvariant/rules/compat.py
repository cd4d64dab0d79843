"""Can this build run on these facts, and if not, why: the one compatibility predicate.

`refusals` judges the neutral record every source's builds are read into (sources/runs_on.Build): a Flox variant
(`why_not`, the recipes' words for its findings), a wheel (rules/prebuilt_stages.py), the torch already in an
environment. Its findings, in the order a person checks them: built for another platform; the CPU lacks a flag of the
build's instruction set (a build that dispatches at run time requires none); an Apple Silicon build (macOS: MPS) is
judged by those alone, the Apple GPU being part of every such Mac; a CPU build where GPUs are to be served, or a CUDA
build where none are; each GPU its kernels do not run on (rules/kernels.py: SASS, then PTX through the driver's JIT);
the driver (`driver_refusal`: the GPUs it drives, its CUDA line's floor, a Jetson's CUDA version). A finding is typed,
never worded: each source says it of its own record.

The decision, its hints, `install --package`, `verify` and `plan` all ask here instead of re-deriving the rules, so
that what one of them admits the others admit too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pickvariant._base.errors import BadInput
from pickvariant._base.memo import per_object
from pickvariant._base.records import record, replace
from pickvariant._base.versions import ComputeCapability, DriverVersion, parse_driver_version, version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import families, kernels
from pickvariant.rules.wording import compat as wording
from pickvariant.sources import accelerator
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.hardware import CpuIsa, CudaLine, GpuArch, Hardware
from pickvariant.sources.runs_on import Build, of_variant

# Jetson drivers ship in the Jetson Linux BSP on its own cadence (JetPack 7 on Thor reports
# "580.00" with CUDA 13.0), so their version numbers say nothing about the desktop minimums.
# What a driver can run is the CUDA version cuDriverGetVersion reports, "the latest CUDA
# version supported by driver". Sources: docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html;
# developer.nvidia.com/blog/simplifying-cuda-upgrades-for-nvidia-jetson-users/ ("the CUDA driver
# is part of the Jetson Linux BSP").
TEGRA_DRIVER_RULE = wording.TEGRA_DRIVER_RULE
TEGRA_CUDA_UNKNOWN = wording.TEGRA_CUDA_UNKNOWN


def kernels_run_on(
    arch: GpuArch, capability: ComputeCapability, catalog: Hardware, cuda: str | None = None
) -> str | None:
    """None when the architecture's sm_XY machine code (built by a CUDA `cuda` toolkit, where known) runs on
    `capability`, else why not: the one kernel rule (rules/kernels.py)."""
    return kernels.sass_runs_on(arch.compute_capability, capability, catalog, cuda)


def missing_flags(isa_requires: Sequence[str], flags: frozenset[str]) -> list[str]:
    if flags.issuperset(isa_requires):  # the usual answer, found without building a list (decide asks per variant)
        return []
    return [flag for flag in isa_requires if flag not in flags]


def usable_isas(catalog: Hardware, facts: HostFacts) -> tuple[CpuIsa, ...]:
    """The catalog's instruction sets this CPU can run (every required flag present), in catalog order."""
    return tuple(
        isa
        for isa in catalog.isas.values()
        if isa.platform == facts.arch and not missing_flags(isa.requires, facts.cpu.flags)
    )


def has_tegra(gpus: Sequence[GpuFacts], catalog: Hardware) -> bool:
    return any(catalog.is_tegra(gpu.compute_capability) for gpu in gpus)


def judged_by_cuda_version(gpus: Sequence[GpuFacts], driver: DriverFacts | None, catalog: Hardware) -> bool:
    """Tegra GPUs with a driver that reports its CUDA version: that version decides, not the number."""
    return driver is not None and driver.cuda is not None and has_tegra(gpus, catalog)


def tegra_cuda_unknown(gpus: Sequence[GpuFacts], driver: DriverFacts | None, catalog: Hardware) -> bool:
    """A Jetson driver stated by its number alone: nothing it can run is known."""
    return driver is not None and driver.cuda is None and has_tegra(gpus, catalog)


def undriven_gpus(driver: DriverFacts | None, gpus: Sequence[GpuFacts], catalog: Hardware) -> tuple[str, ...]:
    """Why the driver cannot drive each of `gpus` it cannot: a branch older than the GPU's architecture,
    or newer than the last branch that drives it (hardware.json's sourced driver support)."""
    if driver is None or driver.version is None:
        return ()
    reasons = []
    for gpu in gpus:
        arch = catalog.arch_of(gpu.compute_capability)
        if arch is None or arch.tegra or arch.drivers is None:
            continue
        why = arch.drivers.refuses(driver.version)
        if why:
            reasons.append(wording.driver_cannot_drive(driver.version, gpu.index, gpu.compute_capability, why))
    return tuple(reasons)


def machine_floor(
    min_driver: DriverVersion | None, gpus: Sequence[GpuFacts], catalog: Hardware
) -> DriverVersion | None:
    """The oldest driver that runs a build of CUDA floor `min_driver` on these GPUs: the newest of that floor and
    each GPU's first driver (hardware.json's; an RTX 5090 needs R570 even for a CUDA 12.8 build). None for a CPU build."""
    if min_driver is None:
        return None
    return max((first for _, first in floor_raisers(min_driver, gpus, catalog)), default=min_driver)


def last_branch(gpus: Sequence[GpuFacts], catalog: Hardware) -> int | None:
    """The last driver branch that drives every one of `gpus` (R580 for a Pascal card), None where none has a last
    (hardware.json's): a driver newer than it drives none of them, so a hint naming a floor names this ceiling too."""
    archs = [arch for gpu in gpus if (arch := catalog.arch_of(gpu.compute_capability)) is not None]
    return min((a.drivers.last_branch for a in archs if a.drivers and a.drivers.last_branch), default=None)


def floor_raisers(
    min_driver: DriverVersion, gpus: Sequence[GpuFacts], catalog: Hardware
) -> list[tuple[GpuFacts, DriverVersion]]:
    """The GPUs whose first driver (hardware.json's) is newer than a CUDA line's floor, each with that driver."""
    raised = []
    for gpu in dict.fromkeys(gpus):
        arch = catalog.arch_of(gpu.compute_capability)
        first = arch.drivers.first if arch is not None and arch.drivers is not None else None
        if first is not None and min_driver < first:
            raised.append((gpu, first))
    return raised


def driver_rejection(
    driver: DriverFacts | None, line: CudaLine | None, gpus: Sequence[GpuFacts], catalog: Hardware
) -> str | None:
    """None when the driver can run the CUDA line on these GPUs (or nothing is known of it, or there is none), else why not."""
    if line is None:
        return None
    return driver_refusal(driver, line.cuda, line.min_driver, gpus, catalog)


def driver_refusal(
    driver: DriverFacts | None, cuda: str, min_driver: DriverVersion, gpus: Sequence[GpuFacts], catalog: Hardware
) -> str | None:
    """None when the driver can run builds of CUDA `cuda` (whose floor is `min_driver`) on these GPUs, or nothing is
    known of it; else why not. Any source's build is held to this: a Flox CUDA line, a wheel's CUDA runtime."""
    if driver is None or not gpus:
        return None
    undriven = undriven_gpus(driver, gpus, catalog)
    if undriven:
        return "; ".join(undriven)
    if has_tegra(gpus, catalog):
        if driver.cuda is None:
            return TEGRA_CUDA_UNKNOWN
        if version_key(driver.cuda) < version_key(cuda):
            return wording.tegra_driver_older(driver.cuda, cuda)
        return None
    if driver.version is not None:
        # A branch alone (a hint's "an R580 driver") is judged as its first release, as a stated one is read.
        if catalog.as_judged(driver.version) < min_driver:
            if driver.version.parts == min_driver.parts[:1]:  # "580" against 580.82.07: which 580 is not known
                return wording.driver_branch_only(driver.version, min_driver, cuda)
            return wording.driver_below_minimum(driver.version, min_driver, cuda)
        return None
    if driver.cuda is not None and version_key(driver.cuda)[0] < version_key(cuda)[0]:
        # Minor-version compatibility: a desktop driver of a CUDA major release runs every build of it.
        return wording.driver_other_major(driver.cuda, cuda, min_driver)
    return None


def driver_as_judged(facts: HostFacts) -> tuple[HostFacts, tuple[str, ...]]:
    """The machine's facts with its driver as driver_refusal judges it, and what was said of it. A Windows driver is
    judged by the CUDA version it reports alone: Windows numbers its releases apart from Linux (R580's are 580.88
    and 581.x there), and the driver floors and branches in the facts are Linux's."""
    driver = facts.driver
    if facts.os != "windows" or driver is None or driver.version is None:
        return facts, ()
    return replace(facts, driver=DriverFacts(version=None, cuda=driver.cuda)), (
        wording.windows_driver(str(driver.version), driver.cuda),
    )


def dispatch_level(catalog: Hardware, facts: HostFacts) -> str | None:
    """The CPU dispatch level ATen picks at run time on this CPU: on x86_64 the best of the instruction sets it runs
    (hardware.json's torch_cpu_capability); on aarch64 DEFAULT without SVE, and None with it (SVE256 depends on the
    vector length, which /proc/cpuinfo does not give)."""
    if facts.arch != "x86_64":
        return None if "sve" in facts.cpu.flags else "DEFAULT"
    order = catalog.torch_capability_order
    usable = [isa.torch_cpu_capability for isa in usable_isas(catalog, facts)]
    return max(usable, key=order.index) if usable else "DEFAULT"


def _shipped_driver(catalog: Hardware, cuda: str) -> tuple[DriverVersion, DriverVersion] | None:
    """(the minimum driver, the driver the toolkit ships with) where the minimum is older: minor-version compatibility."""
    release = catalog.cuda_releases.get(cuda)
    if release is None:
        return None
    try:
        shipped = parse_driver_version(release.toolkit_driver)
    except BadInput:
        return None
    return (release.min_driver, shipped) if release.min_driver < shipped else None


def minor_version_note(catalog: Hardware, cudas: Sequence[str], driver: DriverVersion | None = None) -> str | None:
    """Why a driver older than a CUDA release's own runs its builds, where that is so: CUDA's minor-version
    compatibility (a 12.x build runs on any driver >= 525.60.13), in words. `driver`: only the releases whose own
    driver is newer than it are named."""
    named = []
    for cuda in sorted(cudas, key=version_key):
        found = _shipped_driver(catalog, cuda)
        if found is not None and (driver is None or driver < found[1]):
            named.append((cuda, found))
    if not named:
        return None
    majors = sorted({cuda.split(".", 1)[0] for cuda, _ in named})
    minimums = sorted({str(minimum) for _, (minimum, _) in named})
    shipped = ", ".join(f"{cuda} with {own}" for cuda, (_, own) in named)
    return wording.minor_version_compatibility(majors, minimums, shipped)


def for_cuda(catalog: Hardware, cuda: str, driver: DriverVersion | None) -> str:
    """ "CUDA 12.9" in a hint naming `driver`, and where that driver is older than the one 12.9's toolkit ships
    with, the rule by which it runs 12.9's builds."""
    found = _shipped_driver(catalog, cuda)
    compatible = found is not None and (driver is None or driver < found[1])
    return wording.cuda_words(cuda, compatible)


# The one predicate: does a build run on this machine, and each reason it does not (see refusals).
PLATFORM = "platform"
CPU_FLAGS = "cpu_flags"
GPUS_UNUSED = "gpus_unused"
NO_GPU = "no_gpu"
KERNELS = "kernels"
DRIVER = "driver"
UNJUDGED = "unjudged"  # GPU code of a family no check is registered for (rules/families.py): never run as a CPU build


@record
class Refusal:
    """One reason a build does not run here. `gpu`: the GPU its kernels do not run on (KERNELS); `detail`: the flags
    the CPU lacks (CPU_FLAGS), why the build's first SASS does not run on that GPU (KERNELS, empty for a build with
    none), why the driver does not run it (DRIVER)."""

    what: str
    gpu: GpuFacts | None = None
    detail: tuple[str, ...] = ()
    other: OtherGpu | None = None  # the AMD or Intel GPU its code does not run on (KERNELS)


def refusals(
    build: Build, facts: HostFacts, hardware: Hardware, gpus: Sequence[GpuFacts], others: Sequence[OtherGpu] = ()
) -> tuple[Refusal, ...]:
    """Every reason `build` does not run on `facts` and `gpus` (the NVIDIA GPUs it must serve; `others`, the AMD and
    Intel GPUs the source has builds for: rules/families.py); empty where it runs."""
    return tuple(_found(build, facts, hardware, gpus, others))


def first_refusal(
    build: Build, facts: HostFacts, hardware: Hardware, gpus: Sequence[GpuFacts], others: Sequence[OtherGpu] = ()
) -> Refusal | None:
    """The first reason `build` does not run here, None where it runs: the rest are not looked for."""
    return next(_found(build, facts, hardware, gpus, others), None)


def _found(
    build: Build, facts: HostFacts, hardware: Hardware, gpus: Sequence[GpuFacts], others: Sequence[OtherGpu]
) -> Iterator[Refusal]:
    wrong_platform = (build.os, build.arch) != (facts.os, facts.arch)
    if wrong_platform:
        yield Refusal(what=PLATFORM)
    if build.cpu_isa is not None and not wrong_platform:
        missing = missing_flags(hardware.isas[build.cpu_isa].requires, facts.cpu.flags)
        if missing:
            yield Refusal(what=CPU_FLAGS, detail=tuple(missing))
    family = build.family
    if family == accelerator.MPS:
        return
    if family == accelerator.CPU:
        if gpus or others:
            yield Refusal(what=GPUS_UNUSED)
        return
    if family != accelerator.CUDA:
        yield from _other_family(build, others)
        return
    if not gpus:
        yield Refusal(what=NO_GPU)
        return
    for gpu in gpus:
        why = _kernels_verdict(hardware, build.sass, build.ptx, gpu.compute_capability, build.cuda)
        if why is not None:
            yield Refusal(what=KERNELS, gpu=gpu, detail=why)
    if build.cuda is not None and build.cuda_min_driver is not None:
        why_driver = driver_refusal(facts.driver, build.cuda, build.cuda_min_driver, gpus, hardware)
        if why_driver is not None:
            yield Refusal(what=DRIVER, detail=(why_driver,))


def _other_family(build: Build, others: Sequence[OtherGpu]) -> Iterator[Refusal]:
    """A ROCm or XPU build (rules/families.py): on each of its vendor's GPUs to serve, its code runs or not."""
    code = build.gpu_code
    if code is None or not families.judged(code.family):
        yield Refusal(what=UNJUDGED)
        return
    mine = [gpu for gpu in others if gpu.vendor == accelerator.VENDOR[code.family]]
    if not mine:
        yield Refusal(what=NO_GPU)
        return
    for gpu in mine:
        why, _ = families.runs(code, gpu)
        if why is not None:
            yield Refusal(what=KERNELS, other=gpu, detail=(why,))


def kernels_run(
    build: Build, capability: ComputeCapability, hardware: Hardware
) -> tuple[str, ComputeCapability] | None:
    """How the build's kernels run on a GPU of `capability` ("sass" or "ptx", with the architecture), None where
    they do not: the one kernel rule (rules/kernels.py), with the build's CUDA line."""
    return kernels.coverage(build.sass, build.ptx, capability, hardware, build.cuda)


@per_object
def _kernels_verdict(
    hardware: Hardware,
    sass: tuple[ComputeCapability, ...],
    ptx: tuple[ComputeCapability, ...],
    capability: ComputeCapability,
    cuda: str | None,
) -> tuple[str, ...] | None:
    """None when the kernels run on `capability`, else why its first SASS does not (empty without SASS). Worked
    out once per hardware facts, build shape and kind of GPU: a decision asks it of dozens of builds, eight GPUs of
    one kind once."""
    if kernels.coverage(sass, ptx, capability, hardware, cuda) is not None:
        return None
    if not sass:
        return ()
    why = kernels.sass_runs_on(sass[0], capability, hardware, cuda)
    return () if why is None else (why,)


def why_not(
    variant: Variant, facts: HostFacts, catalog: Catalog, gpus: Sequence[GpuFacts] | None = None
) -> tuple[str, ...]:
    """Every reason `variant` cannot run on `facts` (on `gpus`, default every GPU), in the recipes' words; empty when
    it can. The finding is the one predicate's (`refusals`), as for every source's builds."""
    found = refusals(build_of_variant(catalog, variant), facts, catalog, facts.gpus if gpus is None else gpus)
    return tuple(_said(refusal, variant, facts) for refusal in found)


def _said(refusal: Refusal, variant: Variant, facts: HostFacts) -> str:
    what, detail = refusal.what, refusal.detail
    if what == "platform":
        return wording.built_for_another_platform(variant.platform, facts.os, facts.arch)
    if what == "cpu_flags":
        return wording.crashes_without(detail)
    if what == "gpus_unused":
        return wording.CPU_ONLY_UNUSED_GPUS
    if what == "no_gpu":
        return wording.cuda_build_without_gpu(variant.gpu_arch or "")
    if what == "kernels":
        assert refusal.gpu is not None
        return f"GPU {refusal.gpu.index}: {detail[0]}"
    return detail[0]


@per_object
def build_of_variant(catalog: Catalog, variant: Variant) -> Build:
    """The variant as the predicate reads it (sources/runs_on.py), made once per catalog and variant."""
    return of_variant(variant, catalog, source="")


def runs_on_all(catalog: Hardware, gpu_arch: str | None, gpus: Sequence[GpuFacts], cuda: str | None = None) -> bool:
    """Whether the architecture's machine code, built by a CUDA `cuda` toolkit where known, runs on every GPU."""
    if gpu_arch is None or gpu_arch not in catalog.gpu_archs:
        return False
    arch = catalog.gpu_archs[gpu_arch]
    return all(kernels_run_on(arch, gpu.compute_capability, catalog, cuda) is None for gpu in gpus)
