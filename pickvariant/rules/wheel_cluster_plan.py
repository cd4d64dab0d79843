"""`pickvariant plan --source wheels`: a cluster's fewest PyTorch wheel builds, and which node gets which.

Each hardware profile is decided by the wheel rules (rules/wheel_pick.py), as `detect --source wheels` decides it
on that node with no environment read; the wheels a profile may get are exactly the decision's candidates, best
first (with --with, those whose release pairs every companion). The choice is the same integer program the Flox
plan solves (rules/fewest_builds.py, one for every source): every node served by the fewest wheel builds, then each
node as near its own best as those allow.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pickvariant._base.errors import PickVariantError
from pickvariant._base.records import keyword_record
from pickvariant._base.request import Request
from pickvariant.machine.facts import facts_from_json
from pickvariant.rules.cluster_input import BadLine, Inputs
from pickvariant.rules.fewest_builds import (
    NodePlan,
    Profile,
    Solution,
    check_inputs,
    fewest,
    hardware_summary,
    unreadable,
)
from pickvariant.rules.node_facts import wheel_fingerprint
from pickvariant.rules.wheel_pick import pick_wheel
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.wheel_build import PairedRelease, WheelBuild, WheelCatalog


@keyword_record
class WheelClusterPlan:
    builds: tuple[tuple[WheelBuild, int, tuple[str, ...]], ...]  # build, node count, hardware summaries
    companions: dict[WheelBuild, tuple[PairedRelease, ...]]
    index_root: str
    nodes: tuple[NodePlan[WheelBuild], ...]
    solution: Solution
    node_count: int
    bad: tuple[BadLine, ...]
    bad_count: int
    profile_count: int
    python: str | None  # --python-version, where the plan is for one Python
    duplicate_labels: tuple[str, ...] = ()
    # Each node's profile (by index) and each profile's fingerprint: what `install --plan` checks a node against.
    profile_of: tuple[int, ...] = ()
    fingerprints: tuple[dict[str, Any] | None, ...] = ()
    catalog: dict[str, str] | None = None  # the wheel facts it was made from (wheels_identity)
    source: str = "wheels"  # the source of prebuilt builds it was planned from (sources/registry.py)

    def index_url(self, build: WheelBuild) -> str:
        return f"{self.index_root}/{build.variant}"


def _profiles(
    inputs: Inputs, hardware: Hardware, wheels: WheelCatalog, options: Request, index_root: str
) -> list[Profile[WheelBuild]]:
    profiles = []
    for node_hardware in inputs.hardware:
        try:
            facts = facts_from_json(node_hardware, hardware)
        except PickVariantError as error:
            profiles.append(unreadable(error))
            continue
        decision = pick_wheel(facts, hardware, wheels, options, None, index_root)
        candidates = tuple(
            build
            for build in decision.candidates
            if all(wheels.companion(build.torch, project) for project in options.with_projects)
        )
        why = None if candidates else "; ".join((*decision.reasons[-1:], *decision.hints)) or "no wheel fits"
        profiles.append(Profile(candidates, why, hardware_summary(facts), wheel_fingerprint(facts, hardware)))
    return profiles


def wheels_identity(wheels: WheelCatalog) -> dict[str, str]:
    """What names the wheel facts a plan was made from: when they were compiled, and a digest of every build."""
    names = "\n".join(sorted(f"{b.platform}/{b.local}/{','.join(b.python)}" for b in wheels.builds))
    return {"facts_compiled": wheels.facts_compiled, "builds_sha256": hashlib.sha256(names.encode()).hexdigest()[:32]}


def cost_of(best: WheelBuild, got: WheelBuild) -> str:
    """What a node loses with `got` instead of its own best wheel."""
    losses = []
    if got.torch != best.torch:
        losses.append(f"PyTorch {got.torch} instead of {best.torch}")
    if got.cuda != best.cuda:
        losses.append(f"CUDA {got.cuda or 'none'} instead of {best.cuda or 'none'}")
    return ", ".join(losses) or f"{got.local} instead of {best.local}"


def make_wheel_cluster_plan(
    inputs: Inputs,
    hardware: Hardware,
    wheels: WheelCatalog,
    options: Request,
    max_variants: int | None,
    index_root: str,
    source: str = "wheels",
) -> WheelClusterPlan:
    """The cluster's plan among the wheels: every profile decided, the fewest wheel builds solved for."""
    check_inputs(inputs, max_variants)
    profiles = _profiles(inputs, hardware, wheels, options, index_root)
    id_of = {build: i for i, build in enumerate(wheels.builds)}
    ids = [tuple(id_of[build] for build in profile.candidates) for profile in profiles]
    solution, nodes, chosen_builds = fewest(
        inputs, profiles, ids, wheels.builds, cost_of, max_variants, "wheel build", lambda b: (b.platform, b.local)
    )
    return WheelClusterPlan(
        source=source,
        builds=chosen_builds,
        companions={
            build: tuple(pair for p in options.with_projects if (pair := wheels.companion(build.torch, p)))
            for build, _, _ in chosen_builds
        },
        index_root=index_root,
        nodes=nodes,
        solution=solution,
        node_count=len(inputs.labels),
        bad=tuple(inputs.bad),
        bad_count=inputs.bad_count,
        profile_count=len(profiles),
        python=options.python,
        duplicate_labels=tuple(inputs.duplicate_labels()),
        profile_of=tuple(inputs.profile_of),
        fingerprints=tuple(profile.fingerprint for profile in profiles),
        catalog=wheels_identity(wheels),
    )
