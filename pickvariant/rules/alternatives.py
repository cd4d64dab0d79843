"""Why each alternative lost, once the stages have ranked what runs here: every other GPU architecture of the catalog,
every branch left by the pins (nothing of it fits, or what fits is outranked), every other instruction set. Typed
rejections with the facts each stage found; rules/wording/ words them, rules/recipe_walk.py asks for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pickvariant._base.request import Request
from pickvariant._base.versions import version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.rules import wording
from pickvariant.rules.compat import kernels_run_on, runs_on_all
from pickvariant.rules.decision import Kind, Rejection, SetRefusal, rejection
from pickvariant.rules.stages import ranked_isas
from pickvariant.sources.build import Branch, Catalog, Variant
from pickvariant.sources.hardware import Workload


def gpu_archs(
    catalog: Catalog, gpus: tuple[GpuFacts, ...], chosen: str | None, cuda: str | None = None
) -> tuple[Rejection, ...]:
    """Every architecture of the catalog but the chosen one: no kernels (built by the chosen CUDA line) for a GPU
    here, or outranked."""
    rejected = []
    for arch in catalog.gpu_archs.values():
        if arch.name == chosen:
            continue
        refusals = ((gpu, kernels_run_on(arch, gpu.compute_capability, catalog, cuda)) for gpu in gpus)
        refused = next(((gpu, why) for gpu, why in refusals if why), None)
        if refused is not None:
            gpu, why = refused
            rejected.append(rejection(Kind.NO_KERNELS, "gpu_arch", arch.name, gpu=str(gpu.index), refusal=why))
        elif chosen is not None:
            better = catalog.gpu_archs[chosen]
            rejected.append(
                rejection(
                    Kind.RANKED_LOWER,
                    "gpu_arch",
                    arch.name,
                    cause="arch",
                    runs_on=", ".join(f"{gpu.compute_capability}" for gpu in dict.fromkeys(gpus)),
                    better=better.name,
                    higher="yes" if better.compute_capability > arch.compute_capability else "no",
                )
            )
    return tuple(rejected)


def branch_has_nothing(
    branch: Branch, gpus: tuple[GpuFacts, ...], usable: frozenset[str], catalog: Catalog, facts: HostFacts
) -> Rejection:
    """Why nothing of a branch fits: that is the reason, whatever PyTorch it ships."""
    system = catalog.nix_system(facts.os, facts.arch) or ""
    own = [v for v in branch.variants if v.platform == system]
    name = branch.name
    if not own:
        return rejection(Kind.NOT_BUILT, "branch", name, cause="platform", system=system)
    if facts.os == "darwin":
        return rejection(Kind.NOT_BUILT, "branch", name, cause="mps")
    if not gpus:
        return rejection(
            Kind.NOT_BUILT, "branch", name, cause="cpu_only", isas=tuple(sorted(usable)) or (f"this {facts.arch} CPU",)
        )
    compatible = {v.gpu_arch for v in own if runs_on_all(catalog, v.gpu_arch, gpus, v.cuda)}
    if not compatible:
        wanted = tuple(sorted({gpu.compute_capability.sm.upper() for gpu in gpus}))
        capabilities = tuple(f"{g.compute_capability}" for g in gpus)
        return rejection(Kind.NOT_BUILT, "branch", name, cause="gpu", wanted=wanted, capabilities=capabilities)
    with_isa = {v.cpu_isa for v in own if v.gpu_arch in compatible and v.cpu_isa}
    if not with_isa & usable:
        archs = tuple(sorted(c for c in compatible if c))
        return rejection(Kind.NOT_BUILT, "branch", name, cause="isa_for_gpu", archs=archs, isas=tuple(sorted(with_isa)))
    cudas = tuple(sorted({v.cuda for v in own if v.gpu_arch in compatible and v.cuda}, key=version_key))
    return rejection(Kind.NOT_BUILT, "branch", name, cause="driver", cudas=cudas)


def other_branches(
    catalog: Catalog,
    chosen: Variant,
    left: Sequence[Branch],
    candidates: Sequence[Variant],
    gpus: tuple[GpuFacts, ...],
    usable: frozenset[str],
    facts: HostFacts,
    options: Request,
    passed_over: Mapping[Variant, SetRefusal],
) -> tuple[Rejection, ...]:
    """Why each other branch lost: the question users ask first. `passed_over`: the variants a set could not be
    on, with why (rules/pairing.py found it)."""
    workload = catalog.workloads[options.workload]
    best_of_branch: dict[str, Variant] = {}
    for variant in candidates:  # best first, so the first of each branch is its best
        best_of_branch.setdefault(variant.branch, variant)
    rejected = []
    for branch in left:
        if branch.name == chosen.branch:
            continue
        best = best_of_branch.get(branch.name)
        if best is None:
            rejected.append(branch_has_nothing(branch, gpus, usable, catalog, facts))
        elif passed_over and best in passed_over:  # it ranks first for torch alone: the companions decided
            refusal = wording.set_refusal(passed_over[best])
            rejected.append(
                rejection(Kind.NO_SET, "branch", branch.name, cause="branch", example=best.package, refusal=refusal)
            )
        else:
            rejected.append(_outranked(catalog, branch.name, best, chosen, workload))
    return tuple(rejected)


def _outranked(catalog: Catalog, branch: str, best: Variant, chosen: Variant, workload: Workload) -> Rejection:
    """Why a branch whose best variant runs here lost to the chosen one: the first step of the order where it ranks
    lower (PyTorch, CUDA line, Python, GPU architecture, instruction set), or else its place in that order."""
    example = best.package
    if version_key(best.torch) < version_key(chosen.torch):
        return rejection(Kind.RANKED_LOWER, "branch", branch, cause="torch", example=example, torch=best.torch)
    if best.torch == chosen.torch and best.cuda and chosen.cuda and version_key(best.cuda) < version_key(chosen.cuda):
        return rejection(Kind.RANKED_LOWER, "branch", branch, cause="cuda", cuda=best.cuda)
    if (best.torch, best.cuda) == (chosen.torch, chosen.cuda) and best.python != chosen.python:
        return rejection(
            Kind.RANKED_LOWER,
            "branch",
            branch,
            cause="python",
            example=example,
            python=best.python,
            preferred=chosen.python,
        )
    same_line = (best.torch, best.cuda, best.python) == (chosen.torch, chosen.cuda, chosen.python)
    if same_line and best.gpu_arch != chosen.gpu_arch and best.gpu_arch and chosen.gpu_arch:
        return rejection(
            Kind.RANKED_LOWER,
            "branch",
            branch,
            cause="branch_arch",
            example=example,
            arch=best.gpu_arch,
            preferred=chosen.gpu_arch,
        )
    if (
        same_line
        and best.gpu_arch == chosen.gpu_arch
        and best.cpu_isa != chosen.cpu_isa
        and best.cpu_isa
        and chosen.cpu_isa
    ):
        return rejection(
            Kind.RANKED_LOWER,
            "branch",
            branch,
            cause="branch_isa",
            example=example,
            workload=workload.name,
            isa=best.cpu_isa,
            preferred=chosen.cpu_isa,
        )
    return rejection(Kind.RANKED_LOWER, "branch", branch, cause="order", example=example, preferred=chosen.package)


def other_isas(
    catalog: Catalog,
    chosen: Variant,
    options: Request,
    usable: frozenset[str],
    candidates: Sequence[Variant],
    passed_over: Mapping[Variant, SetRefusal],
) -> tuple[Rejection, ...]:
    """Each instruction set this CPU can run but the chosen one: the variant of it that the set could not be on,
    one the workload ranks lower, or none built on the chosen variant's axes."""
    ranked = ranked_isas(catalog, options, usable)
    same_but_isa: dict[str | None, Variant] = {}
    branch, arch, cuda = chosen.branch, chosen.gpu_arch, chosen.cuda
    for variant in candidates:  # best first: the first of each instruction set is its best
        if variant.branch == branch and variant.gpu_arch == arch and variant.cuda == cuda:
            same_but_isa.setdefault(variant.cpu_isa, variant)
    rejected = []
    for other in ranked:
        if other == chosen.cpu_isa:
            continue
        same = same_but_isa.get(other)
        if same is not None and passed_over and same in passed_over:
            refusal = wording.set_refusal(passed_over[same])
            rejected.append(rejection(Kind.NO_SET, "package", same.package, cause="variant", refusal=refusal))
        elif same is not None:  # ranked after the chosen one: any ranked before it is in passed_over
            rejected.append(
                rejection(
                    Kind.RANKED_LOWER,
                    "package",
                    same.package,
                    cause="isa",
                    workload=options.workload,
                    preferred=chosen.cpu_isa or "",
                )
            )
        else:
            rejected.append(
                rejection(
                    Kind.NOT_BUILT,
                    "cpu_isa",
                    other,
                    cause="isa",
                    branch=chosen.branch,
                    arch=chosen.gpu_arch or "",
                    cuda=chosen.cuda or "",
                )
            )
    return tuple(rejected)
