"""A cluster's plan, whichever source it chose among: as JSON, and for people as text or Markdown (which builds,
which nodes get what, the commands that build and publish a recipes' builds, the command each node runs to install a
prebuilt one). rules/cluster_plan.py decides it; this module only words it."""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pickvariant._base.text import markdown_code, markdown_text, visible
from pickvariant._base.versions import cpython_tag
from pickvariant.rules.cluster_input import BadLine
from pickvariant.rules.cluster_plan import (
    JSON_SCHEMA_VERSION,
    PrebuiltPlan,
    RecipePlan,
    builds,
    solver_and_input_json,
)
from pickvariant.rules.fewest_builds import Solution
from pickvariant.rules.sets import relation
from pickvariant.sources import registry
from pickvariant.sources.build import GENERATED_BY, Variant

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.sources.runs_on import Build

# What each node of a plan of prebuilt builds runs: its own environment's interpreter, as people name it on a node.
NODE_PYTHON = "python3"


def grouped_labels(
    nodes: Iterable[tuple[str, str]],
) -> list[tuple[str, list[str]]]:
    """(label, what it is grouped by) pairs as each group's key and its labels, the largest group first."""
    groups: dict[str, list[str]] = defaultdict(list)
    for label, key in nodes:
        groups[key].append(label)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def assignment_lines(
    nodes: Sequence[tuple[str, str | None, int | None, str | None]], noun: str, style: PlanStyle
) -> list[str]:
    """Who gets less than its own best, and who gets nothing, grouped by why; each node as (label, the build it is
    given or None, its rank, why), whichever source the plan chose among."""
    h, item, t = style.heading, style.item, style.text
    out = []
    downgraded = [(label, f"{given}: {why}") for label, given, rank, why in nodes if given is not None and rank != 1]
    if downgraded:
        out.append(h(f"nodes that get less than their own best ({len(downgraded)})"))
    for why, labels in grouped_labels(downgraded):
        out.append(f"{item}{len(labels)} node(s) get {t(why)} [{t(label_list(labels))}]")
    unserved = [(label, why or "") for label, given, _, why in nodes if given is None]
    if unserved:
        out.append(h(f"nodes with no {noun} ({len(unserved)})"))
    for why, labels in grouped_labels(unserved):
        out.append(f"{item}{len(labels)} node(s): {t(why)} [{t(label_list(labels))}]")
    return out


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def fold_labels(labels: Iterable[str]) -> list[str]:
    """Labels as hostlist ranges, as Slurm and pdsh print them: node01…node64 → node[01-64].

    Numbers fold only with the same prefix and digit count, so node9 and node10 stay apart
    (a range must expand back to exactly the labels it came from)."""
    numbered: dict[tuple[str, int], list[int]] = defaultdict(list)
    plain: list[str] = []
    for label in labels:
        match = _NUMBERED.match(label)
        if match:
            numbered[(match.group(1), len(match.group(2)))].append(int(match.group(2)))
        else:
            plain.append(label)
    folded = sorted(set(plain))
    for (prefix, width), numbers in sorted(numbered.items()):
        numbers = sorted(set(numbers))
        runs: list[str] = []
        start = previous = numbers[0]
        for number in [*numbers[1:], -2]:
            if number != previous + 1:
                runs.append(f"{start:0{width}d}" + (f"-{previous:0{width}d}" if previous != start else ""))
                start = number
            previous = number
        folded.append(f"{prefix}{runs[0]}" if runs == [f"{numbers[0]:0{width}d}"] else f"{prefix}[{','.join(runs)}]")
    return folded


def label_list(labels: list[str], shown: int = 12) -> str:
    folded = fold_labels(labels)
    return ", ".join(folded[:shown]) + (
        f", … ({len(folded) - shown} more groups; --format json lists every node)" if len(folded) > shown else ""
    )


SHOWN_DUPLICATES = 20

# Where a build command can run: Flox builds for the system it runs on.
_BUILDERS = {
    "x86_64-linux": "an x86_64 Linux machine",
    "aarch64-linux": "an aarch64 Linux machine",
    "aarch64-darwin": "an Apple Silicon Mac",
}


class PlanStyle:
    """How the plan is written: as text (controls shown as escapes) or as Markdown (outside text escaped)."""

    def __init__(self, markdown: bool) -> None:
        self.heading: Callable[[str], str] = (lambda text: f"## {text}") if markdown else (lambda text: f"{text}:")
        self.item = "- " if markdown else "  "
        self.sub_item = "  - " if markdown else "    "  # nested under the item above it
        self.code: Callable[[str], str] = markdown_code if markdown else visible
        self.text: Callable[[str], str] = markdown_text if markdown else visible


def cluster_plan_lines(plan: RecipePlan, org: str | None, markdown: bool) -> list[str]:
    """The plan for people: chosen builds, who gets less than their best, who gets nothing, the commands.

    Labels, CPU models, reasons and repository names come from the cluster's lines and the catalog: in Markdown
    each is escaped (no link, image or HTML of theirs renders), in text its controls are shown as escapes."""
    style = PlanStyle(markdown)
    h, item = style.heading, style.item
    out = [
        h(f"{len(plan.builds)} variant(s) for {plan.node_count} node(s) ({plan.profile_count} hardware profile(s))"),
        *_variant_lines(plan, style),
    ]
    given = [(n.label, n.build.package if n.build else None, n.rank, n.why) for n in plan.nodes]
    out += assignment_lines(given, "variant", style)
    out.append(h("build and publish (in a clone of the build repository, on each variant's branch)"))
    for variant, _, _ in plan.builds:
        out += _build_lines(plan, variant, org or "ORG", style)
    if plan.builds:
        out.append(h("roll out (each node installs what this plan gives it and verifies it; then the fleet's verdict)"))
        out += [f"{item}{style.code(step)}" for step in rollout_steps(org or "ORG")]
    out += input_lines(plan.duplicate_labels, plan.solution, plan.bad, plan.bad_count, style)
    # Every outside string was made safe as it went in: a line break or an escape in one cannot forge or hide a
    # line of the plan (the line is made visible once more, for what this module wrote itself).
    return [visible(line) for line in out]


def input_lines(
    duplicate_labels: Sequence[str], solution: Solution, bad: Sequence[BadLine], bad_count: int, style: PlanStyle
) -> list[str]:
    """A plan's last sections, whichever source: labels given twice, the solver's status, the lines not nodes."""
    h, item, t = style.heading, style.item, style.text
    out = []
    if duplicate_labels:
        out.append(h(f"labels on more than one line ({len(duplicate_labels)})"))
        out += [f"{item}{t(said)}" for said in duplicate_labels[:SHOWN_DUPLICATES]]
        if len(duplicate_labels) > SHOWN_DUPLICATES:
            out.append(f"{item}… {len(duplicate_labels) - SHOWN_DUPLICATES} more (--format json lists them all)")
    out.append(h("solver"))
    out.append(f"{item}HiGHS (highspy): {solution.status}, objective {solution.objective:g}")
    if bad_count:
        out.append(h(f"input lines that are not nodes ({bad_count})"))
        out += [f"{item}{t(b.where)}: {t(b.why)}" for b in bad]
        if bad_count > len(bad):
            out.append(f"{item}… {bad_count - len(bad)} more")
    return out


def rollout_steps(org: str) -> list[str]:
    """The commands that carry a plan out through Ansible (examples/rollout.yml) and read the results back,
    each quoted for the shell (INPUT and INVENTORY are the admin's own)."""
    playbook = ["ansible-playbook", "-i", "INVENTORY", "examples/rollout.yml", "-e", "plan=plan.json"]
    return [
        shlex.join(["pickvariant", "plan", "INPUT", "--format", "json"]) + " > plan.json",
        shlex.join([*playbook, "-e", f"org={org}", "-e", "results_dir=results"]),
        shlex.join(["pickvariant", "fleet", "plan.json", "results"]),
    ]


def _variant_lines(plan: RecipePlan, style: PlanStyle) -> list[str]:
    """Each chosen build: its companions, what it covers, its nodes."""
    code, t, item, sub_item = style.code, style.text, style.item, style.sub_item
    labels_of: dict[tuple[str, str], list[str]] = defaultdict(list)
    for node in plan.nodes:
        if node.build is not None:
            labels_of[(node.build.branch, node.build.package)].append(node.label)
    out = []
    for variant, count, summaries in plan.builds:
        out.append(
            f"{item}{code(variant.package)} (branch {t(variant.branch)}, PyTorch {t(variant.torch)}): {count} node(s)"
        )
        out += [
            f"{sub_item}with {code(c.package)} ({t(c.repo)} {t(c.branch)}): {t(relation(c, variant))}"
            for c in plan.companions.get((variant.branch, variant.package), ())
        ]
        out += [f"{sub_item}covers {t(summary)}" for summary in summaries[:6]]
        out.append(f"{sub_item}nodes: {t(label_list(labels_of[(variant.branch, variant.package)]))}")
    return out


def _build_lines(plan: RecipePlan, variant: Variant, org: str, style: PlanStyle) -> list[str]:
    """The commands that build and publish one chosen build's set: here, in a companion's repository, or generated."""
    code, item, sub_item = style.code, style.item, style.sub_item
    # Pasted into a shell: every argument quoted as the shell needs it (an org is checked too, by the CLI).
    # Exactly the packages the set installs: a companion with a torch of its own is installed alone, so the
    # variant itself is then not built.
    here = [package for repo, _, package in builds(plan, variant) if repo is None]
    if here:
        steps = [["git", "checkout", variant.branch]]
        for package in here:
            steps += [["flox", "build", package], ["flox", "publish", "-o", org, package]]
        out = [f"{item}{code(_joined(steps))} (on {_BUILDERS.get(variant.platform, variant.platform)})"]
    else:
        out = [f"{item}{code(variant.package)}: not built; its nodes install the companion that brings its torch"]
    for repo, branch, package in builds(plan, variant):
        if repo is None:
            continue
        if repo == GENERATED_BY:
            out.append(
                f"{sub_item}generated on it, in a clone of your fork of the build repository (flox publish needs "
                f"the recipe pushed): {code(_joined(_generated_steps(variant, branch, package, org)))}"
            )
            continue
        steps = [["git", "checkout", branch], ["flox", "build", package], ["flox", "publish", "-o", org, package]]
        out.append(f"{sub_item}in a clone of {style.text(repo)}: {code(_joined(steps))}")
    return out


def _generated_steps(variant: Variant, branch: str, package: str, org: str) -> list[list[str]]:
    """A companion pickvariant generates on the variant's recipe: written, committed, pushed, built, published."""
    project = package.split("-", 1)[0]
    return [
        ["git", "checkout", branch],
        ["pickvariant", "recipe", variant.package, "--branch", branch, "--with", project, "-o", ".flox/pkgs"],
        ["git", "add", f".flox/pkgs/{package}.nix"],
        ["git", "commit", "-m", f"{package}: generated by pickvariant on {variant.package}"],
        ["git", "push"],
        ["flox", "build", package],
        ["flox", "publish", "-o", org, package],
    ]


def _joined(steps: list[list[str]]) -> str:
    return " && ".join(shlex.join(step) for step in steps)


def _python_tags(plan: PrebuiltPlan, build: Build) -> list[str]:
    return list(build.python) if plan.python is None else [cpython_tag(plan.python)]


def _pins(plan: PrebuiltPlan, build: Build) -> list[str]:
    """The build and its companions pinned as its source pins them (its packaging part: pip's for wheels)."""
    python = None if plan.python is None else cpython_tag(plan.python)
    companions = plan.companions.get(build, ())
    packaging = registry.named(plan.source).part("packaging")
    pins: list[str] = packaging.pins(build, companions, plan.index_url(build) is None, python)
    return pins


def _build_json(plan: PrebuiltPlan, build: Build, count: int) -> dict[str, Any]:
    companions = plan.companions.get(build, ())
    return {
        "torch": build.label,
        "release": build.torch,
        "variant": build.index,
        "platform": build.platform,
        "cuda": build.cuda,
        "min_driver": str(build.cuda_min_driver) if build.cuda_min_driver else None,
        "index_url": plan.index_url(build),
        "python": _python_tags(plan, build),
        "nodes": count,
        "companions": [{"project": pair.project, "version": pair.version} for pair in companions],
        "requirements": _pins(plan, build),
    }


def prebuilt_plan_json(plan: PrebuiltPlan) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "source": plan.source,
        "index_root": plan.index_root,
        "pypi_first": plan.pypi_first,
        "builds": [_build_json(plan, build, count) for build, count, _ in plan.builds],
        "nodes": [
            {
                "label": node.label,
                "torch": node.build.label if node.build else None,
                "variant": node.build.index if node.build else None,
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


def _labels_by_build(plan: PrebuiltPlan) -> dict[Build, list[str]]:
    found: dict[Build, list[str]] = defaultdict(list)
    for node in plan.nodes:
        if node.build is not None:
            found[node.build].append(node.label)
    return found


def prebuilt_plan_lines(plan: PrebuiltPlan, markdown: bool) -> list[str]:
    """The plan for people: the chosen wheel builds with their nodes and the command each node runs, who gets less
    than its own best, who gets nothing. Outside text (labels, CPU models) is escaped as the Flox plan escapes it."""
    style = PlanStyle(markdown)
    h, item, sub_item, code, t = style.heading, style.item, style.sub_item, style.code, style.text
    source = registry.named(plan.source)
    assert source.nouns is not None  # a source of prebuilt builds names its nouns (registry checks it)
    noun = source.nouns.build
    out = [
        h(
            f"{len(plan.builds)} {noun} build(s) for {plan.node_count} node(s) ({plan.profile_count} hardware profile(s))"
        )
    ]
    labels = _labels_by_build(plan)
    python = None if plan.python is None else cpython_tag(plan.python)
    for build, count, summaries in plan.builds:
        companions = plan.companions.get(build, ())
        index_url = plan.index_url(build)
        pinned = " ".join(_pins(plan, build))
        where = code(index_url) if index_url is not None else "PyPI (the installer's default index: its own build)"
        out.append(f"{item}{code(pinned)} from {where} ({build.platform}): {count} node(s)")
        out += [f"{sub_item}covers {t(summary)}" for summary in summaries[:6]]
        out.append(f"{sub_item}nodes: {t(label_list(labels[build]))}")
        argv = source.part("packaging").command(NODE_PYTHON, build, companions, index_url, index_url is None, python)
        out.append(f"{sub_item}each of them runs: {code(shlex.join(argv))}")
    given = [(n.label, n.build.label if n.build else None, n.rank, n.why) for n in plan.nodes]
    out += assignment_lines(given, noun, style)
    out += input_lines(plan.duplicate_labels, plan.solution, plan.bad, plan.bad_count, style)
    return [visible(line) for line in out]
