"""The fewest builds that serve every node of a cluster, and which node gets which: one for every source.

rules/cluster_plan.py (the recipes' plan and a prebuilt build's) checks its input here (`check_inputs`) and
decides each hardware profile by its source's stages into one `Profile` (the builds it may get, best
first, its hardware in words); from there on a plan is this module's: profiles with the same candidates grouped
(`group_profiles`), the choice solved exactly as a set-cover-with-assignment integer program by HiGHS (highspy)
(`solve`), and each node given its build, how near its own best that is, or why it gets none (`assign`, one
`NodePlan`); `fewest` runs the three.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from pickvariant._base.errors import BadInput, PickVariantError
from pickvariant._base.native import stdout_silenced
from pickvariant._base.records import record
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.othergpu import VENDOR_NAMES
from pickvariant.rules.cluster_input import Inputs

B = TypeVar("B")


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


@record
class NodePlan(Generic[B]):
    label: str
    build: B | None  # None: no build chosen runs there (`why` says so)
    rank: int | None  # 1 = the node's own best
    why: str | None


@record
class Profile(Generic[B]):
    """A hardware profile as a plan reads it, decided by its source's stages: the builds it may get, best first, why
    none where there are none (what detect would say there), its hardware in words, and what `install --plan`
    checks a node against (rules/node_facts.py; None where its facts are unusable)."""

    candidates: tuple[B, ...]
    why_none: str | None
    summary: str
    fingerprint: dict[str, Any] | None = None


def unreadable(error: PickVariantError) -> Profile[Any]:
    return Profile((), f"its facts are unusable: {error}", "unreadable facts")


def hardware_summary(facts: HostFacts) -> str:
    gpus = Counter(f"GPU {gpu.compute_capability}" for gpu in facts.gpus)
    # AMD and Intel GPUs by what names them: named, never hidden.
    others = Counter(
        f"{VENDOR_NAMES.get(gpu.vendor, gpu.vendor)} GPU {gpu.target_id or gpu.device_id or 'of unknown model'}"
        for gpu in facts.other_gpus
    )
    # U+00D7, the multiplication sign, is what people read in a count of GPUs.
    gpu_text = (
        ", ".join(f"{count}× {gpu}" for gpu, count in (*sorted(gpus.items()), *sorted(others.items())))  # noqa: RUF001
        or "no GPU"
    )
    driver = f", driver {facts.driver.version}" if facts.driver and facts.driver.version else ""
    return f"{facts.cpu.model or facts.arch} ({facts.os}/{facts.arch}); {gpu_text}{driver}"


def assign(
    inputs: Inputs,
    profiles: Sequence[Profile[B]],
    groups: tuple[dict[int, int], Sequence[tuple[int, Sequence[int]]]],
    answer: Sequence[int | None],
    builds: Sequence[B],
    cost_of: Callable[[B, B], str],
    unserved: str,
) -> tuple[tuple[NodePlan[B], ...], Counter[int], dict[int, set[str]]]:
    """Each node's plan, in the input's order; how many nodes each build (by id) serves, and the hardware it covers.
    `groups`: each profile's group and each group's (node count, candidate ids best first); `answer`: each group's
    build id (None: unserved, where the number of builds was limited); `unserved`: why a node none serves gets none."""
    group_of_profile, grouped = groups
    nodes: list[NodePlan[B]] = []
    served: Counter[int] = Counter()
    covers: dict[int, set[str]] = defaultdict(set)
    for label, p in zip(inputs.labels, inputs.profile_of, strict=False):
        profile, group = profiles[p], group_of_profile.get(p)
        chosen = answer[group] if group is not None else None
        if group is None or chosen is None:
            nodes.append(NodePlan(label, None, None, profile.why_none or unserved))
            continue
        build, rank = builds[chosen], grouped[group][1].index(chosen) + 1
        served[chosen] += 1
        covers[chosen].add(profile.summary)
        nodes.append(NodePlan(label, build, rank, None if rank == 1 else cost_of(profile.candidates[0], build)))
    return tuple(nodes), served, covers


def fewest(
    inputs: Inputs,
    profiles: Sequence[Profile[B]],
    candidate_ids: Sequence[tuple[int, ...]],
    builds: Sequence[B],
    cost_of: Callable[[B, B], str],
    max_builds: int | None,
    noun: str,
    order: Callable[[B], tuple[str, ...]],
) -> tuple[Solution, tuple[NodePlan[B], ...], tuple[tuple[B, int, tuple[str, ...]], ...]]:
    """The solver's answer, each node's plan, and each build chosen (most nodes first, then by `order`) with how many
    nodes it serves and the hardware it covers. `candidate_ids`: each profile's candidates as ids into `builds`."""
    grouped = group_profiles(inputs, candidate_ids)
    solution = solve(grouped[1], max_builds) if grouped[1] else Solution((), (), "Optimal (nothing to serve)", 0.0)
    unserved = f"none of the {max_builds} chosen {noun}(s) runs here"
    nodes, served, covers = assign(inputs, profiles, grouped, solution.assignment, builds, cost_of, unserved)
    ranked = sorted(solution.chosen, key=lambda b: (-served[b], *order(builds[b])))
    return solution, nodes, tuple((builds[b], served[b], tuple(sorted(covers[b]))) for b in ranked)
