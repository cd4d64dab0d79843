"""The stages run in order: facts, catalog and a request's pins in, one frozen Decision out (without the hints that
decide again: rules/hints.py adds those).

The order it ranks by, each step among what the step before left (rules/stages.py holds each):

1. the newest PyTorch;
2. within it, the newest CUDA line the driver can run that has a fitting variant;
3. the preferred Python (`--python-version` restricts; otherwise 3.13 > 3.12 > 3.11);
4. the highest GPU architecture whose kernels run on every targeted GPU;
5. the CPU instruction set the workload ranks first among those the CPU can run;
6. with --with, the first variant in that order on whose PyTorch every companion makes a set (rules/pairing.py).

Branches aligned with another project (vLLM) are considered only when named with --branch (or --with vllm).
"""

from __future__ import annotations

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts
from pickvariant.rules import alternatives, compat, stages, wording
from pickvariant.rules.decision import Decision, RecipeDecision, Rejection, SetRefusal, dedupe
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Branch, Catalog, Companion, Variant

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.machine.gpu import GpuFacts
    from pickvariant.rules.decision import SetShape
    from pickvariant.rules.nothing import NothingFits
    from pickvariant.rules.pairing import SetPick


@keyword_record
class Picked:
    """A decision and what its stages left, which the hints read rather than work out again."""

    decision: RecipeDecision
    branches: tuple[Branch, ...] = ()
    usable_isas: frozenset[str] = frozenset()
    # The variant PyTorch alone would get, where companions were asked for: what a driver hint compares against.
    alone: Variant | None = None
    # No variant: what the stages found that left none; `None` where an earlier stage already answered.
    nothing: NothingFits | None = None


def pick(facts: HostFacts, catalog: Catalog, options: Request) -> Picked:
    if options.workload not in catalog.workloads:
        raise BadInput(f"unknown workload {options.workload!r}; choose one of {', '.join(catalog.workloads)}")
    system = catalog.nix_system(facts.os, facts.arch)
    if system is None or system not in catalog.built_for:
        reason = wording.unsupported_platform(facts.os, facts.arch, catalog.built_for)
        return Picked(decision=Decision(reasons=(reason,)))
    said = (wording.platform_has_builds(facts.os, facts.arch, system), wording.APPLE_MPS)
    seen = stages.machine(facts, options, catalog, said, recipe_wording.other_gpu_no_recipe)
    if seen.hints:  # NVML could not say whether there are GPUs: no variant can be chosen
        return Picked(decision=Decision(reasons=seen.reasons, hints=seen.hints))
    gpus, reasons = seen.gpus, list(seen.reasons)
    machine_said = 1 + len(gpus)  # the platform's and each GPU's: facts the short answer shows as such
    left, pinned_out = stages.branches(catalog, options)
    lines = stages.cuda_lines(facts, catalog, options, left, gpus)
    if lines.reason:
        reasons.append(lines.reason)
    usable, lacking = stages.isas(facts, catalog)
    candidates = stages.variants(facts, catalog, options, left, lines, usable, gpus)
    first = candidates[0] if candidates else None
    chosen_arch, chosen_cuda = (first.gpu_arch, first.cuda) if first else (None, None)
    arch_rejected = alternatives.gpu_archs(catalog, gpus, chosen_arch, chosen_cuda) if gpus else ()
    rejected = (*pinned_out, *lines.rejected, *lacking, *arch_rejected)
    if not candidates:
        picked = _nothing_fits(facts, catalog, gpus, left, usable, tuple(reasons), rejected)
        return replace(picked, decision=replace(picked.decision, machine_said=machine_said))
    alone = candidates[0]
    if options.with_projects:
        from pickvariant.rules import pairing  # only a decision with companions reads them

        found = pairing.pick_set(catalog, candidates, options.with_projects, facts, gpus, options.build)
        if found.variant is None:
            decision: RecipeDecision = Decision(
                reasons=(*reasons, _why_no_set(found, alone, options)),
                rejected=dedupe((*rejected, *found.rejected)),
                hints=(recipe_wording.without_with(alone.label),),
                targets=gpus,
                machine_said=machine_said,
            )
            return Picked(decision=decision, branches=left, usable_isas=usable, alone=alone)
        chosen, set_found = found.variant, found
    else:
        chosen, set_found = alone, None
    picked = _chosen(
        facts, catalog, options, gpus, left, usable, candidates, tuple(reasons), rejected, chosen, set_found
    )
    return replace(picked, decision=replace(picked.decision, machine_said=machine_said))


def _why_no_set(found: SetPick, alone: Variant, options: Request) -> str:
    # A variant with every recipe whose set would still hold two PyTorch builds: the cause that stands.
    two = next(((v, refusal) for v, refusal in found.passed_over if refusal.cause == "two_torches"), None)
    if two is not None:
        return recipe_wording.no_set_one_torch(two[0].label, wording.set_refusal(two[1]))
    return recipe_wording.no_set_recipe(found.missing or tuple(options.with_projects), alone)


def _chosen(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    gpus: tuple[GpuFacts, ...],
    left: tuple[Branch, ...],
    usable: frozenset[str],
    candidates: tuple[Variant, ...],
    reasons: tuple[str, ...],
    rejected: tuple[Rejection, ...],
    chosen: Variant,
    found: SetPick | None,
) -> Picked:
    """The decision for a variant chosen (with the set it is in): what each stage found about it and its rivals."""
    passed_over: dict[Variant, SetRefusal] = dict(found.passed_over) if found else {}
    companions: tuple[Companion, ...] = found.companions if found else ()
    shape: SetShape | None = found.shape if found else None
    alone = candidates[0]
    said = list(reasons)
    if found is not None:
        if chosen is not alone:
            refusal = wording.set_refusal(passed_over[alone]) if alone in passed_over else "it has no set"
            said.append(recipe_wording.set_moved(alone.label, alone.torch, alone.cuda, refusal))
        said += found.reasons
    said += _chosen_reasons(facts, catalog, options, gpus, usable, chosen, moved=chosen is not alone)
    rejected = (
        *rejected,
        *(found.rejected if found else ()),
        *alternatives.other_branches(catalog, chosen, left, candidates, gpus, usable, facts, options, passed_over),
        *(alternatives.other_isas(catalog, chosen, options, usable, candidates, passed_over) if chosen.cpu_isa else ()),
    )
    decision = Decision(
        build=chosen,
        branch=catalog.branch(chosen.branch),
        reasons=tuple(said),
        rejected=dedupe(rejected),
        targets=gpus,
        line=catalog.cuda_line(chosen),
        candidates=candidates,
        companions=companions,
        set_shape=shape,
    )
    return Picked(decision=decision, branches=left, usable_isas=usable, alone=alone if found else None)


def _chosen_reasons(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    gpus: tuple[GpuFacts, ...],
    usable: frozenset[str],
    chosen: Variant,
    moved: bool = False,
) -> list[str]:
    """Why the chosen variant's branch, GPU architecture and instruction set: what those stages found (`moved`: the
    set took a variant after the one PyTorch alone would get)."""
    branch = catalog.branch(chosen.branch)
    line = catalog.cuda_line(chosen)
    why = (
        recipe_wording.BRANCH_NAMED
        if options.branch
        else recipe_wording.branch_for_set(options.with_projects, branch.aligned_with)
        if moved
        else recipe_wording.BRANCH_MPS
        if chosen.is_mps
        else recipe_wording.BRANCH_CPU
        if line is None
        else recipe_wording.BRANCH_CUDA
    )
    said = [
        recipe_wording.branch_reason(
            name=branch.name,
            torch=chosen.torch,
            python=chosen.python,
            cuda=line.cuda if line else None,
            nixpkgs=line.nixpkgs_rev if line else "",
            cuda_packages=line.cuda_packages if line else "",
            why=why,
        )
    ]
    if chosen.is_mps:
        said.append(recipe_wording.mps_reason(catalog.min_macos))
    elif chosen.gpu_arch:
        arch = catalog.gpu_archs[chosen.gpu_arch]
        if all(gpu.compute_capability == arch.compute_capability for gpu in gpus):
            said.append(recipe_wording.arch_exact(arch.name, arch.compute_capability, arch.description))
        else:
            said.append(recipe_wording.arch_highest(arch.name, [(gpu.index, gpu.compute_capability) for gpu in gpus]))
        said += stages.unserved(arch.name, compat.build_of_variant(catalog, chosen), facts, gpus, catalog)
        if not chosen.cudnn and "USE_CUDNN" in arch.build_env:
            said.append(recipe_wording.without_cudnn(arch.name))
    if chosen.cpu_isa is not None:
        isa = catalog.isas[chosen.cpu_isa]
        ranked = stages.ranked_isas(catalog, options, usable)
        said.append(recipe_wording.isa_reason(isa.name, isa.requires, options.workload, ranked))
    return said


def _nothing_fits(
    facts: HostFacts,
    catalog: Catalog,
    gpus: tuple[GpuFacts, ...],
    left: tuple[Branch, ...],
    usable: frozenset[str],
    reasons: tuple[str, ...],
    rejected: tuple[Rejection, ...],
) -> Picked:
    """No variant: every branch left with why nothing of it fits, and what the stages found, in words."""
    from pickvariant.rules import nothing  # only a machine nothing fits reads it

    rejected = (*rejected, *(alternatives.branch_has_nothing(b, gpus, usable, catalog, facts) for b in left))
    found = nothing.find(facts, catalog, gpus, left, usable)
    decision: RecipeDecision = Decision(reasons=reasons, rejected=dedupe(rejected), targets=gpus)
    return Picked(decision=decision, branches=left, usable_isas=usable, nothing=found)
