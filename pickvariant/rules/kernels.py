"""Do a build's GPU kernels run on this GPU: the one rule every source, verify's judge and fleet ask.

A build carries SASS (machine code, `sm_XY`) and perhaps PTX (`compute_XY`, compiled by the driver at first start):
- SASS runs on a GPU of the same major and a minor at least its own (CUDA binary compatibility), never across
  an integrated Tegra GPU and a discrete one (machine_code_runs_on), except that code of a build made with
  CUDA 13.2 or newer for sm_70, sm_80 or sm_86 also runs on the Tegra GPUs of its major with a higher minor
  (7.2 Xavier, 8.7 Orin): "CUDA 13.2 allows SBSA binaries to run on Jetson devices", as torch's own
  `DEVICE_REQUIREMENT_POST_JETSON_SBSA_UNIFICATION` encodes it (torch 2.15.0's torch/cuda/__init__.py; facts/wheels.md
  §2.15, caveat 8);
- PTX runs, through the driver's JIT, on any GPU of a capability at least its own, at a first-start cost.
The highest SASS that runs is named; PTX only where no SASS runs.

A ROCm build carries code objects for a list of targets (gfx942, gfx90a:sramecc+) and nothing like PTX: a code object
loads only on its own target, and a feature it names (sramecc, xnack) must be set as the GPU has it, while one it
leaves unnamed loads either way (LLVM's AMDGPUUsage, "Target ID"; code_object_for). Generic targets (gfx11-generic)
are not read: a build that names only those proves nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable

from pickvariant._base.versions import ComputeCapability
from pickvariant.rules.wording import compat as wording
from pickvariant.sources.hardware import Hardware

# CUDA 13.2's SBSA-on-Jetson unification: the SASS whose code runs on Tegra GPUs of its major (minor at least its own).
UNIFIED_FROM_CUDA = (13, 2)
UNIFIED_SASS = frozenset({ComputeCapability(7, 0), ComputeCapability(8, 0), ComputeCapability(8, 6)})


def machine_code_runs_on(built: ComputeCapability, capability: ComputeCapability, catalog: Hardware) -> str | None:
    """None when sm_XY machine code built for `built` runs on a GPU of `capability`, else why not.

    `built` need not be an architecture of the catalog (verify reads a torch's whole arch list)."""
    if built.major != capability.major:
        return wording.kernels_other_major(built, capability)
    device_tegra = catalog.is_tegra(capability)
    if catalog.is_tegra(built) or device_tegra:
        if built != capability:
            return wording.kernels_across_tegra(built, capability, device_tegra)
        return None
    if built.minor > capability.minor:
        return wording.kernels_newer_than(built, capability)
    return None


def sass_runs_on(
    built: ComputeCapability, capability: ComputeCapability, catalog: Hardware, cuda: str | None = None
) -> str | None:
    """None when SASS built for `built` (by a CUDA `cuda` toolkit, where known) runs on a GPU of `capability`, else
    why not."""
    why = machine_code_runs_on(built, capability, catalog)
    if why is not None and _unified(built, capability, catalog, cuda):
        return None
    return why


def _unified(built: ComputeCapability, capability: ComputeCapability, catalog: Hardware, cuda: str | None) -> bool:
    if cuda is None or built not in UNIFIED_SASS or not catalog.is_tegra(capability):
        return False
    parts = cuda.split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts[:2]):
        return False
    return (
        (int(parts[0]), int(parts[1])) >= UNIFIED_FROM_CUDA
        and built.major == capability.major
        and (built.minor <= capability.minor)
    )


def coverage(
    sass: Iterable[ComputeCapability],
    ptx: Iterable[ComputeCapability],
    capability: ComputeCapability,
    catalog: Hardware,
    cuda: str | None = None,
) -> tuple[str, ComputeCapability] | None:
    """How a build's kernels run on a GPU of `capability`: ("sass", the highest architecture whose SASS runs there)
    or ("ptx", the highest PTX the driver compiles for it), else None."""
    for built in sorted(sass, key=_key, reverse=True):
        if sass_runs_on(built, capability, catalog, cuda) is None:
            return "sass", built
    for built in sorted(ptx, key=_key, reverse=True):
        if _key(built) <= _key(capability):
            return "ptx", built
    return None


def _key(capability: ComputeCapability) -> tuple[int, int]:
    return capability.major, capability.minor


def target_id(text: str) -> tuple[str, dict[str, str]]:
    """A target ID ("gfx90a:sramecc+:xnack-") as (its target, each feature it names with its + or -)."""
    target, *features = text.strip().split(":")
    return target, {feature[:-1]: feature[-1] for feature in features if feature[-1:] in ("+", "-")}


def code_object_for(arch_list: Iterable[str], gcn_arch: str) -> str | None:
    """The first entry of a ROCm build's arch list whose code objects load on a GPU of target ID `gcn_arch`: the same
    target, and every feature it names set as the GPU has it."""
    target, features = target_id(gcn_arch)
    for entry in (part for item in arch_list for part in item.split(";") if part):
        built, wanted = target_id(entry)
        if built == target and all(features.get(name) == value for name, value in wanted.items()):
            return entry
    return None
