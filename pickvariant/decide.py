"""The selection rules: a pure function from facts, catalog and options to a decision.

Nothing here looks at the machine. Every step records why; every alternative that
was turned down records why not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pickvariant.catalog import Branch, Catalog, GpuArch, Variant
from pickvariant.errors import BadInput
from pickvariant.facts import HostFacts
from pickvariant.gpu import GpuFacts, cuda_visible_count
from pickvariant.versions import ComputeCapability


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


def kernels_run_on(arch: GpuArch, capability: ComputeCapability, catalog: Catalog) -> str | None:
    """None when sm_XY machine code runs on `capability`, else why not (CUDA binary compatibility)."""
    built = arch.compute_capability
    if built.major != capability.major:
        return f"kernels for {built} do not run on {capability} (a different major version)"
    device_tegra = catalog.is_tegra(capability)
    if arch.tegra or device_tegra:
        if built != capability:
            kind = "an integrated Tegra GPU" if device_tegra else "a desktop GPU"
            return f"kernels for {built} do not run on {kind} of {capability} (no binary compatibility across Tegra and desktop, nor between Tegra GPUs)"
        return None
    if built.minor > capability.minor:
        return f"kernels for {built} do not run on the older {capability}"
    return None


def missing_flags(isa_requires: Sequence[str], flags: frozenset[str]) -> list[str]:
    return [flag for flag in isa_requires if flag not in flags]


def decide(facts: HostFacts, catalog: Catalog, options: Options = Options()) -> Decision:
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
        why = _driver_rejection(facts, branch) if targets else None
        if why:
            rejected.append(Rejection(f"branch {branch.name} (PyTorch {branch.torch}, CUDA {branch.cuda})", why))
        else:
            admissible_branches.append(branch)
    if targets and facts.driver_assumed:
        reasons.append("driver: none given, assumed new enough for every branch")
    elif targets and facts.driver and facts.driver.version:
        reasons.append(f"driver {facts.driver.version} can run {', '.join(b.name for b in admissible_branches) or 'no branch'}")

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

    # 5. Whole variants: a variant counts only if every part of it fits.
    def fits(variant: Variant) -> bool:
        if variant.cpu_isa not in usable_isas:
            return False
        if not targets:
            return variant.gpu_arch is None
        if variant.gpu_arch is None:
            return False
        arch = catalog.gpu_archs[variant.gpu_arch]
        return all(kernels_run_on(arch, gpu.compute_capability, catalog) is None for gpu in targets)

    branch_rank = {branch.name: rank for rank, branch in enumerate(catalog.branches)}

    def rank(variant: Variant) -> tuple[int, int, int, int]:
        capability = catalog.gpu_archs[variant.gpu_arch].compute_capability if variant.gpu_arch else ComputeCapability(0, 0)
        return (branch_rank[variant.branch], -capability.major, -capability.minor, isa_rank[variant.cpu_isa])

    candidates = sorted((v for branch in admissible_branches for v in branch.variants if fits(v)), key=rank)
    _explain_gpu_archs(catalog, targets, admissible_branches, rejected)

    if not candidates:
        return _no_variant(facts, catalog, options, targets, branches, usable_isas, tuple(reasons), rejected)

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
    reasons.append(
        f"CPU instruction set {isa.name}: every required flag is present ({' '.join(isa.requires)}); "
        f"workload {workload.name} ranks {' > '.join(i for i in workload.isa_preference if i in usable_isas)}"
    )
    for other in usable_isas - {chosen.cpu_isa}:
        same = [v for v in candidates if v.cpu_isa == other and v.branch == chosen.branch and v.gpu_arch == chosen.gpu_arch]
        if same:
            rejected.append(Rejection(same[0].package, f"fits this machine, but workload {workload.name} prefers {chosen.cpu_isa}"))
        else:
            rejected.append(Rejection(f"CPU instruction set {other}", f"fits this CPU, but there is no {chosen.gpu_arch or 'CPU-only'} variant of it on branch {chosen.branch}"))
    return Decision(chosen, branch, tuple(reasons), tuple(_dedupe(rejected)), (), targets)


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
        if options.torch and options.torch != branch.torch:
            rejected.append(Rejection(f"branch {branch.name}", f"ships PyTorch {branch.torch}, not the pinned --torch {options.torch}"))
        elif options.cuda and options.cuda != branch.cuda:
            rejected.append(Rejection(f"branch {branch.name}", f"uses CUDA {branch.cuda}, not the pinned --cuda {options.cuda}"))
        else:
            branches.append(branch)
    if not branches:
        known = "; ".join(f"{b.name}: PyTorch {b.torch} with CUDA {b.cuda}" for b in catalog.branches)
        raise BadInput(f"no branch matches the pins (--torch {options.torch or 'any'}, --cuda {options.cuda or 'any'}); the catalog has {known}")
    return branches


def _driver_rejection(facts: HostFacts, branch: Branch) -> str | None:
    if facts.driver is None or facts.driver.version is None:
        return None
    if facts.driver.version < branch.min_driver:
        return f"driver {facts.driver.version} is older than {branch.min_driver}, the minimum for CUDA {branch.cuda}"
    return None


def _explain_gpu_archs(catalog: Catalog, targets: tuple[GpuFacts, ...], branches: list[Branch], rejected: list[Rejection]) -> None:
    for arch in catalog.gpu_archs.values():
        for gpu in targets:
            why = kernels_run_on(arch, gpu.compute_capability, catalog)
            if why:
                rejected.append(Rejection(f"GPU architecture {arch.name}", f"GPU {gpu.index}: {why}"))
                break


def _why_branch_has_nothing(branch: Branch, targets: tuple[GpuFacts, ...], usable_isas: set[str], catalog: Catalog, arch_name: str) -> str:
    if not targets:
        return "has no CPU-only variant"
    compatible = {v.gpu_arch for v in branch.variants if v.gpu_arch and all(kernels_run_on(catalog.gpu_archs[v.gpu_arch], g.compute_capability, catalog) is None for g in targets)}
    if not compatible:
        return "builds no GPU architecture whose kernels run on " + ", ".join(f"{g.compute_capability}" for g in targets)
    with_isa = {v.cpu_isa for v in branch.variants if v.gpu_arch in compatible}
    return f"its {', '.join(sorted(compatible))} variants exist only for {', '.join(sorted(with_isa))}, none of which this {arch_name} CPU can run"


def _no_variant(
    facts: HostFacts, catalog: Catalog, options: Options, targets: tuple[GpuFacts, ...], branches: list[Branch],
    usable_isas: set[str], reasons: tuple[str, ...], rejected: list[Rejection],
) -> Decision:
    why: list[str] = []
    hints: list[str] = []
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
                newest = max(arch.compute_capability for arch in catalog.gpu_archs.values())
                if gpu.compute_capability > newest:
                    hints.append(
                        f"compute capability {gpu.compute_capability} is newer than every GPU architecture of this catalog (newest {newest}): "
                        "a newer pickvariant, or a site catalog that has it (PICKVARIANT_CATALOG), may offer a variant"
                    )
                for arch in catalog.gpu_archs.values():
                    if arch.reported_before_cuda_13 == gpu.compute_capability:
                        newest = catalog.branches[0]
                        hints.append(
                            f"{arch.description} reports {gpu.compute_capability} under CUDA 12 drivers and {arch.compute_capability} under CUDA 13: "
                            f"a driver >= {newest.min_driver} makes the {arch.name} variants usable"
                        )
        gpu_isas = {v.cpu_isa for b in branches for v in b.variants if v.gpu_arch and _runs_on_all(catalog, v.gpu_arch, targets)}
        if gpu_isas and usable_isas and not gpu_isas & usable_isas:
            platform_isas = sorted(i for i in gpu_isas if catalog.isas[i].platform == facts.arch)
            why.append(
                f"the variants with kernels for these GPUs are built for {', '.join(platform_isas) or 'other CPU architectures'}, "
                f"and this CPU can run only {', '.join(sorted(usable_isas))}"
            )
        relaxed = _candidates_ignoring_driver(facts, catalog, branches, targets, usable_isas)
        if relaxed and facts.driver and facts.driver.version:
            branch = catalog.branch(relaxed.branch)
            why.append(f"driver {facts.driver.version} is too old for every branch that has a variant for this machine")
            hints.append(f"a driver >= {branch.min_driver} (CUDA {branch.cuda}) would allow {relaxed.package}")
        cpu_only = [v for b in branches for v in b.variants if v.gpu_arch is None and v.cpu_isa in usable_isas]
        if cpu_only:
            best = sorted(cpu_only, key=lambda v: catalog.workloads[options.workload].isa_preference.index(v.cpu_isa))[0]
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


def _runs_on_all(catalog: Catalog, gpu_arch: str, gpus: Sequence[GpuFacts]) -> bool:
    return all(kernels_run_on(catalog.gpu_archs[gpu_arch], g.compute_capability, catalog) is None for g in gpus)


def _any_arch_for(catalog: Catalog, branches: list[Branch], gpus: Sequence[GpuFacts]) -> bool:
    return any(
        v.gpu_arch and all(kernels_run_on(catalog.gpu_archs[v.gpu_arch], g.compute_capability, catalog) is None for g in gpus)
        for b in branches for v in b.variants
    )


def _candidates_ignoring_driver(
    facts: HostFacts, catalog: Catalog, branches: list[Branch], targets: tuple[GpuFacts, ...], usable_isas: set[str]
) -> Variant | None:
    # The smallest driver upgrade first: the lowest minimum driver, then the newest branch.
    for branch in sorted(branches, key=lambda b: b.min_driver):
        for variant in branch.variants:
            if variant.gpu_arch and variant.cpu_isa in usable_isas and all(
                kernels_run_on(catalog.gpu_archs[variant.gpu_arch], g.compute_capability, catalog) is None for g in targets
            ):
                return variant
    return None


def _dedupe(rejected: list[Rejection]) -> list[Rejection]:
    return list(dict.fromkeys(rejected))
