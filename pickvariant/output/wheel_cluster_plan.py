"""A cluster's plan among PyTorch's own wheels, as JSON, text or Markdown: which wheel builds, which node gets which,
and the command each node runs. rules/wheel_cluster_plan.py decides it; this module only words it."""

from __future__ import annotations

import shlex
from collections import defaultdict
from typing import Any

from pickvariant._base.text import visible
from pickvariant.install.wheel_command import installer_argv, requirements
from pickvariant.output.cluster_plan import PlanStyle, assignment_lines, input_lines, label_list
from pickvariant.rules.cluster_plan import JSON_SCHEMA_VERSION, solver_and_input_json
from pickvariant.rules.wheel_cluster_plan import WheelClusterPlan
from pickvariant.sources.wheel_build import WheelBuild

# What each node runs: its own environment's interpreter, named as people name it on a node.
NODE_PYTHON = "python3"


def _python_tags(plan: WheelClusterPlan, build: WheelBuild) -> list[str]:
    return list(build.python) if plan.python is None else [f"cp{plan.python.replace('.', '')}"]


def _build_json(plan: WheelClusterPlan, build: WheelBuild, count: int) -> dict[str, Any]:
    companions = plan.companions.get(build, ())
    return {
        "torch": build.local,
        "release": build.torch,
        "variant": build.variant,
        "platform": build.platform,
        "cuda": build.cuda,
        "min_driver": str(build.min_driver) if build.min_driver else None,
        "index_url": plan.index_url(build),
        "python": _python_tags(plan, build),
        "nodes": count,
        "companions": [{"project": pair.project, "version": pair.version} for pair in companions],
        "requirements": requirements(build, companions),
    }


def wheel_cluster_plan_json(plan: WheelClusterPlan) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "source": plan.source,
        "index_root": plan.index_root,
        "builds": [_build_json(plan, build, count) for build, count, _ in plan.builds],
        "nodes": [
            {
                "label": node.label,
                "torch": node.build.local if node.build else None,
                "variant": node.build.variant if node.build else None,
                "platform": node.build.platform if node.build else None,
                "index_url": plan.index_url(node.build) if node.build else None,
                "rank": node.rank,
                "why": node.why,
                "profile": profile,
            }
            for node, profile in zip(plan.nodes, plan.profile_of, strict=True)
        ],
        "profiles": list(plan.fingerprints),
        "catalog": dict(plan.catalog or {}),
        **solver_and_input_json(plan),
    }


def _labels_by_build(plan: WheelClusterPlan) -> dict[WheelBuild, list[str]]:
    found: dict[WheelBuild, list[str]] = defaultdict(list)
    for node in plan.nodes:
        if node.build is not None:
            found[node.build].append(node.label)
    return found


def wheel_cluster_plan_lines(plan: WheelClusterPlan, markdown: bool) -> list[str]:
    """The plan for people: the chosen wheel builds with their nodes and the command each node runs, who gets less
    than its own best, who gets nothing. Outside text (labels, CPU models) is escaped as the Flox plan escapes it."""
    style = PlanStyle(markdown)
    h, item, sub_item, code, t = style.heading, style.item, style.sub_item, style.code, style.text
    out = [
        h(f"{len(plan.builds)} wheel build(s) for {plan.node_count} node(s) ({plan.profile_count} hardware profile(s))")
    ]
    labels = _labels_by_build(plan)
    for build, count, summaries in plan.builds:
        companions = plan.companions.get(build, ())
        pinned = " ".join(requirements(build, companions))
        out.append(f"{item}{code(pinned)} from {code(plan.index_url(build))} ({build.platform}): {count} node(s)")
        out += [f"{sub_item}covers {t(summary)}" for summary in summaries[:6]]
        out.append(f"{sub_item}nodes: {t(label_list(labels[build]))}")
        argv = installer_argv("pip", NODE_PYTHON, build, companions, plan.index_url(build))
        out.append(f"{sub_item}each of them runs: {code(shlex.join(argv))}")
    given = [(n.label, n.build.local if n.build else None, n.rank, n.why) for n in plan.nodes]
    out += assignment_lines(given, "wheel", style)
    out += input_lines(plan.duplicate_labels, plan.solution, plan.bad, plan.bad_count, style)
    return [visible(line) for line in out]
