"""Torch with its companions (torchvision, torchaudio, vLLM), chosen together on one PyTorch.

decide ranks the PyTorch variants that run here as for torch alone (newest PyTorch, newest admissible
CUDA line, preferred Python, highest GPU architecture, ISA by workload); with companions asked for,
the first variant in that order for which every project has a recipe on the same PyTorch (version,
Python, CUDA line, GPU architecture, instruction set, platform) that compat.why_not also admits, and whose
set gives one PyTorch (sets.shape), wins; each variant passed over keeps why.
Among a project's recipes, one built against the very same derivation (build-pytorch's in-repo
companions) is preferred to a separate build of the same torch from the same nixpkgs pin, and that to
one from another pin. A companion whose torch is unknown (its recipe pins no nixpkgs) is never paired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pickvariant._base.errors import BadInput
from pickvariant._base.memo import per_object
from pickvariant._base.records import keyword_record, replace
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.rules.compat import why_not
from pickvariant.rules.decision import Kind, Rejection, SetRefusal, rejection
from pickvariant.rules.sets import SetShape, builds_on, relation, shape
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Catalog, Companion, Variant, axes_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.sources.build import Axes


@keyword_record
class SetPick:
    """The companion stage: the variant the set is on (None: no set), its companions and what was found."""

    variant: Variant | None
    companions: tuple[Companion, ...] = ()
    reasons: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    missing: tuple[str, ...] = ()  # for no set: the projects the best variant lacked
    shape: SetShape | None = None
    # Variants ranked before the one chosen, each with why the set could not be on it.
    passed_over: tuple[tuple[Variant, SetRefusal], ...] = ()


def _rank(companion: Companion, variant: Variant) -> tuple[int, int, str, str, str]:
    # The variant's own derivation first, then a separate build from the same nixpkgs pin, then any other; of
    # those, a build without options (with MAGMA) before one built without a part (-nomagma).
    same_pin = companion.torch_pin == variant.nixpkgs_rev
    kind = 0 if builds_on(companion, variant) else 1 if same_pin else 2
    return (kind, len(companion.build_options), companion.repo, companion.branch, companion.package)


@per_object
def _index(
    catalog: Catalog,
) -> tuple[Mapping[tuple[str, Axes, str], tuple[Companion, ...]], Mapping[tuple[str, Axes], tuple[Companion, ...]]]:
    """Companions with a known torch by (project, axes, torch), and those with an unknown one by (project, axes)."""
    known: dict[tuple[str, Axes, str], list[Companion]] = {}
    unknown: dict[tuple[str, Axes], list[Companion]] = {}
    for companion in catalog.companion_source.published(catalog):
        if companion.torch is None:
            unknown.setdefault((companion.project, companion.axes), []).append(companion)
        else:
            known.setdefault((companion.project, companion.axes, companion.torch), []).append(companion)
    return ({key: tuple(found) for key, found in known.items()}, {key: tuple(found) for key, found in unknown.items()})


def _as_variant(companion: Companion, paired: Variant) -> Variant:
    """The companion as compat.why_not judges a build: its own axes, on its partner's CUDA line (the same release)."""
    return replace(paired, package=companion.package, path=companion.path)


def companions_for(catalog: Catalog, variant: Variant, projects: Sequence[str]) -> tuple[Companion, ...] | None:
    """The companion of each project on `variant`'s PyTorch, best first by relation; None when a project has none
    or the set would not give one PyTorch (sets.shape).

    Its axes are the variant's, so what the variant runs on, the set runs on (plan asks this of every candidate)."""
    known, _ = _index(catalog)
    axes = axes_of(variant)
    chosen = []
    for project in projects:
        found = known.get((project, axes, variant.torch), ())
        if not found:
            return None
        chosen.append(min(found, key=lambda c: _rank(c, variant)))
    return tuple(chosen) if isinstance(shape(variant, chosen), SetShape) else None


def set_for(catalog: Catalog, variant: Variant, projects: Sequence[str]) -> tuple[Companion, ...] | None:
    """The companions `variant` would have in a set: published on its PyTorch where they make one (companions_for),
    else generated on its own recipe; None where neither can be (what plan asks of each candidate)."""
    published = companions_for(catalog, variant, projects)
    if published is not None:
        return published
    found = generated_set(catalog, variant, projects)
    return None if isinstance(found, SetRefusal) else found


def pick_set(
    catalog: Catalog,
    candidates: Sequence[Variant],
    projects: Sequence[str],
    facts: HostFacts,
    targets: tuple[GpuFacts, ...],
    build: bool = False,
) -> SetPick:
    """The set: published (the best-ranked candidate whose companions are published on its PyTorch), or, with
    `build` or where no published set gives one PyTorch, built from source (the best-ranked candidate on whose own
    recipe every companion can be generated)."""
    source = catalog.companion_source
    published_projects = {companion.project for companion in source.published(catalog)}
    for project in projects:
        if project not in published_projects and project not in source.generated_projects():
            raise BadInput(
                f"--with {project}: the catalog has no {project} recipes (sync them: pickvariant catalog sync REPO COMPANION_REPO… -o FILE)"
            )
    if build:
        return _built_set(catalog, candidates, projects)
    published = _published_set(catalog, candidates, projects, facts, targets)
    if published.variant is not None:
        return published
    built = _built_set(catalog, candidates, projects)
    if built.variant is None:
        return published
    refused = published.passed_over
    best = next(((v, r) for v, r in refused if r.cause == "two_torches"), refused[0] if refused else None)
    said = recipe_wording.built_for_want_of_published(projects, best)
    return replace(built, reasons=(said, *built.reasons), rejected=published.rejected)


def generated_set(catalog: Catalog, variant: Variant, projects: Sequence[str]) -> tuple[Companion, ...] | SetRefusal:
    """Each project's companion generated on `variant`'s own recipe, or why one cannot be."""
    pin_torch = catalog.nixpkgs_torch.get(variant.nixpkgs_rev)
    source = catalog.companion_source
    refusals = {p: w for p in projects if (w := source.why_not_generated(p, variant, pin_torch))}
    if refusals:
        return SetRefusal("not_generated", tuple(refusals), "; ".join(refusals.values()))
    return tuple(source.generated_companion(project, variant) for project in projects)


def _built_set(catalog: Catalog, candidates: Sequence[Variant], projects: Sequence[str]) -> SetPick:
    """The best-ranked candidate whose companions can all be generated on its own recipe: one torch, built once."""
    passed_over: list[tuple[Variant, SetRefusal]] = []
    for variant in candidates:
        found = generated_set(catalog, variant, projects)
        if isinstance(found, SetRefusal):
            passed_over.append((variant, found))
            continue
        shaped = shape(variant, found)
        assert isinstance(shaped, SetShape)  # every piece builds on the variant itself
        reasons = [recipe_wording.set_on_one_torch(projects, variant.torch, [str(a) for a in axes_of(variant) if a])]
        pin_torch = catalog.nixpkgs_torch.get(variant.nixpkgs_rev)
        reasons += [
            recipe_wording.generated_reason(c.project, c.package, variant, c.generation_cost or "", pin_torch)
            for c in found
        ]
        return SetPick(
            variant=variant,
            companions=found,
            reasons=tuple(reasons),
            shape=shaped,
            passed_over=tuple(passed_over),
        )
    return SetPick(variant=None, passed_over=tuple(passed_over))


def _published_set(
    catalog: Catalog,
    candidates: Sequence[Variant],
    projects: Sequence[str],
    facts: HostFacts,
    targets: tuple[GpuFacts, ...],
) -> SetPick:
    """The best-ranked candidate for which every project has a published companion on its PyTorch, and those."""
    known, unknown = _index(catalog)
    rejected: list[Rejection] = []
    missing: tuple[str, ...] = ()
    passed_over: list[tuple[Variant, SetRefusal]] = []
    for position, variant in enumerate(candidates):
        axes = axes_of(variant)
        chosen, lacking = _fitting(variant, projects, known, facts, catalog, targets)
        if position == 0:
            missing = tuple(lacking)
        rejected += [
            rejection(Kind.COMPANION_TORCH_UNKNOWN, "companion", companion.label, torch=variant.torch)
            for project in lacking
            for companion in unknown.get((project, axes), ())
            if all(earlier.subject[1] != companion.label for earlier in rejected)  # the first variant's torch
        ]
        if lacking:
            passed_over.append((variant, SetRefusal("missing", tuple(lacking))))
            continue
        aligned = _aligned(candidates, variant, chosen, catalog)
        found = shape(aligned, chosen)
        if not isinstance(found, SetShape) and aligned is not variant:
            aligned, found = variant, shape(variant, chosen)
        if not isinstance(found, SetShape):
            passed_over.append((variant, SetRefusal("two_torches", tuple(projects), found)))
            continue
        if aligned is not variant:  # the equal variant on the branch aligned with the vLLM release
            passed_over.append((variant, SetRefusal("aligned", tuple(projects), aligned.branch)))
            variant = aligned
        reasons = [recipe_wording.set_on_one_torch(projects, variant.torch, [str(a) for a in axes if a])]
        reasons += [
            recipe_wording.companion_reason(c.project, c.package, c.repo, c.branch, relation(c, variant))
            for c in chosen
        ]
        return SetPick(
            variant=variant,
            companions=tuple(chosen),
            reasons=tuple(reasons),
            rejected=tuple(rejected),
            missing=missing,
            shape=found,
            passed_over=tuple(passed_over),
        )
    return SetPick(variant=None, rejected=tuple(rejected), missing=missing, passed_over=tuple(passed_over))


def _fitting(
    variant: Variant,
    projects: Sequence[str],
    known: Mapping[tuple[str, Axes, str], Sequence[Companion]],
    facts: HostFacts,
    catalog: Catalog,
    targets: tuple[GpuFacts, ...],
) -> tuple[list[Companion], list[str]]:
    """Each project's best published companion on the variant's PyTorch that runs here, and the projects with none."""
    chosen: list[Companion] = []
    lacking: list[str] = []
    for project in projects:
        fitting = [
            c
            for c in known.get((project, axes_of(variant), variant.torch), ())
            if not why_not(_as_variant(c, variant), facts, catalog, targets)
        ]
        if fitting:
            chosen.append(min(fitting, key=lambda c: _rank(c, variant)))
        else:
            lacking.append(project)
    return chosen, lacking


def _aligned(candidates: Sequence[Variant], variant: Variant, chosen: Sequence[Companion], catalog: Catalog) -> Variant:
    """vLLM follows its own branch alignment: of equal variants, the one on the branch aligned with the chosen vLLM release."""
    releases = {f"vllm {c.version}" for c in chosen if c.project == "vllm" and c.version}
    if not releases:
        return variant
    for other in candidates:
        if (other.torch, axes_of(other)) == (variant.torch, axes_of(variant)) and catalog.branch(
            other.branch
        ).aligned_with in releases:
            return other
    return variant
