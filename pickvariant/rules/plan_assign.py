"""Each node of a cluster plan given the solver's answer, for every source: the build it gets (a Flox variant, a
wheel), how near its own best that is, or why it gets none; and each build chosen with the nodes it serves.

rules/cluster_plan.py (recipes) and rules/wheel_cluster_plan.py (prebuilt builds) decide their profiles each by their
own stages and solve the same integer program (cluster_plan.solve); what the answer gives each node is this one
function.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from pickvariant._base.records import record
from pickvariant.rules.cluster_input import Inputs

B = TypeVar("B")
B_co = TypeVar("B_co", covariant=True)


@record
class NodePlan(Generic[B]):
    label: str
    build: B | None  # None: no build chosen runs there (`why` says so)
    rank: int | None  # 1 = the node's own best
    why: str | None


class Served(Protocol[B_co]):
    """A hardware profile as the plan reads it: the builds it may get, best first, and why none where there are none."""

    @property
    def candidates(self) -> Sequence[B_co]: ...

    @property
    def why_none(self) -> str | None: ...

    @property
    def summary(self) -> str: ...


def assign(
    inputs: Inputs,
    profiles: Sequence[Served[B]],
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
        build, rank = builds[chosen], list(grouped[group][1]).index(chosen) + 1
        served[chosen] += 1
        covers[chosen].add(profile.summary)
        nodes.append(NodePlan(label, build, rank, None if rank == 1 else cost_of(profile.candidates[0], build)))
    return tuple(nodes), served, covers
