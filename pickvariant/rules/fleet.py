"""`pickvariant fleet`: a cluster plan's nodes against the verify lines they sent back, one status each.

proven: the line probed the plan's package and branch, and every check passed; failed: verify failed (its first
reasons); other-build: the line probed another build than the plan's; missing: no line; slow: proven, but its
figure (bf16 GEMM on its GPUs, else the CPU's matmul) is far below the median of nodes with the same device model
and build; unserved: the plan gives it nothing (not counted against the fleet).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from pickvariant._base import strictjson
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant.rules.cluster_input import SHOWN_BAD_LINES, BadLine, line_text
from pickvariant.rules.plan_document import SCHEMA as PLAN_SCHEMA
from pickvariant.rules.plan_document import PlanDocument, PlannedNode, PlanShape

VERIFY_LINE_SCHEMA = PLAN_SCHEMA.with_name("verify-line.schema.json")
STATUSES = ("proven", "slow", "failed", "other-build", "missing", "unserved")
# A node below this share of its group's median is slow. Healthy H100/H200s of one model land within a few per cent
# of each other in verify's bf16 product (76-82% of peak, benchmarks/results/); 30% below the median is far
# outside that: thermals, a power cap, a shared GPU, a wrong build.
SLOW_SHARE_OF_MEDIAN = 0.7
# A median of fewer figures says little about what is normal for a model.
MIN_GROUP_FOR_MEDIAN = 3


@keyword_record
class NodeResult:
    label: str
    status: str  # one of STATUSES
    why: str | None
    package: str | None  # the plan's
    branch: str | None
    model: str | None = None  # the device model its figure is for
    figure: float | None = None  # TFLOP/s


@keyword_record
class Spread:
    model: str
    package: str
    count: int
    low: float
    median: float
    high: float


@keyword_record
class FleetVerdict:
    plan: str
    nodes: tuple[NodeResult, ...]
    spreads: tuple[Spread, ...]
    lines: int
    bad: tuple[BadLine, ...]
    bad_count: int
    not_in_plan: tuple[str, ...]  # labels of lines the plan has no node for
    repeated: tuple[str, ...]  # labels with more than one line (all judged: lines that disagree fail the node)

    @property
    def all_proven(self) -> bool:
        return all(node.status in ("proven", "unserved") for node in self.nodes)


def verify_document(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The verify object a line holds, or why it is none."""
    try:
        document = strictjson.loads(text)
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(document, dict) or "passed" not in document:
        return None, "not a `pickvariant verify --format json --compact --label NAME` line"
    try:
        validate(document, load_schema(VERIFY_LINE_SCHEMA))
    except SchemaError as error:
        return None, f"not a verify line that can be read: {error}"
    return document, None


def figure(line: Mapping[str, Any]) -> tuple[str, float] | None:
    """(the device model, its TFLOP/s): the slowest GPU's bf16 matmul, else the CPU's matmul; None if untimed."""
    probe = line.get("probe") or {}
    devices = {
        f"{kind}:{d.get('index')}": d.get("name", "GPU")
        for kind, key in (("cuda", "devices"), ("xpu", "xpu_devices"))  # an XPU build's Intel GPUs are its GPUs
        for d in probe.get(key, ())
    }
    # verify marks a sample too short to time (--quick sizes): its figure is launch latency, not the GPU's speed.
    timed = [c for c in line["checks"] if c.get("tflops") and not c.get("throughput_note")]
    gpu = [c for c in timed if c["name"] == "matmul bf16" and c["device"].startswith(("cuda", "xpu"))]
    if gpu:
        slowest = min(gpu, key=lambda check: check["tflops"])
        models = sorted({devices.get(check["device"], "GPU") for check in gpu})
        return " + ".join(models), float(slowest["tflops"])
    cpu = [c for c in timed if c["device"] == "cpu" and c["name"].startswith("matmul")]
    if cpu:
        capability = probe.get("cpu_capability") or "?"
        return f"CPU ({capability}, {cpu[0]['name']})", float(cpu[0]["tflops"])
    return None


def _kept(line: Mapping[str, Any]) -> dict[str, Any]:
    """What fleet judges of a line, and only that: 10,000 nodes' whole verdicts are not held (benchmarks/fleet_scale.py)."""
    return {
        "package": line["package"],
        "branch": line["branch"],
        "torch": (line.get("probe") or {}).get("torch"),  # what a wheel plan's node is judged by
        "passed": line["passed"],
        "reasons": line["reasons"][:2],
        "figure": figure(line),
    }


def _probed(line: Mapping[str, Any], shape: PlanShape) -> tuple[str | None, str | None]:
    """What a line says its node runs, as the plan names builds (its shape's fields): a Flox package and branch; a
    prebuilt plan's torch version (local label and all, as `torch.__version__` says it), which no index of its own
    can be told from."""
    build, *where = (line[name] for name in shape.probed)
    return build, where[0] if where else None


def _judge(node: PlannedNode, lines: Sequence[Mapping[str, Any]], shape: PlanShape) -> NodeResult:
    def result(status: str, why: str | None, found: tuple[str, float] | None = None) -> NodeResult:
        model, tflops = found if found else (None, None)
        return NodeResult(
            label=node.label,
            status=status,
            why=why,
            package=node.package,
            branch=node.branch,
            model=model,
            figure=tflops,
        )

    if node.package is None:
        return result("unserved", node.why)
    if not lines:
        return result("missing", "no verify line came back from it")
    verdicts = {(*_probed(each, shape), each["passed"]) for each in lines}
    if len(verdicts) > 1:
        # Two lines for one node that disagree: neither is trusted over the other (the last is not the truth).
        said = "; ".join(
            f"{p or 'no build'}{f' ({b})' if b else ''} {'passed' if ok else 'failed'}"
            for p, b, ok in sorted(verdicts, key=str)
        )
        return result("failed", f"its {len(lines)} verify lines disagree: {said}")
    # Lines that agree: the slowest figure stands for the node.
    timed = [each["figure"] for each in lines if each["figure"] is not None]
    line = {**lines[0], "figure": min(timed, key=lambda found: found[1]) if timed else None}
    found = _probed(line, shape)
    if found != (node.package, node.branch if len(shape.probed) > 1 else None):
        probed = shape.probed_said.format_map(line) if found[0] else "no build it could name"
        planned = shape.planned_said.format(package=node.package, branch=node.branch)
        return result("other-build", f"it probed {probed}; the plan gives {planned}")
    if not line["passed"]:
        return result("failed", "; ".join(line["reasons"][:2]) or "verify failed")
    return result("proven", None, line["figure"])


def _slow(results: list[NodeResult]) -> tuple[list[NodeResult], tuple[Spread, ...]]:
    """Proven nodes far below the median of their device model and build become slow; each group's spread."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for node in results:
        if node.status == "proven" and node.model is not None and node.figure is not None and node.package:
            groups[(node.model, node.package)].append(node.figure)
    medians = {key: statistics.median(values) for key, values in groups.items()}
    judged = []
    for node in results:
        key = (node.model or "", node.package or "")
        median = medians.get(key)
        judged_in_group = node.status == "proven" and len(groups.get(key, ())) >= MIN_GROUP_FOR_MEDIAN
        if judged_in_group and median and node.figure is not None and node.figure < SLOW_SHARE_OF_MEDIAN * median:
            share = 100.0 * node.figure / median
            why = (
                f"{node.figure:.1f} TFLOP/s, {share:.0f}% of the median {median:.1f} of the {len(groups[key])} "
                f"nodes with {node.model} on {node.package}"
            )
            node = replace(node, status="slow", why=why)
        judged.append(node)
    spreads = tuple(
        Spread(model=model, package=package, count=len(v), low=min(v), median=medians[(model, package)], high=max(v))
        for (model, package), v in sorted(groups.items())
    )
    return judged, spreads


@keyword_record
class Gathered:
    """The verify lines read: the last per label, and what was not one."""

    by_label: dict[str, list[dict[str, Any]]]
    lines: int
    bad: list[BadLine]
    bad_count: int
    repeated: list[str]


def gather(documents: Iterable[tuple[str, bytes | None, str | None]], planned: Collection[str] = ()) -> Gathered:
    """Every verify line of the inputs, bounded: a bad line is counted and the first named; every line of a label is
    kept (lines that disagree fail the node). A file named after a node of the plan (`RESULTS/n2.json`, as
    examples/rollout.yml writes them) speaks for that node alone: a line in it labelled otherwise is a bad line."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    bad: list[BadLine] = []
    lines = bad_count = 0
    repeated: set[str] = set()
    for where, raw, problem in documents:
        if raw is not None and not raw.strip():
            continue
        text, why = line_text(raw) if raw is not None else ("", problem or "unreadable")
        document, why = verify_document(text) if why is None else (None, why)
        owner = _file_node(where, planned)
        if document is not None and owner is not None and document["label"] != owner:
            why = f"labelled {document['label']!r:.80}, in the file of node {owner!r}"
            document = None
        if document is None:
            bad_count += 1
            if len(bad) < SHOWN_BAD_LINES:
                bad.append(BadLine(where, why or "unreadable"))
            continue
        lines += 1
        if document["label"] in by_label:
            repeated.add(document["label"])
        by_label.setdefault(document["label"], []).append(_kept(document))
    return Gathered(by_label=by_label, lines=lines, bad=bad, bad_count=bad_count, repeated=sorted(repeated))


def _file_node(where: str, planned: Collection[str]) -> str | None:
    """The node a result file is named after (`RESULTS/n2.json` or `n2.jsonl`, line N), where the plan has that node."""
    path = where.rsplit(":", 1)[0] if re.search(r":[0-9]+$", where) else where
    if path == "-":
        return None
    name = PurePath(path).name
    stem = name.rsplit(".", 1)[0] if name.endswith((".json", ".jsonl")) else name
    return stem if stem in planned else None


def fleet_verdict(plan: PlanDocument, gathered: Gathered) -> FleetVerdict:
    planned = {node.label for node in plan.nodes}
    results = [_judge(node, gathered.by_label.get(node.label, ()), plan.shape) for node in plan.nodes]
    judged, spreads = _slow(results)
    return FleetVerdict(
        plan=plan.where,
        nodes=tuple(judged),
        spreads=spreads,
        lines=gathered.lines,
        bad=tuple(gathered.bad),
        bad_count=gathered.bad_count,
        not_in_plan=tuple(sorted(label for label in gathered.by_label if label not in planned)),
        repeated=tuple(gathered.repeated),
    )
