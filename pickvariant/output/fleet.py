"""The fleet's verdict for people and programs: text, Markdown (for the change ticket) and JSON. rules/fleet.py
judges; this module only words it. Labels, builds and reasons came from the nodes: escaped as the plan escapes them."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pickvariant._base.text import visible
from pickvariant.output.cluster_plan import PlanStyle, label_list
from pickvariant.rules.fleet import STATUSES, FleetVerdict, NodeResult

JSON_SCHEMA_VERSION = 1
SHOWN_NAMES = 20


def fleet_json(verdict: FleetVerdict) -> dict[str, Any]:
    counts = Counter(node.status for node in verdict.nodes)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "plan": verdict.plan,
        "all_proven": verdict.all_proven,
        "counts": {status: counts.get(status, 0) for status in STATUSES},
        "nodes": [
            {
                "label": node.label,
                "status": node.status,
                "why": node.why,
                "package": node.package,
                "branch": node.branch,
                "model": node.model,
                "tflops": node.figure,
            }
            for node in verdict.nodes
        ],
        "spread": [
            {"model": s.model, "package": s.package, "nodes": s.count, "low": s.low, "median": s.median, "high": s.high}
            for s in verdict.spreads
        ],
        "input": {
            "lines": verdict.lines,
            "bad_lines": verdict.bad_count,
            "bad": [{"where": b.where, "why": b.why} for b in verdict.bad],
            "not_in_plan": list(verdict.not_in_plan),
            "repeated_labels": list(verdict.repeated),
        },
    }


def _by_build(nodes: tuple[NodeResult, ...]) -> dict[str, list[NodeResult]]:
    """Nodes as the plan groups them: by the build it gives them, the unserved last."""
    groups: dict[str, list[NodeResult]] = defaultdict(list)
    for node in nodes:
        key = f"{node.package} (branch {node.branch})" if node.package else "no variant in the plan"
        groups[key].append(node)
    return dict(sorted(groups.items(), key=lambda item: (item[0] == "no variant in the plan", item[0])))


def fleet_lines(verdict: FleetVerdict, markdown: bool) -> list[str]:
    style = PlanStyle(markdown)
    h, item, sub_item, t = style.heading, style.item, style.sub_item, style.text
    counts = Counter(node.status for node in verdict.nodes)
    served = sum(1 for node in verdict.nodes if node.status != "unserved")
    summary = ", ".join(f"{counts[status]} {status}" for status in STATUSES if counts[status])
    out = [h(f"fleet: {counts['proven']} of {served} served node(s) proven ({summary or 'no node'})")]
    for build, nodes in _by_build(verdict.nodes).items():
        out.append(h(t(build)))
        for status in STATUSES:
            named = [node for node in nodes if node.status == status]
            if not named:
                continue
            if status in ("proven", "missing", "unserved") and len({node.why for node in named}) <= 1:
                why = f": {t(named[0].why)}" if named[0].why and status != "missing" else ""
                out.append(f"{item}{status} ({len(named)}){why} [{t(label_list([n.label for n in named]))}]")
                continue
            out.append(f"{item}{status} ({len(named)})")
            out += [f"{sub_item}{t(node.label)}: {t(node.why or '')}" for node in named[:SHOWN_NAMES]]
            if len(named) > SHOWN_NAMES:
                out.append(f"{sub_item}… {len(named) - SHOWN_NAMES} more (--format json lists every node)")
    if verdict.spreads:
        out.append(h("spread (TFLOP/s of proven and slow nodes, by device model and build)"))
        out += [
            f"{item}{t(s.model)} on {t(s.package)}: {s.count} node(s), {s.low:.1f} / {s.median:.1f} / {s.high:.1f} "
            "(lowest / median / highest)"
            for s in verdict.spreads
        ]
    out += _input_lines(verdict, style)
    return [visible(line) for line in out]


def _input_lines(verdict: FleetVerdict, style: PlanStyle) -> list[str]:
    h, item, t = style.heading, style.item, style.text
    out = []
    if verdict.not_in_plan:
        out.append(h(f"lines from labels the plan has no node for ({len(verdict.not_in_plan)})"))
        out.append(f"{item}{t(label_list(list(verdict.not_in_plan)))}")
    if verdict.repeated:
        out.append(h(f"labels with more than one line, the last judged ({len(verdict.repeated)})"))
        out.append(f"{item}{t(label_list(list(verdict.repeated)))}")
    if verdict.bad_count:
        out.append(h(f"input lines that are not verify lines ({verdict.bad_count})"))
        out += [f"{item}{t(b.where)}: {t(b.why)}" for b in verdict.bad]
        if verdict.bad_count > len(verdict.bad):
            out.append(f"{item}… {verdict.bad_count - len(verdict.bad)} more")
    return out
