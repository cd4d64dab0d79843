"""When no variant runs here: what the stages found that left nothing (the CPU, the GPUs, the driver, the pins)."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant._base.request import Request
from pickvariant.catalog.model import Branch, Catalog, Variant
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.rules import wording
from pickvariant.rules.compat import TEGRA_CUDA_UNKNOWN, runs_on_all, tegra_cuda_unknown, undriven_gpus


def own_variants(facts: HostFacts, catalog: Catalog, left: Sequence[Branch]) -> list[Variant]:
    system = catalog.nix_system(facts.os, facts.arch)
    return [v for b in left for v in b.variants if v.platform == system]


def any_arch_for(catalog: Catalog, variants: Sequence[Variant], gpus: Sequence[GpuFacts]) -> bool:
    return any(runs_on_all(catalog, v.gpu_arch, gpus) for v in variants)


def why_none(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    gpus: tuple[GpuFacts, ...],
    left: Sequence[Branch],
    usable: frozenset[str],
) -> tuple[str, ...]:
    """Each finding that left no variant, in the order a person checks them: CPU, GPUs, the CUDA builds' CPUs, the
    driver. A driver too old for everything is found by deciding again with a newer one (rules/hints.py)."""
    if facts.os == "darwin":
        return (wording.NO_MPS_BUILD.format(system=catalog.nix_system(facts.os, facts.arch)),)
    why = []
    if not usable:
        why.append(wording.no_isa_fits(facts.cpu.model or facts.arch, facts.arch))
    if not gpus:
        if usable:
            why.append(wording.no_cpu_only_variant(sorted(usable)))
        return tuple(why)
    cuda_variants = [v for v in own_variants(facts, catalog, left) if v.cuda]
    per_gpu_ok = all(any_arch_for(catalog, cuda_variants, (gpu,)) for gpu in gpus)
    if len(gpus) > 1 and per_gpu_ok and not any_arch_for(catalog, cuda_variants, gpus):
        why.append(wording.gpus_conflict([(g.index, g.name, g.compute_capability) for g in gpus]))
    why += [
        wording.no_kernels_for(gpu.index, gpu.name, gpu.compute_capability)
        for gpu in gpus
        if not any_arch_for(catalog, cuda_variants, (gpu,))
    ]
    gpu_isas = {v.cpu_isa for v in cuda_variants if runs_on_all(catalog, v.gpu_arch, gpus) and v.cpu_isa}
    if gpu_isas and usable and not gpu_isas & usable:
        why.append(wording.gpu_builds_need(sorted(gpu_isas), sorted(usable)))
    why += undriven_gpus(facts.driver, gpus, catalog)
    if tegra_cuda_unknown(gpus, facts.driver, catalog) and not facts.driver_assumed:
        why.append(TEGRA_CUDA_UNKNOWN)
    return tuple(why)
