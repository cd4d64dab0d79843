"""`pickvariant plan`: from a cluster's `detect` JSON lines to the fewest variants that serve every node.

Each node is decided again from its facts with this catalog (never trusting an old recommendation); nodes with
the same facts are one profile, which may get exactly the variants `detect` admits for it (Decision.candidates), in
detect's order. Choosing them is set cover with assignment, solved exactly as an integer program by HiGHS.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from pickvariant._base.errors import BadInput, PickVariantError
from pickvariant._base.native import stdout_silenced
from pickvariant._base.records import keyword_record, record
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts, facts_from_json
from pickvariant.rules import pairing
from pickvariant.rules.cluster_input import BadLine, Inputs
from pickvariant.rules.decide import decide
from pickvariant.rules.node_facts import fingerprint
from pickvariant.rules.plan_assign import NodePlan, assign
from pickvariant.rules.sets import SetShape, builds_on, relation, shape
from pickvariant.sources.build import Catalog, Companion, Variant

JSON_SCHEMA_VERSION = 1


@record
class Profile:
    facts: HostFacts | None
    candidates: tuple[Variant, ...]
    why_none: str | None
    summary: str


def hardware_summary(facts: HostFacts) -> str:
    gpus = Counter(str(gpu.compute_capability) for gpu in facts.gpus)
    # U+00D7, the multiplication sign, is what people read in a count of GPUs.
    gpu_text = ", ".join(f"{count}× GPU {cc}" for cc, count in sorted(gpus.items())) or "no GPU"  # noqa: RUF001
    driver = f", driver {facts.driver.version}" if facts.driver and facts.driver.version else ""
    return f"{facts.cpu.model or facts.arch} ({facts.os}/{facts.arch}); {gpu_text}{driver}"


def decide_profiles(inputs: Inputs, catalog: Catalog, options: Request) -> list[Profile]:
    profiles = []
    for hardware in inputs.hardware:
        try:
            facts = facts_from_json(hardware, catalog)
        except PickVariantError as error:
            profiles.append(Profile(None, (), f"its facts are unusable: {error}", "unreadable facts"))
            continue
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
        profiles.append(Profile(facts, candidates, why, hardware_summary(facts)))
    return profiles


@record
class Solution:
    chosen: tuple[int, ...]  # variant ids
    assignment: tuple[int | None, ...]  # per group: the variant id, or None
    status: str
    objective: float


def solve(groups: Sequence[tuple[int, Sequence[int]]], max_variants: int | None) -> Solution:
    """Exactly: choose variants and give each group (node count, candidate ids best first) one of its candidates.

    Without a limit: every group is served, by the fewest variants, and among those the assignment
    with the least node-weighted rank. With max_variants K: the most nodes served, then the least
    node-weighted rank, then the fewest variants, using at most K. Weights make each goal dominate
    the next, so one integer program answers all of them."""
    program = _program(groups, max_variants)
    status, solution, objective = _run_highs(program)
    column_of = {v: i for i, v in enumerate(program.variants)}
    chosen = tuple(v for v in program.variants if solution[column_of[v]] > 0.5)
    assignment: list[int | None] = [None] * len(groups)
    for g, x, y in program.pairs:
        if solution[y] > 0.5:
            assignment[g] = program.variants[x]
    return Solution(chosen, tuple(assignment), status, objective)


@record
class _Program:
    """The integer program: a 0/1 column per variant (chosen), per (group, candidate) pair (assigned) and, under a
    limit, per group (left unserved); each row is its columns' coefficients and its bounds."""

    variants: list[int]
    pairs: list[tuple[int, int, int]]  # (group, variant column, pair column)
    costs: list[float]
    rows: list[tuple[list[tuple[int, float]], float, float]]


def _program(groups: Sequence[tuple[int, Sequence[int]]], max_variants: int | None) -> _Program:
    variants = sorted({v for _, candidates in groups for v in candidates})
    column_of = {v: i for i, v in enumerate(variants)}
    rank_total = sum(count * max(len(candidates) - 1, 0) for count, candidates in groups)
    if max_variants is None:
        choose_cost, rank_weight, unserved_cost = float(rank_total + 1), 1.0, None
    else:
        rank_weight = float(max_variants + 1)
        choose_cost = 1.0
        unserved_cost = rank_weight * rank_total + max_variants + 1.0
    costs = [choose_cost] * len(variants)
    pairs: list[tuple[int, int, int]] = []
    for g, (count, candidates) in enumerate(groups):
        for rank, v in enumerate(candidates):
            pairs.append((g, column_of[v], len(costs)))
            costs.append(rank_weight * count * rank)
    slack_of = {}
    if unserved_cost is not None:
        for g, (count, _) in enumerate(groups):
            slack_of[g] = len(costs)
            costs.append(unserved_cost * count)
    inf = float("inf")  # no bound; handed to HiGHS as its own -kHighsInf
    rows: list[tuple[list[tuple[int, float]], float, float]] = [
        ([(y, 1.0), (x, -1.0)], -inf, 0.0)
        for _, x, y in pairs  # a group gets only a chosen variant
    ]
    by_group: dict[int, list[int]] = defaultdict(list)
    for g, _, y in pairs:
        by_group[g].append(y)
    for g in range(len(groups)):
        entries = [(y, 1.0) for y in by_group[g]] + ([(slack_of[g], 1.0)] if g in slack_of else [])
        if entries:
            rows.append((entries, 1.0, 1.0))  # each group served once, or left unserved
    if max_variants is not None:
        rows.append(([(i, 1.0) for i in range(len(variants))], 0.0, float(max_variants)))
    return _Program(variants=variants, pairs=pairs, costs=costs, rows=rows)


def _run_highs(program: _Program) -> tuple[str, Sequence[float], float]:
    """HiGHS's status, column values and objective for the program; an error unless it is optimal."""
    import highspy
    import numpy as np

    # HiGHS 1.16 prints its banner to fd 1 from the constructor, before output_flag can be set.
    with stdout_silenced():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.5)  # every cost is an integer: a gap below 1 is optimal
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    n = len(program.costs)
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(program.costs, dtype=np.float64))
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * n))
    if program.rows:
        starts = np.cumsum([0] + [len(entries) for entries, _, _ in program.rows[:-1]], dtype=np.int32)
        flat = [entry for entries, _, _ in program.rows for entry in entries]
        h.addRows(
            len(program.rows),
            np.array([max(low, -highspy.kHighsInf) for _, low, _ in program.rows]),
            np.array([high for _, _, high in program.rows]),
            len(flat),
            starts,
            np.array([column for column, _ in flat], dtype=np.int32),
            np.array([value for _, value in flat], dtype=np.float64),
        )
    with stdout_silenced():  # and whatever a version prints while solving, should output_flag not cover it
        h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise PickVariantError(f"the solver found no optimal plan (HiGHS: {status})")
    return status, h.getSolution().col_value, float(h.getInfo().objective_function_value)


@keyword_record
class ClusterPlan:
    variants: tuple[tuple[Variant, int, tuple[str, ...]], ...]  # variant, node count, hardware summaries
    nodes: tuple[NodePlan[Variant], ...]
    solution: Solution
    node_count: int
    bad: tuple[BadLine, ...]
    bad_count: int
    profile_count: int
    duplicate_labels: tuple[str, ...] = ()
    # Each node's profile (by index) and each profile's fingerprint (rules/node_facts.py; None: facts unusable),
    # and the catalog the plan was made from: what `install --plan` checks before it installs an assignment.
    profile_of: tuple[int, ...] = ()
    fingerprints: tuple[dict[str, Any] | None, ...] = ()
    catalog: Mapping[str, str] = MappingProxyType({})
    # With --with: each chosen variant's companions, by (branch, package), and the set's shape (what is built).
    companions: Mapping[tuple[str, str], tuple[Companion, ...]] = MappingProxyType({})
    shapes: Mapping[tuple[str, str], SetShape] = MappingProxyType({})


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


def make_cluster_plan(inputs: Inputs, catalog: Catalog, options: Request, max_variants: int | None) -> ClusterPlan:
    """The cluster's plan: every hardware profile decided, the fewest builds solved for, each node given one."""
    check_inputs(inputs, max_variants)
    profiles = decide_profiles(inputs, catalog, options)
    grouped = _groups(inputs, profiles, catalog)
    solution = solve(grouped[1], max_variants) if grouped[1] else Solution((), (), "Optimal (nothing to serve)", 0.0)
    unserved = f"none of the {max_variants} chosen variant(s) runs here"
    nodes, served, covers = assign(inputs, profiles, grouped, solution.assignment, catalog.variants, cost_of, unserved)
    chosen_variants = tuple(
        (catalog.variants[v], served[v], tuple(sorted(covers[v])))
        for v in sorted(
            solution.chosen, key=lambda v: (-served[v], catalog.variants[v].branch, catalog.variants[v].package)
        )
    )
    companions, shapes = _sets(chosen_variants, catalog, options)
    return ClusterPlan(
        variants=chosen_variants,
        nodes=nodes,
        solution=solution,
        node_count=len(inputs.labels),
        bad=tuple(inputs.bad),
        bad_count=inputs.bad_count,
        profile_count=len(profiles),
        duplicate_labels=tuple(inputs.duplicate_labels()),
        profile_of=tuple(inputs.profile_of),
        fingerprints=tuple(fingerprint(p.facts, catalog) if p.facts else None for p in profiles),
        catalog=catalog_identity(catalog),
        companions=companions,
        shapes=shapes,
    )


def catalog_identity(catalog: Catalog) -> dict[str, str]:
    """What names a catalog: its build repository, the commit synced, and a digest of every variant it holds."""
    names = "\n".join(sorted(f"{v.branch}/{v.package}" for v in catalog.variants))
    digest = hashlib.sha256(names.encode("utf-8")).hexdigest()[:32]
    return {"repo": catalog.source.repo, "commit": catalog.source.commit, "variants_sha256": digest}


def check_inputs(inputs: Inputs, max_variants: int | None) -> None:
    if not inputs.labels and not inputs.bad_count:
        raise BadInput(
            "no node in the input: it holds no line at all "
            "(give the output of `pickvariant detect --compact` from each node: a file, a directory of them, or -)"
        )
    if not inputs.labels:
        raise BadInput(
            f"no node in the input: {inputs.bad_count} line(s) were not detect JSON"
            + (f" (first: {inputs.bad[0].where}: {inputs.bad[0].why})" if inputs.bad else "")
        )
    if max_variants is not None and max_variants < 1:
        raise BadInput(f"--max-variants {max_variants}: give 1 or more")


def _groups(
    inputs: Inputs, profiles: Sequence[Profile], catalog: Catalog
) -> tuple[dict[int, int], list[tuple[int, tuple[int, ...]]]]:
    index_of = {id(variant): i for i, variant in enumerate(catalog.variants)}
    return group_profiles(inputs, [tuple(index_of[id(v)] for v in profile.candidates) for profile in profiles])


def group_profiles(
    inputs: Inputs, candidate_ids: Sequence[tuple[int, ...]]
) -> tuple[dict[int, int], list[tuple[int, tuple[int, ...]]]]:
    """Profiles with the same ranked candidates (ids, best first; none: unserved) are interchangeable: one group
    each, their node counts added. Returns each served profile's group and the groups as `solve` takes them."""
    counts = Counter(inputs.profile_of)
    group_of_profile: dict[int, int] = {}
    groups: list[tuple[int, tuple[int, ...]]] = []
    group_index: dict[tuple[int, ...], int] = {}
    for p, key in enumerate(candidate_ids):
        if not key:
            continue
        if key not in group_index:
            group_index[key] = len(groups)
            groups.append((0, key))
        g = group_index[key]
        groups[g] = (groups[g][0] + counts[p], key)
        group_of_profile[p] = g
    return group_of_profile, groups


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


def builds(plan: ClusterPlan, variant: Variant) -> list[tuple[str | None, str, str]]:
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


def cluster_plan_json(plan: ClusterPlan) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "source": "flox",  # as every plan says its source (install --plan refuses another source's plan)
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
            for v, count, _ in plan.variants
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
