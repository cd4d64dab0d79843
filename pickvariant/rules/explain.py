"""The decision's explanation: why each other branch, architecture and instruction set lost, and what
would help when nothing fits (the hints re-decide with the change they propose, so they never promise
what the rules would not choose)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from pickvariant._base import settings
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant._base.versions import version_key
from pickvariant.catalog.model import Branch, Catalog, CudaLine, GpuArch, Variant
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules.compat import (
    TEGRA_CUDA_UNKNOWN,
    driver_rejection,
    for_cuda,
    judged_by_cuda_version,
    kernels_run_on,
    runs_on_all,
    tegra_cuda_unknown,
    undriven_gpus,
)
from pickvariant.rules.decision import Decision, Kind, Rejection, dedupe

# decide's own entry, passed in so that the explanation can re-decide without importing decide.
Redecide = Callable[[HostFacts, Catalog, Request, bool], Decision]


def unsupported_platform(facts: HostFacts, built_for: list[str]) -> str:
    platform = f"{facts.os}/{facts.arch}"
    if facts.os == "darwin" and facts.arch == "x86_64":
        return f"platform {platform} (an Intel Mac) is not supported: macOS builds are for Apple Silicon only (aarch64-darwin, MPS); the catalog builds {', '.join(built_for)}"
    return f"platform {platform} is not supported: every variant is built for one of {', '.join(built_for)}"


def branch_reason(chosen: Variant, branch: Branch, line: CudaLine | None, options: Request) -> str:
    parts = [f"PyTorch {chosen.torch}"]
    if line is not None:
        parts.append(f"CUDA {line.cuda} (nixpkgs {line.nixpkgs_rev[:7]}, {line.cuda_packages})")
    parts.append(f"Python {chosen.python}")
    if options.branch:
        why = "named with --branch"
    elif chosen.is_mps:
        why = "the newest PyTorch, then the preferred Python, that has an MPS build"
    elif line is None:
        why = "the newest PyTorch, then the preferred Python, that has a CPU-only variant this CPU can run"
    else:
        why = "the newest PyTorch, then the newest CUDA line the driver can run, then the preferred Python, that has a variant for this machine"
    return f"branch {branch.name}: {', '.join(parts)}: {why}"


def explain_other_branches(
    catalog: Catalog,
    chosen: Variant,
    branches: Sequence[Branch],
    candidates: list[Variant],
    targets: tuple[GpuFacts, ...],
    usable_isas: set[str],
    facts: HostFacts,
    rejected: list[Rejection],
    companions: Sequence[str] = (),
    passed_over: Mapping[tuple[str, str], str] = MappingProxyType({}),
) -> None:
    """Say why each newer or otherwise preferred branch lost: the question users ask first. `passed_over`: the
    variants a set could not be on, with why (rules/pairing.py found it)."""
    best_of_branch: dict[str, Variant] = {}
    for variant in candidates:  # best first, so the first of each branch is its best
        best_of_branch.setdefault(variant.branch, variant)
    ahead = set(candidates[: candidates.index(chosen)]) if companions and chosen in candidates else set()
    for branch in branches:
        if branch.name == chosen.branch:
            continue
        best = best_of_branch.get(branch.name)
        if best is not None:
            if best in ahead:  # it ranks first for torch alone: the companions decided
                rejected.append(
                    Rejection(
                        f"branch {branch.name}",
                        f"fits for PyTorch alone (e.g. {best.package}), but "
                        + passed_over.get((best.branch, best.package), "the companions make no set on it"),
                        Kind.NO_SET,
                    )
                )
            elif version_key(best.torch) < version_key(chosen.torch):
                rejected.append(
                    Rejection(
                        f"branch {branch.name}",
                        f"fits (e.g. {best.package}), but ships the older PyTorch {best.torch}",
                        Kind.RANKED_LOWER,
                    )
                )
            elif best.cuda and chosen.cuda and version_key(best.cuda) < version_key(chosen.cuda):
                rejected.append(
                    Rejection(
                        f"branch {branch.name}",
                        f"fits, but its newest fitting CUDA line is {best.cuda}",
                        Kind.RANKED_LOWER,
                    )
                )
            else:
                rejected.append(
                    Rejection(
                        f"branch {branch.name}",
                        f"fits (e.g. {best.package}), but Python {best.python} ranks after {chosen.python}",
                        Kind.RANKED_LOWER,
                    )
                )
            continue
        # Nothing of it fits: that is the reason, whatever PyTorch it ships.
        rejected.append(
            Rejection(
                f"branch {branch.name}",
                why_branch_has_nothing(branch, targets, usable_isas, catalog, facts),
                Kind.NOT_BUILT,
            )
        )


def explain_gpu_archs(
    catalog: Catalog, targets: tuple[GpuFacts, ...], rejected: list[Rejection], chosen: str | None = None
) -> None:
    """Every architecture of the catalog but the chosen one, with why it lost: no kernels for a GPU, or outranked."""
    for arch in catalog.gpu_archs.values():
        if arch.name == chosen:
            continue
        for gpu in targets:
            why = kernels_run_on(arch, gpu.compute_capability, catalog)
            if why:
                rejected.append(Rejection(f"GPU architecture {arch.name}", f"GPU {gpu.index}: {why}", Kind.NO_KERNELS))
                break
        else:
            if chosen is not None:
                better = catalog.gpu_archs[chosen]
                runs_on = ", ".join(f"{gpu.compute_capability}" for gpu in dict.fromkeys(targets))
                rejected.append(
                    Rejection(
                        f"GPU architecture {arch.name}",
                        f"its kernels run on {runs_on} too, but {better.name} is the higher architecture and has a variant here (native kernels, newer instructions)"
                        if better.compute_capability > arch.compute_capability
                        else f"its kernels run on {runs_on} too, but no variant of it fits as well as {better.name}'s",
                        Kind.RANKED_LOWER,
                    )
                )


def why_branch_has_nothing(
    branch: Branch, targets: tuple[GpuFacts, ...], usable_isas: set[str], catalog: Catalog, facts: HostFacts
) -> str:
    system = catalog.nix_system(facts.os, facts.arch)
    own = [v for v in branch.variants if v.platform == system]
    if not own:
        return f"builds nothing for {system}"
    if facts.os == "darwin":
        return "has no MPS build"
    if not targets:
        return "has no CPU-only variant for " + (", ".join(sorted(usable_isas)) or f"this {facts.arch} CPU")
    compatible = {v.gpu_arch for v in own if runs_on_all(catalog, v.gpu_arch, targets)}
    if not compatible:
        wanted = ", ".join(sorted({gpu.compute_capability.sm.upper() for gpu in targets}))
        return (
            f"no {wanted} build (nor one whose kernels run on "
            + ", ".join(f"{g.compute_capability}" for g in targets)
            + ")"
        )
    with_isa = {v.cpu_isa for v in own if v.gpu_arch in compatible and v.cpu_isa}
    if not with_isa & usable_isas:
        return f"its {', '.join(sorted(c for c in compatible if c))} variants exist only for {', '.join(sorted(i for i in with_isa if i))}, none of which this CPU can run"
    lines = sorted({v.cuda for v in own if v.gpu_arch in compatible and v.cuda}, key=version_key)
    return f"its fitting variants are on CUDA {', '.join(lines)}, which the driver cannot run"


def no_variant(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    targets: tuple[GpuFacts, ...],
    branches: Sequence[Branch],
    usable_isas: set[str],
    reasons: tuple[str, ...],
    rejected: list[Rejection],
    with_hints: bool,
    redecide: Redecide,
) -> Decision:
    why: list[str] = []
    hints: list[str] = []
    preference = catalog.workloads[options.workload].isa_preference
    system = catalog.nix_system(facts.os, facts.arch)
    own = [v for b in branches for v in b.variants if v.platform == system]
    for branch in branches:
        rejected.append(
            Rejection(
                f"branch {branch.name}",
                why_branch_has_nothing(branch, targets, usable_isas, catalog, facts),
                Kind.NOT_BUILT,
            )
        )
    if facts.os == "darwin":
        why.append(f"no branch left by the pins has an MPS build for {system}")
        if options.torch or options.python or options.branch:
            hints.append("drop --torch/--python-version/--branch to consider every branch")
        return Decision(None, None, reasons + tuple(why), tuple(dedupe(rejected)), tuple(dict.fromkeys(hints)), targets)
    if not usable_isas:
        why.append(
            f"this CPU ({facts.cpu.model or facts.arch}) has the flags of no {facts.arch} instruction set in the catalog"
        )
        if not facts.cpu.flags:
            hints.append(
                "no CPU flags are known (see the notes): describe the CPU with --cpuinfo FILE, a copy of its /proc/cpuinfo"
            )
    if targets:
        cuda_variants = [v for v in own if v.cuda]
        per_gpu_ok = all(any_arch_for(catalog, cuda_variants, (gpu,)) for gpu in targets)
        if len(targets) > 1 and per_gpu_ok and not any_arch_for(catalog, cuda_variants, targets):
            listing = ", ".join(f"GPU {g.index} ({g.name}, {g.compute_capability})" for g in targets)
            why.append(f"the GPUs conflict: no variant has kernels for all of {listing}")
            hints.append("target one GPU with --gpu-index N")
        for gpu in targets:
            if not any_arch_for(catalog, cuda_variants, (gpu,)):
                why.append(
                    f"no variant has kernels for GPU {gpu.index} ({gpu.name}, compute capability {gpu.compute_capability})"
                )
                hints.extend(newer_gpu_hints(facts, catalog, gpu))
        gpu_isas = {v.cpu_isa for v in cuda_variants if runs_on_all(catalog, v.gpu_arch, targets) and v.cpu_isa}
        if gpu_isas and usable_isas and not gpu_isas & usable_isas:
            why.append(
                f"the variants with kernels for these GPUs are built for {', '.join(sorted(gpu_isas))}, "
                f"and this CPU can run only {', '.join(sorted(usable_isas))}"
            )
        undriven = undriven_gpus(facts.driver, targets, catalog)
        why.extend(undriven)
        if tegra_cuda_unknown(targets, facts.driver, catalog) and not facts.driver_assumed:
            why.append(TEGRA_CUDA_UNKNOWN)
            hints.append(
                f"state the CUDA version the Jetson's driver reports with --driver-cuda X.Y (env {settings.DRIVER_CUDA})"
            )
        upgrade = driver_upgrade(facts, catalog, options, branches, targets, redecide) if with_hints else None
        if upgrade is not None:
            line, variant, driver = upgrade
            if not undriven:
                shown = (
                    facts.driver.version
                    if facts.driver and facts.driver.version
                    else f"for CUDA {facts.driver.cuda if facts.driver else '?'}"
                )
                why.append(f"driver {shown} is too old for every CUDA line that has a variant for this machine")
            if judged_by_cuda_version(targets, facts.driver, catalog):
                hints.append(f"a Jetson driver (JetPack) that supports CUDA {line.cuda} would allow {variant.label}")
            elif facts.driver and facts.driver.version and driver.version and driver.version < facts.driver.version:
                last = _last_branch(catalog, targets)
                within = f"of branch R{last} or older, " if last is not None else ""
                hints.append(
                    f"a driver {within}>= {driver.version} ({for_cuda(catalog, line.cuda, driver.version)}), would allow {variant.label}"
                )
            elif driver.version is not None and len(driver.version.parts) == 1:  # a branch: any of its releases
                hints.append(
                    f"an R{driver.version} driver or newer ({for_cuda(catalog, line.cuda, None)}) would allow {variant.label}"
                )
            else:
                hints.append(
                    f"a driver >= {driver.version} ({for_cuda(catalog, line.cuda, driver.version)}) would allow {variant.label}"
                )
        cpu_only = [v for v in own if v.gpu_arch is None and v.cpu_isa in usable_isas]
        if cpu_only:
            best = min(
                cpu_only, key=lambda v: (tuple(-p for p in version_key(v.torch)), preference.index(v.cpu_isa or ""))
            )
            hints.append(f"--no-gpu would give {best.label} (CPU only: the GPU would go unused)")
    elif usable_isas:
        why.append(f"there is no CPU-only variant for {', '.join(sorted(usable_isas))} on the branches the pins leave")
    if options.torch or options.cuda or options.python or options.branch:
        hints.append("drop --torch/--cuda/--python-version/--branch to consider every branch")
    if not why:
        why.append(
            "no variant combines an admissible branch and CUDA line, a GPU architecture with kernels for this machine and a CPU instruction set it can run"
        )
    return Decision(None, None, reasons + tuple(why), tuple(dedupe(rejected)), tuple(dict.fromkeys(hints)), targets)


def newer_gpu_hints(facts: HostFacts, catalog: Catalog, gpu: GpuFacts) -> list[str]:
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
        builds = [catalog.cuda_line(v) for v in catalog.variants if v.gpu_arch == arch.name]
        # Lines of one minimum driver (13.0 and 13.1) are ordered by release too: a set's order is the hash seed's.
        lines = sorted(
            {line for line in builds if line is not None},
            key=lambda line: (line.min_driver.parts, version_key(line.cuda)),
        )
        if not lines:
            continue
        line = lines[0]
        renamed = f"{arch.description} reports {gpu.compute_capability} under CUDA 12 drivers and {arch.compute_capability} under CUDA 13"
        as_renamed = (replace(gpu, compute_capability=arch.compute_capability),)
        if facts.driver_assumed or facts.driver is None or driver_rejection(facts.driver, line, as_renamed, catalog):
            driver = (
                f"a Jetson driver (JetPack) that supports CUDA {line.cuda}"
                if arch.tegra
                else f"a driver >= {line.min_driver} ({for_cuda(catalog, line.cuda, line.min_driver)})"
            )
            hints.append(f"{renamed}: {driver} makes the {arch.name} variants usable")
        else:
            # The user already has that driver: telling them to get it would send them in circles.
            hints.append(
                f"{renamed}, and driver {facts.driver.version or facts.driver.cuda} already runs CUDA {line.cuda}: "
                f"check the stated compute capability (--gpu {arch.compute_capability})"
            )
    return hints


def driver_upgrade(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    branches: Sequence[Branch],
    targets: tuple[GpuFacts, ...],
    redecide: Redecide,
) -> tuple[CudaLine, Variant, DriverFacts] | None:
    """The smallest driver change that gives a variant, the variant the rules would then pick, and that driver.

    A GPU the driver cannot drive moves the smallest driver up to the first that drives it (or, for a GPU
    newer branches dropped, down to a branch that still does)."""
    driver = facts.driver
    if driver is None or facts.driver_assumed or tegra_cuda_unknown(targets, driver, catalog):
        return None
    by_cuda = judged_by_cuda_version(targets, driver, catalog)
    too_old = {
        line.cuda: line for b in branches for line in b.cuda_lines if driver_rejection(driver, line, targets, catalog)
    }
    for line in sorted(
        too_old.values(),
        key=lambda line: version_key(line.cuda) if by_cuda else (line.min_driver.parts, version_key(line.cuda)),
    ):
        if by_cuda:
            upgraded = DriverFacts(driver.version, line.cuda)
        else:
            floors = [line.min_driver] + [
                arch.drivers.first for arch in _archs(catalog, targets) if arch.drivers and arch.drivers.first
            ]
            upgraded = DriverFacts(max(floors), line.cuda)
        # Decide again rather than guess: the hint must name what the rules would really choose.
        decision = redecide(replace(facts, driver=upgraded), catalog, options, False)
        if decision.variant is not None and decision.line is not None:
            return decision.line, decision.variant, upgraded
    return None


def _archs(catalog: Catalog, gpus: Sequence[GpuFacts]) -> list[GpuArch]:
    return [arch for gpu in gpus if (arch := catalog.arch_of(gpu.compute_capability)) is not None]


def _last_branch(catalog: Catalog, gpus: Sequence[GpuFacts]) -> int | None:
    return min(
        (arch.drivers.last_branch for arch in _archs(catalog, gpus) if arch.drivers and arch.drivers.last_branch),
        default=None,
    )


def any_arch_for(catalog: Catalog, variants: Sequence[Variant], gpus: Sequence[GpuFacts]) -> bool:
    return any(runs_on_all(catalog, v.gpu_arch, gpus) for v in variants)
