"""The selection rules: a pure function from facts, catalog and options to a decision.

Nothing here looks at the machine. Every step records why; every alternative that
was turned down records why not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pickvariant.catalog import Branch, Catalog, Variant
from pickvariant.compat import (
    TEGRA_DRIVER_RULE, driver_rejection, judged_by_cuda_version, kernels_run_on, missing_flags, runs_on_all, why_not,
)
from pickvariant.errors import BadInput
from pickvariant.facts import HostFacts
from pickvariant.gpu import DriverFacts, GpuFacts, cuda_visible_count
from pickvariant.versions import ComputeCapability, cuda_version_key, release_matches


@dataclass(frozen=True)
class Options:
    workload: str = "general"
    torch: str | None = None
    cuda: str | None = None
    gpu_index: int | None = None


@dataclass(frozen=True)
class Rejection:
    choice: str
    why: str


@dataclass(frozen=True)
class Decision:
    variant: Variant | None
    branch: Branch | None
    reasons: tuple[str, ...]
    rejected: tuple[Rejection, ...]
    hints: tuple[str, ...] = ()
    targets: tuple[GpuFacts, ...] = ()


def decide(facts: HostFacts, catalog: Catalog, options: Options = Options()) -> Decision:
    return _decide(facts, catalog, options, with_hints=True)


def _decide(facts: HostFacts, catalog: Catalog, options: Options, with_hints: bool) -> Decision:
    if options.workload not in catalog.workloads:
        raise BadInput(f"unknown workload {options.workload!r}; choose one of {', '.join(catalog.workloads)}")
    reasons: list[str] = []
    rejected: list[Rejection] = []

    # 1. Platform.
    platform = f"{facts.os}/{facts.arch}"
    if facts.os != "linux" or facts.arch not in catalog.nix_systems:
        supported = ", ".join(f"linux/{arch}" for arch in catalog.nix_systems)
        return Decision(None, None, (f"platform {platform} is not supported: every variant is built for {supported}",), (), ())
    reasons.append(f"platform {platform} is supported")

    if facts.gpu_inconclusive:
        return Decision(
            None, None,
            tuple(reasons) + ("GPU detection was inconclusive, so no variant can be shown to have kernels for this machine's GPUs",),
            (), ("describe the GPUs with --gpu CC (and --driver VERSION), or pass --no-gpu for a CPU-only build",),
        )

    # 2. Which GPUs the variant must run on.
    targets = _targets(facts, options)
    for gpu in targets:
        kind = "integrated Tegra" if catalog.is_tegra(gpu.compute_capability) else "desktop"
        reasons.append(f"GPU {gpu.index}: {gpu.name}, compute capability {gpu.compute_capability} ({kind})")
    if not targets:
        reasons.append("no GPU: choosing among CPU-only builds")
    hidden = _hidden_by_cuda_visible_devices(facts)
    if hidden:
        reasons.append(hidden)

    # 3. Branches: pins, then the driver.
    branches = _pinned_branches(catalog, options, rejected)
    admissible_branches = []
    for branch in branches:
        why = driver_rejection(facts.driver, branch, targets, catalog)
        if why:
            rejected.append(Rejection(f"branch {branch.name} (PyTorch {branch.torch}, CUDA {branch.cuda})", why))
        else:
            admissible_branches.append(branch)
    if targets and facts.driver_assumed:
        reasons.append("driver: none given, assumed new enough for every branch")
    elif targets and facts.driver is not None:
        reasons.append(_driver_reason(facts.driver, targets, catalog, branches, admissible_branches))

    # 4. CPU instruction sets.
    workload = catalog.workloads[options.workload]
    isa_rank = {name: rank for rank, name in enumerate(workload.isa_preference)}
    usable_isas: set[str] = set()
    for isa in catalog.isas.values():
        if isa.platform != facts.arch:
            continue
        missing = missing_flags(isa.requires, facts.cpu.flags)
        if missing:
            rejected.append(Rejection(f"CPU instruction set {isa.name}", f"this CPU lacks {', '.join(missing)}: the build would crash with an illegal instruction"))
        else:
            usable_isas.add(isa.name)

    # 5. Whole variants: a variant counts only if every part of it fits (the one predicate, compat.why_not).
    branch_rank = {branch.name: rank for rank, branch in enumerate(catalog.branches)}

    def rank(variant: Variant) -> tuple[int, int, int, int]:
        capability = catalog.gpu_archs[variant.gpu_arch].compute_capability if variant.gpu_arch else ComputeCapability(0, 0)
        return (branch_rank[variant.branch], -capability.major, -capability.minor, isa_rank[variant.cpu_isa])

    # The ISA test is a cheap first cut (usable_isas is why_not's flag rule, already applied per set);
    # why_not then has the last word on each variant that passes it.
    candidates = sorted(
        (v for branch in admissible_branches for v in branch.variants
         if v.cpu_isa in usable_isas and not why_not(v, facts, catalog, targets)),
        key=rank,
    )
    _explain_gpu_archs(catalog, targets, rejected)

    if not candidates:
        return _no_variant(facts, catalog, options, targets, branches, usable_isas, tuple(reasons), rejected, with_hints)

    chosen = candidates[0]
    branch = catalog.branch(chosen.branch)
    newer = [b.name for b in admissible_branches if branch_rank[b.name] < branch_rank[branch.name]]
    branch_why = f"branch {branch.name} (PyTorch {branch.torch}, CUDA {branch.cuda}): the newest admissible branch with a variant for this machine"
    if newer:
        branch_why += f" ({', '.join(newer)} {'has' if len(newer) == 1 else 'have'} none)"
        for name in newer:
            rejected.append(Rejection(f"branch {name}", _why_branch_has_nothing(catalog.branch(name), targets, usable_isas, catalog, facts.arch)))
    reasons.append(branch_why)
    if chosen.gpu_arch:
        arch = catalog.gpu_archs[chosen.gpu_arch]
        exact = all(gpu.compute_capability == arch.compute_capability for gpu in targets)
        if exact:
            reasons.append(f"GPU architecture {arch.name}: exact match for compute capability {arch.compute_capability} ({arch.description})")
        else:
            reasons.append(
                f"GPU architecture {arch.name}: the highest architecture with a variant whose kernels run on "
                + ", ".join(f"GPU {gpu.index} ({gpu.compute_capability})" for gpu in targets)
            )
    isa = catalog.isas[chosen.cpu_isa]
    ranked_usable = [name for name in workload.isa_preference if name in usable_isas]
    reasons.append(
        f"CPU instruction set {isa.name}: every required flag is present ({' '.join(isa.requires)}); "
        f"workload {workload.name} ranks {' > '.join(ranked_usable)}"
    )
    for other in ranked_usable:
        if other == chosen.cpu_isa:
            continue
        same = [v for v in candidates if v.cpu_isa == other and v.branch == chosen.branch and v.gpu_arch == chosen.gpu_arch]
        if same:
            rejected.append(Rejection(same[0].package, f"fits this machine, but workload {workload.name} prefers {chosen.cpu_isa}"))
        else:
            rejected.append(Rejection(f"CPU instruction set {other}", f"fits this CPU, but there is no {chosen.gpu_arch or 'CPU-only'} variant of it on branch {chosen.branch}"))
    return Decision(chosen, branch, tuple(reasons), tuple(_dedupe(rejected)), (), targets)


def _driver_reason(driver: DriverFacts, targets: tuple[GpuFacts, ...], catalog: Catalog, branches: list[Branch], admissible: list[Branch]) -> str:
    label = f"driver {driver.version or 'of unknown version'}" + (f" (CUDA {driver.cuda})" if driver.cuda else "")
    rule = f" ({TEGRA_DRIVER_RULE})" if judged_by_cuda_version(targets, driver, catalog) else ""
    if admissible:
        return f"{label} can run {', '.join(b.name for b in admissible)}{rule}"
    if len(branches) < len(catalog.branches):
        # The pins removed branches: "can run no branch" would blame the driver for the user's own choice.
        unpinned = [b.name for b in catalog.branches if not driver_rejection(driver, b, targets, catalog)]
        otherwise = f"; without the pins it could run {', '.join(unpinned)}" if unpinned else ""
        return f"{label} can run none of the branches the pins leave ({', '.join(b.name for b in branches)}){otherwise}{rule}"
    return f"{label} can run no branch of the catalog{rule}"


def _targets(facts: HostFacts, options: Options) -> tuple[GpuFacts, ...]:
    if options.gpu_index is None:
        return facts.gpus
    for gpu in facts.gpus:
        if gpu.index == options.gpu_index:
            return (gpu,)
    present = ", ".join(str(gpu.index) for gpu in facts.gpus) or "none"
    raise BadInput(f"--gpu-index {options.gpu_index}: no such GPU (GPU indices present: {present})")


def _hidden_by_cuda_visible_devices(facts: HostFacts) -> str | None:
    # A build that covers every GPU stays right when a job is given other GPUs later,
    # so the variable is explained, not obeyed.
    value = facts.cuda_visible_devices
    if value is None or not facts.gpus:
        return None
    visible = cuda_visible_count(value, len(facts.gpus))
    if visible >= len(facts.gpus):
        return None
    if len(facts.gpus) == 1:
        return f"CUDA_VISIBLE_DEVICES={value!r} hides the GPU from CUDA programs; the choice still covers it, so it stays right when the variable changes"
    return (
        f"CUDA_VISIBLE_DEVICES={value!r} lets CUDA programs see {visible} of the {len(facts.gpus)} GPUs; "
        "the choice still covers all of them, so it stays right when the variable changes (--gpu-index N decides for one GPU)"
    )


def _pinned_branches(catalog: Catalog, options: Options, rejected: list[Rejection]) -> list[Branch]:
    branches = []
    for branch in catalog.branches:
        if options.torch and not release_matches(options.torch, branch.torch, "--torch"):
            rejected.append(Rejection(f"branch {branch.name}", f"ships PyTorch {branch.torch}, not the pinned --torch {options.torch}"))
        elif options.cuda and not release_matches(options.cuda, branch.cuda, "--cuda"):
            rejected.append(Rejection(f"branch {branch.name}", f"uses CUDA {branch.cuda}, not the pinned --cuda {options.cuda}"))
        else:
            branches.append(branch)
    if not branches:
        known = "; ".join(f"{b.name}: PyTorch {b.torch} with CUDA {b.cuda}" for b in catalog.branches)
        raise BadInput(f"no branch matches the pins (--torch {options.torch or 'any'}, --cuda {options.cuda or 'any'}); the catalog has {known}")
    return branches


def _explain_gpu_archs(catalog: Catalog, targets: tuple[GpuFacts, ...], rejected: list[Rejection]) -> None:
    for arch in catalog.gpu_archs.values():
        for gpu in targets:
            why = kernels_run_on(arch, gpu.compute_capability, catalog)
            if why:
                rejected.append(Rejection(f"GPU architecture {arch.name}", f"GPU {gpu.index}: {why}"))
                break


def _why_branch_has_nothing(branch: Branch, targets: tuple[GpuFacts, ...], usable_isas: set[str], catalog: Catalog, arch_name: str) -> str:
    if not targets:
        return "has no CPU-only variant"
    compatible = {v.gpu_arch for v in branch.variants if v.gpu_arch and runs_on_all(catalog, v.gpu_arch, targets)}
    if not compatible:
        return "builds no GPU architecture whose kernels run on " + ", ".join(f"{g.compute_capability}" for g in targets)
    with_isa = {v.cpu_isa for v in branch.variants if v.gpu_arch in compatible}
    return f"its {', '.join(sorted(compatible))} variants exist only for {', '.join(sorted(with_isa))}, none of which this {arch_name} CPU can run"


def _no_variant(
    facts: HostFacts, catalog: Catalog, options: Options, targets: tuple[GpuFacts, ...], branches: list[Branch],
    usable_isas: set[str], reasons: tuple[str, ...], rejected: list[Rejection], with_hints: bool,
) -> Decision:
    why: list[str] = []
    hints: list[str] = []
    preference = catalog.workloads[options.workload].isa_preference
    if not usable_isas:
        why.append(f"this CPU ({facts.cpu.model or facts.arch}) has the flags of no {facts.arch} instruction set in the catalog")
        if not facts.cpu.flags:
            hints.append("no CPU flags are known (see the notes): describe the CPU with --cpuinfo FILE, a copy of its /proc/cpuinfo")
    if targets:
        per_gpu_ok = all(_any_arch_for(catalog, branches, (gpu,)) for gpu in targets)
        if len(targets) > 1 and per_gpu_ok and not _any_arch_for(catalog, branches, targets):
            listing = ", ".join(f"GPU {g.index} ({g.name}, {g.compute_capability})" for g in targets)
            why.append(f"the GPUs conflict: no variant has kernels for all of {listing}")
            hints.append("target one GPU with --gpu-index N")
        for gpu in targets:
            if not _any_arch_for(catalog, branches, (gpu,)):
                why.append(f"no variant has kernels for GPU {gpu.index} ({gpu.name}, compute capability {gpu.compute_capability})")
                hints.extend(_newer_gpu_hints(facts, catalog, gpu))
        gpu_isas = {v.cpu_isa for b in branches for v in b.variants if v.gpu_arch and runs_on_all(catalog, v.gpu_arch, targets)}
        if gpu_isas and usable_isas and not gpu_isas & usable_isas:
            platform_isas = sorted(i for i in gpu_isas if catalog.isas[i].platform == facts.arch)
            why.append(
                f"the variants with kernels for these GPUs are built for {', '.join(platform_isas) or 'other CPU architectures'}, "
                f"and this CPU can run only {', '.join(sorted(usable_isas))}"
            )
        upgrade = _driver_upgrade(facts, catalog, options, branches, targets) if with_hints else None
        if upgrade is not None:
            branch, variant = upgrade
            shown = facts.driver.version if facts.driver and facts.driver.version else f"for CUDA {facts.driver.cuda if facts.driver else '?'}"
            why.append(f"driver {shown} is too old for every branch that has a variant for this machine")
            if judged_by_cuda_version(targets, facts.driver, catalog):
                hints.append(f"a Jetson driver (JetPack) that supports CUDA {branch.cuda} would allow {variant.package}")
            else:
                hints.append(f"a driver >= {branch.min_driver} (CUDA {branch.cuda}) would allow {variant.package}")
        cpu_only = [v for b in branches for v in b.variants if v.gpu_arch is None and v.cpu_isa in usable_isas]
        if cpu_only:
            best = min(cpu_only, key=lambda v: preference.index(v.cpu_isa))
            hints.append(f"--no-gpu would give {best.package} (CPU only: the GPU would go unused)")
    else:
        cpu_branches = [b.name for b in catalog.branches if any(v.gpu_arch is None for v in b.variants)]
        if usable_isas:
            why.append(f"there is no CPU-only variant for {', '.join(sorted(usable_isas))} on the admissible branches (CPU-only builds come from {', '.join(cpu_branches)})")
    if options.torch or options.cuda:
        hints.append("drop --torch/--cuda to consider every branch")
    if not why:
        why.append("no variant combines an admissible branch, a GPU architecture with kernels for this machine and a CPU instruction set it can run")
    return Decision(None, None, reasons + tuple(why), tuple(_dedupe(rejected)), tuple(dict.fromkeys(hints)), targets)


def _newer_gpu_hints(facts: HostFacts, catalog: Catalog, gpu: GpuFacts) -> list[str]:
    hints = []
    newest = max(arch.compute_capability for arch in catalog.gpu_archs.values())
    if gpu.compute_capability > newest:
        hints.append(
            f"compute capability {gpu.compute_capability} is newer than every GPU architecture of this catalog (newest {newest}): "
            "a newer pickvariant, or a site catalog that has it (PICKVARIANT_CATALOG), may offer a variant"
        )
    for arch in catalog.gpu_archs.values():
        if arch.reported_before_cuda_13 != gpu.compute_capability:
            continue
        builds = next((b for b in catalog.branches if any(v.gpu_arch == arch.name for v in b.variants)), None)
        if builds is None:
            continue
        renamed = f"{arch.description} reports {gpu.compute_capability} under CUDA 12 drivers and {arch.compute_capability} under CUDA 13"
        as_renamed = (replace(gpu, compute_capability=arch.compute_capability),)
        if facts.driver_assumed or facts.driver is None or driver_rejection(facts.driver, builds, as_renamed, catalog):
            hints.append(f"{renamed}: a driver >= {builds.min_driver} (CUDA {builds.cuda}) makes the {arch.name} variants usable")
        else:
            # The user already has that driver: telling them to get it would send them in circles.
            hints.append(
                f"{renamed}, and driver {facts.driver.version or facts.driver.cuda} already runs CUDA {builds.cuda}: "
                f"check the stated compute capability (--gpu {arch.compute_capability})"
            )
    return hints


def _driver_upgrade(
    facts: HostFacts, catalog: Catalog, options: Options, branches: list[Branch], targets: tuple[GpuFacts, ...]
) -> tuple[Branch, Variant] | None:
    """The smallest driver upgrade that gives a variant, and the variant the rules would then pick."""
    driver = facts.driver
    if driver is None or facts.driver_assumed:
        return None
    by_cuda = judged_by_cuda_version(targets, driver, catalog)
    too_old = [b for b in branches if driver_rejection(driver, b, targets, catalog)]
    for branch in sorted(too_old, key=lambda b: cuda_version_key(b.cuda) if by_cuda else b.min_driver.parts):
        upgraded = DriverFacts(driver.version, branch.cuda) if by_cuda else DriverFacts(branch.min_driver, branch.cuda)
        # Decide again rather than guess: the hint must name what the rules would really choose.
        decision = _decide(replace(facts, driver=upgraded), catalog, options, with_hints=False)
        if decision.variant is not None and decision.branch is not None:
            return decision.branch, decision.variant
    return None


def _any_arch_for(catalog: Catalog, branches: list[Branch], gpus: Sequence[GpuFacts]) -> bool:
    return any(v.gpu_arch and runs_on_all(catalog, v.gpu_arch, gpus) for b in branches for v in b.variants)


def _dedupe(rejected: list[Rejection]) -> list[Rejection]:
    return list(dict.fromkeys(rejected))
