"""`pickvariant plan`: from a cluster's `detect` JSON lines to the fewest builds that serve every node, one
ClusterPlan for every source.

Each node is decided again from its facts (never trusting an old recommendation), by the stages of its source: the
recipes' (rules/decide.py) or a prebuilt build's (rules/prebuilt_walk.py, no environment read). Nodes with the same
facts are one profile, which may get exactly the builds `detect` admits for it (Decision.candidates), in detect's
order (with --with, those every companion asked for pairs with). Choosing them is set cover with assignment, solved
exactly as an integer program by HiGHS (rules/fewest_builds.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from pickvariant._base.errors import PickVariantError
from pickvariant._base.records import B, C, OfBuilds, keyword_record
from pickvariant._base.request import Request
from pickvariant._base.versions import cpython_tag
from pickvariant.machine.facts_json import facts_from_json
from pickvariant.rules import pairing
from pickvariant.rules.cluster_input import BadLine, Inputs
from pickvariant.rules.decide import decide
from pickvariant.rules.fewest_builds import (
    NodePlan,
    Profile,
    Solution,
    check_inputs,
    fewest,
    hardware_summary,
    unreadable,
)
from pickvariant.rules.node_facts import fingerprint, prebuilt_fingerprint
from pickvariant.rules.sets import SetShape, builds_on, relation, shape
from pickvariant.sources.build import Catalog, Companion, Variant
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.prebuilt import laid_out

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from pickvariant.machine.facts import HostFacts
    from pickvariant.sources.prebuilt import PairedRelease, PrebuiltCatalog
    from pickvariant.sources.runs_on import Build

    T = TypeVar("T")

JSON_SCHEMA_VERSION = 1


def each_profile(inputs: Inputs, hardware: Hardware, decided: Callable[[HostFacts], Profile[T]]) -> list[Profile[T]]:
    """Every profile of the cluster read back from its detect line and `decided` by a source's stages; one whose facts
    cannot be read is an unreadable profile (rules/fewest_builds.unreadable), for every source alike."""
    profiles: list[Profile[T]] = []
    for node_hardware in inputs.hardware:
        try:
            facts = facts_from_json(node_hardware, hardware)
        except PickVariantError as error:
            profiles.append(unreadable(error))
            continue
        profiles.append(decided(facts))
    return profiles


def decide_profiles(inputs: Inputs, catalog: Catalog, options: Request) -> list[Profile[Variant]]:
    def decided(facts: HostFacts) -> Profile[Variant]:
        decision = decide(facts, catalog, options, with_hints=False)
        candidates = decision.candidates
        if options.with_projects:
            # A node can be given only a variant whose PyTorch every companion asked for is built on.
            # Sets as published where any is; else built from source, as the decision makes them (pairing.pick_set).
            published = tuple(
                v for v in candidates if pairing.companions_for(catalog, v, options.with_projects) is not None
            )
            candidates = published or tuple(
                v for v in candidates if pairing.set_for(catalog, v, options.with_projects) is not None
            )
        why = None
        if not candidates:
            # What detect would say on that node: its last reason and its hints (a driver that would help, ...).
            told = decide(facts, catalog, options)
            why = "; ".join(told.reasons[-1:] + told.hints) or "no variant fits"
        return Profile(candidates, why, hardware_summary(facts), fingerprint(facts, catalog))

    return each_profile(inputs, catalog, decided)


@keyword_record
class ClusterPlan(OfBuilds[B, C]):
    """A cluster's plan, whichever source it chose among (`source`): the builds chosen, which node gets which, and
    what was read. `B` is the source's build, `C` its companion; the recipes add each set's shape, a source of
    prebuilt builds the root of its indexes and the one Python it planned for."""

    builds: tuple[tuple[B, int, tuple[str, ...]], ...]  # build, node count, hardware summaries
    nodes: tuple[NodePlan[B], ...]
    solution: Solution
    node_count: int
    bad: tuple[BadLine, ...]
    bad_count: int
    profile_count: int
    source: str  # the source it was planned from (sources/registry.py)
    duplicate_labels: tuple[str, ...] = ()
    # Each node's profile (by index) and each profile's fingerprint (rules/node_facts.py; None: facts unusable),
    # and the catalog the plan was made from: what `install --plan` checks before it installs an assignment.
    profile_of: tuple[int, ...] = ()
    fingerprints: tuple[dict[str, Any] | None, ...] = ()
    catalog: Mapping[str, str] = MappingProxyType({})
    # With --with: each chosen build's companions, by its key (the recipes': (branch, package); a prebuilt build's:
    # the build), and a recipes' set's shape (what is built).
    companions: Mapping[Any, tuple[C, ...]] = MappingProxyType({})
    shapes: Mapping[tuple[str, str], SetShape] = MappingProxyType({})
    index_root: str | None = None  # a source of prebuilt builds': the root of the indexes its builds are on
    python: str | None = None  # a source of prebuilt builds': --python-version, where the plan is for one Python
    # A source of prebuilt builds' with no index named: PyPI's own build of a release is installed from PyPI (no
    # index URL), as detect answers it there.
    pypi_first: bool = False
    layout: str = "{root}/{index}"  # where a build is below index_root: its source's (sources/prebuilt.py's url)

    @property
    def prebuilt(self) -> bool:
        """A plan of prebuilt builds (it names the root of their indexes), not of recipes."""
        return self.index_root is not None

    def index_url(self, build: Build) -> str | None:
        """A prebuilt build's index; None: PyPI's own build, from PyPI (the installer's default index)."""
        if self.pypi_first and build.default_index:
            return None
        return laid_out(self.layout, self.index_root or "", build.index)


# The plan each kind of source makes: the recipes' and a prebuilt build's, one record.
RecipePlan = ClusterPlan[Variant, Companion]
if TYPE_CHECKING:
    PrebuiltPlan = ClusterPlan[Build, PairedRelease]
else:
    PrebuiltPlan = ClusterPlan


def cost_of(best: Variant, got: Variant) -> str:
    """What a node loses with `got` instead of its own best, in the words a cluster admin uses."""
    losses = []
    if got.cpu_isa != best.cpu_isa:
        losses.append(
            f"{got.cpu_isa} build on a{'n' if (best.cpu_isa or '')[:1] in 'aeio' else ''} {best.cpu_isa} node"
        )
    if got.torch != best.torch:
        losses.append(f"PyTorch {got.torch} instead of {best.torch}")
    if got.cuda != best.cuda:
        losses.append(f"CUDA {got.cuda} instead of {best.cuda}")
    if got.gpu_arch != best.gpu_arch:
        losses.append(f"{got.gpu_arch} kernels instead of {best.gpu_arch}")
    if got.python != best.python:
        losses.append(f"Python {got.python} instead of {best.python}")
    return ", ".join(losses) or f"{got.package} instead of {best.package} (another branch)"


def make_cluster_plan(
    inputs: Inputs, catalog: Catalog, options: Request, max_variants: int | None, source: str
) -> RecipePlan:
    """The cluster's plan among the recipes of `source`: every hardware profile decided, the fewest builds solved
    for, each node given one."""
    check_inputs(inputs, max_variants)
    profiles = decide_profiles(inputs, catalog, options)
    index_of = {id(variant): i for i, variant in enumerate(catalog.variants)}
    ids = [tuple(index_of[id(v)] for v in profile.candidates) for profile in profiles]
    solved = fewest(
        inputs, profiles, ids, catalog.variants, cost_of, max_variants, "variant", lambda v: (v.branch, v.package)
    )
    companions, shapes = _sets(solved[2], catalog, options)
    identity = catalog_identity(catalog)
    return _planned(inputs, profiles, solved, source=source, catalog=identity, companions=companions, shapes=shapes)


def _planned(
    inputs: Inputs,
    profiles: Sequence[Profile[T]],
    solved: tuple[Solution, tuple[NodePlan[T], ...], tuple[tuple[T, int, tuple[str, ...]], ...]],
    **own: Any,
) -> ClusterPlan[T, Any]:
    """The plan, whichever source: the solver's answer, what was read, and `own`, what the source adds (its
    catalog's identity, companions, sets, index root)."""
    solution, nodes, chosen = solved
    return ClusterPlan(
        builds=chosen,
        nodes=nodes,
        solution=solution,
        node_count=len(inputs.labels),
        bad=tuple(inputs.bad),
        bad_count=inputs.bad_count,
        profile_count=len(profiles),
        duplicate_labels=tuple(inputs.duplicate_labels()),
        profile_of=tuple(inputs.profile_of),
        fingerprints=tuple(profile.fingerprint for profile in profiles),
        **own,
    )


def catalog_identity(catalog: Catalog) -> dict[str, str]:
    """What names a catalog: its build repository, the commit synced, and a digest of every variant it holds."""
    names = "\n".join(sorted(f"{v.branch}/{v.package}" for v in catalog.variants))
    digest = hashlib.sha256(names.encode("utf-8")).hexdigest()[:32]
    return {"repo": catalog.source.repo, "commit": catalog.source.commit, "variants_sha256": digest}


def _sets(
    chosen_variants: Sequence[tuple[Variant, int, tuple[str, ...]]], catalog: Catalog, options: Request
) -> tuple[dict[tuple[str, str], tuple[Companion, ...]], dict[tuple[str, str], SetShape]]:
    """With --with: each chosen build's companions and the shape of its set."""
    if not options.with_projects:
        return {}, {}
    companions = {
        (v.branch, v.package): pairing.set_for(catalog, v, options.with_projects) or () for v, _, _ in chosen_variants
    }
    shapes = {}
    for v, _, _ in chosen_variants:
        found = shape(v, companions[(v.branch, v.package)])
        if isinstance(found, SetShape):  # companions_for admits only sets with a shape
            shapes[(v.branch, v.package)] = found
    return companions, shapes


def _prebuilt_profiles(
    inputs: Inputs, hardware: Hardware, wheels: PrebuiltCatalog, options: Request, index_root: str, pypi_first: bool
) -> list[Profile[Build]]:
    """Each profile decided by a prebuilt build's stages, as `detect --source NAME` decides it on that node with no
    environment read; with --with, only the builds whose release pairs every companion as detect pairs them."""
    from pickvariant.rules.prebuilt_walk import pick_prebuilt

    def decided(facts: HostFacts) -> Profile[Build]:
        decision = pick_prebuilt(facts, hardware, wheels, options, None, index_root, pypi_first=pypi_first)
        candidates = tuple(
            build for build in decision.candidates if _paired(build, wheels, options, pypi_first) is not None
        )
        why = None if candidates else "; ".join((*decision.reasons[-1:], *decision.hints)) or "no wheel fits"
        return Profile(candidates, why, hardware_summary(facts), prebuilt_fingerprint(facts, hardware))

    return each_profile(inputs, hardware, decided)


def _paired(
    build: Build, wheels: PrebuiltCatalog, options: Request, pypi_first: bool
) -> tuple[PairedRelease, ...] | None:
    """The companions asked for, paired with `build` as detect pairs them (rules/prebuilt_companions.py); None where
    one is not."""
    from pickvariant.rules.prebuilt_companions import with_companions

    tag = cpython_tag(options.python) if options.python else None  # checked by the walk before this
    found, pairs, _ = with_companions((build,), wheels, options.with_projects, pypi_first, tag)
    return pairs if found is not None else None


def wheels_identity(wheels: PrebuiltCatalog) -> dict[str, str]:
    """What names the prebuilt builds' facts a plan was made from: when they were compiled, and a digest of every
    build."""
    names = "\n".join(sorted(f"{b.platform}/{b.label}/{','.join(b.python)}" for b in wheels.builds))
    return {"facts_compiled": wheels.facts_compiled, "builds_sha256": hashlib.sha256(names.encode()).hexdigest()[:32]}


def prebuilt_cost_of(best: Build, got: Build) -> str:
    """What a node loses with the prebuilt build `got` instead of its own best."""
    losses = []
    if got.torch != best.torch:
        losses.append(f"PyTorch {got.torch} instead of {best.torch}")
    if got.cuda != best.cuda:
        losses.append(f"CUDA {got.cuda or 'none'} instead of {best.cuda or 'none'}")
    return ", ".join(losses) or f"{got.label} instead of {best.label}"


def make_prebuilt_plan(
    inputs: Inputs,
    hardware: Hardware,
    wheels: PrebuiltCatalog,
    options: Request,
    max_variants: int | None,
    index_root: str,
    source: str,
    pypi_first: bool = False,
) -> PrebuiltPlan:
    """The cluster's plan among a source's prebuilt builds: every profile decided, the fewest builds solved for;
    `pypi_first` (no index named), PyPI's own build of a release first and installed from PyPI, as detect does."""
    check_inputs(inputs, max_variants)
    profiles = _prebuilt_profiles(inputs, hardware, wheels, options, index_root, pypi_first)
    id_of = {build: i for i, build in enumerate(wheels.builds)}
    ids = [tuple(id_of[build] for build in profile.candidates) for profile in profiles]
    solved = fewest(
        inputs, profiles, ids, wheels.builds, prebuilt_cost_of, max_variants, "wheel build",
        lambda b: (b.platform, b.label),
    )  # fmt: skip
    companions = {build: _paired(build, wheels, options, pypi_first) or () for build, _, _ in solved[2]}
    return _planned(
        inputs, profiles, solved, source=source, companions=companions, index_root=index_root, python=options.python,
        catalog=wheels_identity(wheels), pypi_first=pypi_first, layout=wheels.layout,
    )  # fmt: skip


def builds(plan: RecipePlan, variant: Variant) -> list[tuple[str | None, str, str]]:
    """What to build and publish for one chosen variant, (repository or None for the build repository, branch,
    package): exactly the packages its set installs (sets.shape), or the variant alone without --with. A generated
    companion's repository is sources/build.py GENERATED_BY: its recipe is made by `pickvariant recipe --with`."""
    key = (variant.branch, variant.package)
    found = plan.shapes.get(key)
    if found is None:
        return [(None, variant.branch, variant.package)]
    by_name = {c.package: c for c in plan.companions.get(key, ())}
    return [
        (None, variant.branch, name)
        if name == variant.package or (builds_on(by_name[name], variant) and name not in found.generated)
        else (by_name[name].repo, by_name[name].branch, name)
        for name in found.installed
    ]


def cluster_plan_json(plan: RecipePlan) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "source": plan.source,  # as every plan says its source (install --plan refuses another source's plan)
        "variants": [
            {
                "branch": v.branch,
                "package": v.package,
                "nodes": count,
                **(
                    {
                        "companions": [
                            {**c.identity(), "relation_to_variant": relation(c, v)}
                            for c in plan.companions[(v.branch, v.package)]
                        ]
                    }
                    if plan.companions
                    else {}
                ),
                # Exactly what install --with installs on these nodes: each built and published once.
                "builds": [
                    {"repo": repo, "branch": branch, "package": package} for repo, branch, package in builds(plan, v)
                ],
            }
            for v, count, _ in plan.builds
        ],
        "nodes": [
            {
                "label": n.label,
                "branch": n.build.branch if n.build else None,
                "package": n.build.package if n.build else None,
                "rank": n.rank,
                "why": n.why,
                "profile": profile,
            }
            for n, profile in zip(plan.nodes, plan.profile_of, strict=True)
        ],
        "profiles": list(plan.fingerprints),
        "catalog": dict(plan.catalog),
        **solver_and_input_json(plan),
    }


class SolvedPlan(Protocol):
    """What every source's cluster plan has: the solver's answer and what was read."""

    @property
    def solution(self) -> Solution: ...
    @property
    def node_count(self) -> int: ...
    @property
    def profile_count(self) -> int: ...
    @property
    def bad_count(self) -> int: ...
    @property
    def bad(self) -> tuple[BadLine, ...]: ...
    @property
    def duplicate_labels(self) -> tuple[str, ...]: ...


def solver_and_input_json(plan: SolvedPlan) -> dict[str, Any]:
    """The last two parts of a plan's JSON, whichever source it chose among: the solver's word and what was read."""
    return {
        "solver": {"name": "HiGHS (highspy)", "status": plan.solution.status, "objective": plan.solution.objective},
        "input": {
            "nodes": plan.node_count,
            "profiles": plan.profile_count,
            "bad_lines": plan.bad_count,
            "bad": [{"where": b.where, "why": b.why} for b in plan.bad],
            "duplicate_labels": list(plan.duplicate_labels),
        },
    }
