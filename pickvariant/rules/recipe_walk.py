"""The recipes' walk (rules/pick.py's Walk): a catalog of Flox variants on release branches, as a grid.

platform -> (the machine: rules/stages.machine) -> branches -> CUDA lines -> instruction sets -> variants -> GPU
architectures -> companions (rules/pairing.py) -> the alternatives the ranking passed over (rules/alternatives.py).
rules/stages.py holds each stage; the order they rank by, each step among what the step before left:

1. the newest PyTorch;
2. within it, the newest CUDA line the driver can run that has a fitting variant;
3. the preferred Python (`--python-version` restricts; otherwise 3.13 > 3.12 > 3.11);
4. the highest GPU architecture whose kernels run on every targeted GPU;
5. the CPU instruction set the workload ranks first among those the CPU can run;
6. with --with, the first variant in that order on whose PyTorch every companion makes a set (rules/pairing.py).

Branches aligned with another project (vLLM) are considered only when named with --branch (or --with vllm).
What would help where nothing fits, or where a set moved to an older torch, is rules/hints.py's, deciding again
through the one pick.
"""

from __future__ import annotations

from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import alternatives, compat, stages, wording
from pickvariant.rules.decision import Decision, RecipeDecision, RecipeDetail, SetRefusal, dedupe
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Catalog, Companion, Variant

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.rules.decision import SetShape
    from pickvariant.rules.pairing import SetPick
    from pickvariant.rules.pick import Again
    from pickvariant.rules.stages import Machine, Walked

# What a recipes' decision without a variant adds: no release line, CUDA line or set.
NONE = RecipeDetail()


class RecipeWalk:
    """rules/pick.py's Walk over a catalog of recipes: its grid's stages (rules/stages.py), companions
    (rules/pairing.py), alternatives (rules/alternatives.py) and hints (rules/hints.py)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = self.hardware = catalog

    def platform(self, facts: HostFacts, options: Request) -> RecipeDecision | tuple[str, str]:
        catalog = self.catalog
        if options.workload not in catalog.workloads:
            raise BadInput(f"unknown workload {options.workload!r}; choose one of {', '.join(catalog.workloads)}")
        system = catalog.nix_system(facts.os, facts.arch)
        if system is None or system not in catalog.built_for:
            return Decision(
                detail=NONE, reasons=(wording.unsupported_platform(facts.os, facts.arch, catalog.built_for),)
            )
        return wording.platform_has_builds(facts.os, facts.arch, system), wording.APPLE_MPS

    def other_gpu(self, gpu: OtherGpu) -> str:
        return recipe_wording.other_gpu_no_recipe(gpu.described, gpu.vendor)

    def serves(self, gpu: OtherGpu) -> bool:
        return False  # no recipe is built for an AMD or Intel GPU

    def stopped(self, seen: Machine) -> RecipeDecision:
        return Decision(detail=NONE, reasons=seen.reasons, hints=seen.hints)

    def walk(self, facts: HostFacts, options: Request, seen: Machine, driver_said: tuple[str, ...]) -> Walked:
        catalog, gpus = self.catalog, seen.gpus
        reasons = [*seen.reasons, *driver_said]
        left, pinned_out = stages.branches(catalog, options)
        lines = stages.cuda_lines(facts, catalog, options, left, gpus)
        if lines.reason:
            reasons.append(lines.reason)
        usable, lacking = stages.isas(facts, catalog)
        candidates = stages.variants(facts, catalog, options, left, lines, usable, gpus)
        first = candidates[0] if candidates else None
        chosen_arch, chosen_cuda = (first.gpu_arch, first.cuda) if first else (None, None)
        arch_rejected = alternatives.gpu_archs(catalog, gpus, chosen_arch, chosen_cuda) if gpus else ()
        return stages.Walked(
            gpus=gpus,
            reasons=tuple(reasons),
            branches=left,
            usable_isas=usable,
            candidates=candidates,
            rejected=(*pinned_out, *lines.rejected, *lacking, *arch_rejected),
        )

    def companions(self, facts: HostFacts, options: Request, walked: Walked) -> tuple[Variant | None, SetPick | None]:
        if not walked.candidates or not options.with_projects:
            return (walked.candidates[0] if walked.candidates else None), None
        from pickvariant.rules import pairing  # only a decision with companions reads them

        found = pairing.pick_set(
            self.catalog, walked.candidates, options.with_projects, facts, walked.gpus, options.build
        )
        return found.variant, found

    def nothing(
        self, facts: HostFacts, options: Request, walked: Walked, found: SetPick | None, again: Again | None
    ) -> RecipeDecision:
        if found is not None:  # variants run here, and none has the set asked for
            alone = walked.candidates[0]
            decision: RecipeDecision = Decision(
                detail=NONE,
                reasons=(*walked.reasons, _why_no_set(found, alone, options)),
                rejected=dedupe((*walked.rejected, *found.rejected)),
                hints=(recipe_wording.without_with(alone.label),),
                targets=walked.gpus,
            )
            return _with_set_hints(decision, facts, self.catalog, options, walked, again)
        return _nothing_fits(facts, self.catalog, options, walked, again)

    def chosen(
        self,
        facts: HostFacts,
        options: Request,
        walked: Walked,
        build: Variant,
        found: SetPick | None,
        again: Again | None,
    ) -> RecipeDecision:
        decision = _chosen(facts, self.catalog, options, walked, build, found)
        return decision if found is None else _with_set_hints(decision, facts, self.catalog, options, walked, again)


def _with_set_hints(
    decision: RecipeDecision, facts: HostFacts, catalog: Catalog, options: Request, walked: Walked, again: Again | None
) -> RecipeDecision:
    """With companions asked for: what a driver upgrade would give the set, decided again, before the hints."""
    if again is None:
        return decision
    from pickvariant.rules import hints as helping

    set_hints = helping.for_set(facts, catalog, options, decision, walked.candidates[0], again)
    return replace(decision, hints=tuple(dict.fromkeys((*set_hints, *decision.hints))))


def _why_no_set(found: SetPick, alone: Variant, options: Request) -> str:
    # A variant with every recipe whose set would still hold two PyTorch builds: the cause that stands.
    two = next(((v, refusal) for v, refusal in found.passed_over if refusal.cause == "two_torches"), None)
    if two is not None:
        return recipe_wording.no_set_one_torch(two[0].label, wording.set_refusal(two[1]))
    return recipe_wording.no_set_recipe(found.missing or tuple(options.with_projects), alone)


def _chosen(
    facts: HostFacts, catalog: Catalog, options: Request, walked: Walked, chosen: Variant, found: SetPick | None
) -> RecipeDecision:
    """The decision for a variant chosen (with the set it is in): what each stage found about it and its rivals."""
    passed_over: dict[Variant, SetRefusal] = dict(found.passed_over) if found else {}
    companions: tuple[Companion, ...] = found.companions if found else ()
    shape: SetShape | None = found.shape if found else None
    candidates, gpus, usable, left = walked.candidates, walked.gpus, walked.usable_isas, walked.branches
    alone = candidates[0]
    said = list(walked.reasons)
    if found is not None:
        if chosen is not alone:
            refusal = wording.set_refusal(passed_over[alone]) if alone in passed_over else "it has no set"
            said.append(recipe_wording.set_moved(alone.label, alone.torch, alone.cuda, refusal))
        said += found.reasons
    said += _chosen_reasons(facts, catalog, options, gpus, usable, chosen, moved=chosen is not alone)
    said += _trusted_by_user(catalog, chosen, companions)
    rejected = (
        *walked.rejected,
        *(found.rejected if found else ()),
        *alternatives.other_branches(catalog, chosen, left, candidates, gpus, usable, facts, options, passed_over),
        *(alternatives.other_isas(catalog, chosen, options, usable, candidates, passed_over) if chosen.cpu_isa else ()),
    )
    return Decision(
        detail=RecipeDetail(branch=catalog.branch(chosen.branch), line=catalog.cuda_line(chosen), set_shape=shape),
        build=chosen,
        reasons=tuple(said),
        rejected=dedupe(rejected),
        targets=gpus,
        candidates=candidates,
        companions=companions,
    )


def _trusted_by_user(catalog: Catalog, chosen: Variant, companions: tuple[Companion, ...]) -> list[str]:
    """What the answer says of each build it takes from a repository whose recipes the user trusted whole."""
    said = (
        [recipe_wording.trusted_by_user(chosen.package, catalog.source.repo)] if catalog.source.trusted_by_user else []
    )
    return said + [recipe_wording.trusted_by_user(c.package, c.repo) for c in companions if c.trusted_by_user]


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
    if options.cuda and chosen.cuda is None:
        said.append(wording.cuda_pin_unused(options.cuda))
    return said


def _nothing_fits(
    facts: HostFacts, catalog: Catalog, options: Request, walked: Walked, again: Again | None
) -> RecipeDecision:
    """No variant: every branch left with why nothing of it fits, what the stages found, in words, and (with
    `again`) what would help, deciding again."""
    from pickvariant.rules import nothing  # only a machine nothing fits reads it

    gpus, left, usable = walked.gpus, walked.branches, walked.usable_isas
    branches = (alternatives.branch_has_nothing(b, gpus, usable, catalog, facts) for b in left)
    found = nothing.find(facts, catalog, gpus, left, usable)
    findings: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    if again is not None:
        from pickvariant.rules import hints as helping  # only a machine nothing fits needs hints

        findings, hints = helping.for_nothing(facts, catalog, options, walked, found, again)
    why = (*found.why, *findings) or (recipe_wording.NOTHING_COMBINES,)
    # The driver stage may already have said what left nothing (a GPU it cannot drive): said once.
    return Decision(
        detail=NONE,
        reasons=tuple(dict.fromkeys(walked.reasons + why)),
        rejected=dedupe((*walked.rejected, *branches)),
        targets=gpus,
        hints=hints,
    )
