"""When no variant runs here: what the stages found that left nothing (the CPU, the GPUs, the driver, the pins)."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant._base.records import keyword_record
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.rules.compat import TEGRA_CUDA_UNKNOWN, runs_on_all, tegra_cuda_unknown, undriven_gpus
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Branch, Catalog, Variant


@keyword_record
class NothingFits:
    """What the stages found that left no variant: the findings in words, and what the hints read of them."""

    why: tuple[str, ...]
    gpus_conflict: bool = False  # each GPU has a variant, no variant has them all
    gpus_without_kernels: tuple[GpuFacts, ...] = ()
    undriven: tuple[str, ...] = ()  # a GPU the driver cannot drive at all
    jetson_cuda_unknown: bool = False
    cpu_only: tuple[Variant, ...] = ()  # CPU-only variants this CPU runs (with GPUs to serve: the --no-gpu hint)


def find(
    facts: HostFacts,
    catalog: Catalog,
    gpus: tuple[GpuFacts, ...],
    left: Sequence[Branch],
    usable: frozenset[str],
) -> NothingFits:
    """Each finding that left no variant, in the order a person checks them: CPU, GPUs, the CUDA builds' CPUs, the
    driver. A driver too old for everything is found by deciding again with a newer one (rules/hints.py)."""
    if facts.os == "darwin":
        return NothingFits(why=(recipe_wording.NO_MPS_BUILD.format(system=catalog.nix_system(facts.os, facts.arch)),))
    why = []
    if not usable:
        why.append(recipe_wording.no_isa_fits(facts.cpu.model or facts.arch, facts.arch))
    if not gpus:
        if usable:
            why.append(recipe_wording.no_cpu_only_variant(sorted(usable)))
        return NothingFits(why=tuple(why))
    system = catalog.nix_system(facts.os, facts.arch)
    own = [v for b in left for v in b.variants if v.platform == system]
    cuda_variants = [v for v in own if v.cuda]
    without = tuple(gpu for gpu in gpus if not _any_arch_for(catalog, cuda_variants, (gpu,)))
    conflict = len(gpus) > 1 and not without and not _any_arch_for(catalog, cuda_variants, gpus)
    if conflict:
        why.append(recipe_wording.gpus_conflict([(g.index, g.name, g.compute_capability) for g in gpus]))
    why += [recipe_wording.no_kernels_for(gpu.index, gpu.name, gpu.compute_capability) for gpu in without]
    gpu_isas = {v.cpu_isa for v in cuda_variants if runs_on_all(catalog, v.gpu_arch, gpus, v.cuda) and v.cpu_isa}
    if gpu_isas and usable and not gpu_isas & usable:
        why.append(recipe_wording.gpu_builds_need(sorted(gpu_isas), sorted(usable)))
    undriven = undriven_gpus(facts.driver, gpus, catalog)
    why += undriven
    jetson_unknown = tegra_cuda_unknown(gpus, facts.driver, catalog) and not facts.driver_assumed
    if jetson_unknown:
        why.append(TEGRA_CUDA_UNKNOWN)
    return NothingFits(
        why=tuple(why),
        gpus_conflict=conflict,
        gpus_without_kernels=without,
        undriven=undriven,
        jetson_cuda_unknown=jetson_unknown,
        cpu_only=tuple(v for v in own if v.gpu_arch is None and v.cpu_isa in usable),
    )


def _any_arch_for(catalog: Catalog, variants: Sequence[Variant], gpus: Sequence[GpuFacts]) -> bool:
    return any(runs_on_all(catalog, v.gpu_arch, gpus, v.cuda) for v in variants)
