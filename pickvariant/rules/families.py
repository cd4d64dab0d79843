"""One compatibility check per family of GPU code other than CUDA's (sources/accelerator.py; CUDA's is
rules/kernels.py's SASS and PTX), registered by family: a build of a family with no check here is never judged.

- ROCm (AMD): a build runs on an AMD GPU only where its list holds the GPU's target (rules/kernels.code_object_for:
  the same processor, and every feature an entry names set as the GPU has it; PyTorch's lists name none, so their
  code objects load with either sramecc and xnack setting, LLVM's AMDGPUUsage "Target ID"). A code object loads only
  on its own processor: no entry stands in for another, and HSA_OVERRIDE_GFX_VERSION is never assumed.
- XPU (Intel): a build runs on an Intel GPU whose device the facts name (sources/xpu_devices.py): with AOT code where
  its list has the device's family, else through the SPIR-V every XPU wheel carries, compiled by the driver at first
  use. A device the facts do not name (an older iGPU, a Data Center GPU Flex) is not served: no XPU build is chosen
  for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pickvariant._base.records import replace
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import kernels
from pickvariant.rules.wording import families as said
from pickvariant.sources import xpu_devices
from pickvariant.sources.accelerator import ROCM, VENDOR, XPU, GpuCode, Rocm, Xpu
from pickvariant.sources.runs_on import Build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Again = Callable[[HostFacts], Any]  # rules/pick.py's Again, the one pick with changed facts


def _rocm(code: Rocm, gpu: OtherGpu) -> tuple[str | None, str]:
    target = gpu.target_id or ""
    entry = kernels.code_object_for(code.targets, target)
    if entry is None:
        return said.no_code_object(gpu.described, gpu.target or "?", code.targets), ""
    return None, said.code_object(gpu.described, entry)


def _xpu(code: Xpu, gpu: OtherGpu) -> tuple[str | None, str]:
    family = xpu_devices.family_of(gpu.device_id)
    aot = None if family is None else xpu_devices.aot_for(family, code.aot)
    if aot is not None:
        return None, said.aot_code(gpu.described, aot)
    if not code.jit:
        return said.no_xpu_code(gpu.described, code.aot), ""
    return None, said.spirv(gpu.described, family)


# family -> (the check: why its code does not run on that GPU, or None and how it runs)
CHECKS: dict[str, Callable[[GpuCode, OtherGpu], tuple[str | None, str]]] = {
    ROCM: _rocm,  # type: ignore[dict-item]
    XPU: _xpu,  # type: ignore[dict-item]
}


def judged(family: str) -> bool:
    """Whether the rules can judge a build of that family on a GPU."""
    return family in CHECKS


def serves(gpu: OtherGpu, families: Iterable[str]) -> bool:
    """Whether a build of one of `families` is for this GPU: its vendor's family, and for an Intel GPU a device the
    facts name (one stated as `--gpu xpu`, with no device id, is taken as the XPU device it is stated to be)."""
    family = next((family for family, vendor in VENDOR.items() if vendor == gpu.vendor), None)
    if family is None or family not in families or family not in CHECKS:
        return False
    return family != XPU or gpu.device_id is None or xpu_devices.family_of(gpu.device_id) is not None


def runs(code: GpuCode, gpu: OtherGpu) -> tuple[str | None, str]:
    """(why the build's code does not run on `gpu`, None where it runs; how it runs, where it does)."""
    return CHECKS[code.family](code, gpu)


def chosen_reasons(build: Build, others: tuple[OtherGpu, ...]) -> tuple[str, ...]:
    """What an answer that chose a ROCm or XPU build says of it: how its code runs on each GPU it serves, what of
    the driver is judged and what is not, and, where its list is only inferred, from what, with `verify` to settle
    it once installed."""
    code = build.gpu_code
    if code is None:
        return ()
    mine = [gpu for gpu in others if gpu.vendor == VENDOR[code.family]]
    found = [runs(code, gpu)[1] for gpu in mine]
    if isinstance(code, Rocm):
        drivers = sorted({gpu.driver for gpu in mine if gpu.driver})
        found.append(said.rocm_driver(code.stack, drivers))
    else:
        found.append(said.XPU_DRIVER)
    if code.inferred:
        found.append(said.inferred(build.label, code.inferred))
    return tuple(found)


def without_code(builds: Iterable[Build], others: tuple[OtherGpu, ...]) -> tuple[str, ...]:
    """Where nothing fits: each AMD GPU no ROCm build of the platform has code objects for, said with why no
    override stands in for one."""
    rocm = [build.gpu_code for build in builds if isinstance(build.gpu_code, Rocm)]
    return tuple(
        said.no_rocm_build(gpu.target or "?")
        for gpu in others
        if gpu.vendor == VENDOR[ROCM] and rocm and all(runs(code, gpu)[0] is not None for code in rocm)
    )


def for_machine(builds: tuple[Build, ...], others: tuple[OtherGpu, ...]) -> tuple[Build, ...]:
    """The builds judged on a machine: every one without code for an AMD or Intel GPU, and those with code for a GPU
    of the machine's to serve (a ROCm build is nothing to a machine with no AMD GPU, as another platform's is)."""
    vendors = {gpu.vendor for gpu in others}
    return tuple(b for b in builds if b.gpu_code is None or VENDOR[b.gpu_code.family] in vendors)


def per_vendor(
    facts: HostFacts, gpus: tuple[GpuFacts, ...], others: tuple[OtherGpu, ...], build: Build, again: Again | None
) -> tuple[str, ...]:
    """On a machine with GPUs of two vendors, the answer serves one vendor's (one environment holds one torch): each
    GPU it leaves unused is said with what would serve it alone, the same pick with only that vendor's GPUs."""
    family = build.family
    served = VENDOR.get(family)
    left = [gpu for gpu in others if gpu.vendor != served]
    nvidia = bool(gpus) and family != "cuda"
    if again is None or not (left or nvidia):
        return ()
    found: list[str] = []
    for vendor in dict.fromkeys(gpu.vendor for gpu in left):
        mine = tuple(gpu for gpu in facts.other_gpus if gpu.vendor == vendor)
        alone = again(replace(facts, gpus=(), other_gpus=mine))
        described = [gpu.described for gpu in mine]
        found.append(said.alone(described, None if alone.build is None else alone.build.label))
    if nvidia:
        alone = again(replace(facts, other_gpus=()))
        described = [f"GPU {gpu.index} (cc {gpu.compute_capability})" for gpu in gpus]
        found.append(said.alone(described, None if alone.build is None else alone.build.label))
    return tuple(found)
