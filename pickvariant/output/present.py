"""Turning facts and a decision into JSON, Markdown or a rich terminal view."""

from __future__ import annotations

from pickvariant import __version__
from pickvariant._base.text import markdown_code, markdown_text, visible
from pickvariant._base.versions import version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.rules import wording
from pickvariant.rules.decision import NEAREST, Kind, RecipeDecision, Rejection
from pickvariant.sources.build import Catalog
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.nouns import WHEELS, Nouns
from pickvariant.sources.runs_on import of_variant

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any

# 2: recommendation gained python, platform, nixpkgs_rev, cudnn; gpu_arch may be "mps", cpu_isa null (README: JSON output).
JSON_SCHEMA_VERSION = 2


def hardware_json(facts: HostFacts) -> dict[str, Any]:
    driver = facts.driver
    return {
        "os": facts.os,
        "arch": facts.arch,
        "cpu": {"model": facts.cpu.model, "flags": sorted(facts.cpu.flags)},
        "gpus": [
            {
                "index": gpu.index,
                "name": gpu.name,
                "compute_capability": str(gpu.compute_capability),
                "memory_mib": gpu.memory_mib,
                "mig_enabled": gpu.mig_enabled,
                "mig_instances": gpu.mig_instances,
            }
            for gpu in facts.gpus
        ],
        "driver": None
        if driver is None
        else {
            "version": str(driver.version) if driver.version else None,
            "cuda": driver.cuda,
        },
        "cuda_visible_devices": facts.cuda_visible_devices,
        "other_gpus": [gpu.as_json() for gpu in facts.other_gpus],
        "driver_assumed": facts.driver_assumed,
        "gpu_detection_inconclusive": facts.gpu_inconclusive,
    }


def recommendation_json(decision: RecipeDecision) -> dict[str, Any] | None:
    variant = decision.build
    if variant is None:
        return None
    return variant.identity()


def companions_json(decision: RecipeDecision) -> list[dict[str, Any]]:
    """One row per companion chosen with the recommendation: its identity, and how its torch relates to the recommended one."""
    from pickvariant.rules.sets import relation  # only a decision with companions reads them

    assert decision.build is not None
    return [
        {**companion.identity(), "relation_to_recommendation": relation(companion, decision.build)}
        for companion in decision.companions
    ]


def decision_json(
    facts: HostFacts, decision: RecipeDecision, catalog: Catalog, workload: str, source: str
) -> dict[str, Any]:
    """detect's JSON document of a recipe decision (`source`: the source's name, as every source's document says it)."""
    document = _decision_json(facts, decision, catalog, workload, source)
    if decision.companions:  # --with: the set; the recommendation stays the torch row
        document["companions"] = companions_json(decision)
        if decision.detail.set_shape is not None:  # what install --with installs and plan --with builds, in that order
            document["set"] = {
                "installed": list(decision.detail.set_shape.installed),
                "torch_from": decision.detail.set_shape.torch_from,
                # Built from recipes pickvariant generates on the variant's own: the set is built from source.
                "generated": list(decision.detail.set_shape.generated),
            }
    return document


def _decision_json(
    facts: HostFacts, decision: RecipeDecision, catalog: Catalog, workload: str, source: str
) -> dict[str, Any]:
    variant = decision.build
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "pickvariant": __version__,
        "source": source,
        "hardware": hardware_json(facts),
        "workload": workload,
        "catalog": {"repo": catalog.source.repo, "commit": catalog.source.commit},
        "recommendation": recommendation_json(decision),
        "build": None if variant is None else of_variant(variant, catalog, source).as_json(),
        "reasons": list(decision.reasons),
        "rejected": [rejection_json(r) for r in decision.rejected],
        "hints": list(decision.hints),
        "sources": dict(facts.sources),
        "notes": list(facts.notes),
    }


def rejection_json(rejection: Rejection, nouns: Nouns = WHEELS) -> dict[str, Any]:
    """A rejection as data: its kind, what lost and the facts its stage found, with the words text shows (a prebuilt
    build's in its source's `nouns`)."""
    axis, name = rejection.subject
    return {
        "choice": wording.choice(rejection, nouns),
        "why": wording.why(rejection, nouns),
        "kind": rejection.kind,
        "subject": {"axis": axis, "name": name},
        "facts": {key: value if isinstance(value, str) else list(value) for key, value in rejection.facts},
    }


def flags_that_matter(facts: HostFacts, catalog: Hardware) -> list[str]:
    wanted = {flag for isa in catalog.isas.values() if isa.platform == facts.arch for flag in isa.requires}
    return sorted(flag for flag in facts.cpu.flags if flag in wanted)


def gpu_extras(gpu: GpuFacts) -> str:
    memory = f", {gpu.memory_mib} MiB" if gpu.memory_mib else ""
    if not gpu.mig_enabled:
        return memory
    instances = (
        "instances unknown"
        if gpu.mig_instances is None
        else f"{gpu.mig_instances} instance{'s' if gpu.mig_instances != 1 else ''}"
    )
    return f"{memory}, MIG on: {instances}, each with the parent's kernels"


def hardware_rows(facts: HostFacts, catalog: Catalog, capability: str) -> list[tuple[str, str, str]]:
    """(fact, value, source) of the hardware table that detect's text and Markdown views show, escapes visible."""
    rows = [
        ("platform", f"{facts.os}/{facts.arch}", facts.sources.get("cpu", "")),
        ("CPU", facts.cpu.model or "unknown", facts.sources.get("cpu", "")),
        ("CPU flags that matter", " ".join(flags_that_matter(facts, catalog)) or "none", ""),
    ]
    rows += [
        (
            f"GPU {gpu.index}",
            f"{gpu.name} ({capability} {gpu.compute_capability}{gpu_extras(gpu)})",
            facts.sources.get("gpus", ""),
        )
        for gpu in facts.gpus
    ]
    if not facts.gpus:
        rows.append(("NVIDIA GPUs" if facts.other_gpus else "GPUs", "none", facts.sources.get("gpus", "")))
    if facts.driver and facts.driver.version:
        cuda = f" (CUDA {facts.driver.cuda})" if facts.driver.cuda else ""
        rows.append(("driver", f"{facts.driver.version}{cuda}", facts.sources.get("driver", "")))
    if facts.cuda_visible_devices is not None:
        rows.append(("CUDA_VISIBLE_DEVICES", repr(facts.cuda_visible_devices), "environment"))
    rows += [(f"GPU ({gpu.vendor.upper()})", gpu.described, gpu.source) for gpu in facts.other_gpus]
    return [(visible(fact), visible(value), visible(source)) for fact, value, source in rows]


def nearest_alternatives(decision: RecipeDecision, catalog: Catalog) -> list[Rejection]:
    """The alternatives that would run here, nearest first: those a set could not be on, then variants in the
    decision's own order (another instruction set, architecture), then branches with the newest PyTorch first."""
    order = {variant.package: index for index, variant in enumerate(decision.candidates)}
    branches = {branch.name: branch for branch in catalog.branches}

    def distance(rejection: Rejection) -> tuple[int, tuple[int, ...], str]:
        axis, name = rejection.subject
        said = wording.choice(rejection)
        if rejection.kind == Kind.NO_SET:
            return (0, (), said)
        if axis == "package" and name in order:
            return (1, (order[name],), said)
        branch = branches.get(name) if axis == "branch" else None
        if branch is None:
            return (3, (), said)
        preferred = catalog.python_preference
        python = preferred.index(branch.python) if branch.python in preferred else len(preferred)
        return (2, (*(-part for part in version_key(branch.torch)), python), said)

    return sorted((r for r in decision.rejected if r.kind in NEAREST), key=distance)


def decision_markdown(facts: HostFacts, decision: RecipeDecision, catalog: Catalog, workload: str) -> str:
    """detect --format markdown: every string from outside (a model name, a path, a catalog's names, a companion's
    repository) escaped, so that it shows as written and makes no link, image, HTML or table cell."""
    md, code = markdown_text, markdown_code
    lines = ["## pickvariant recommendation", ""]
    rec = recommendation_json(decision)
    lines.append(
        f"**Recommendation:** {code(rec['package'])} (branch {code(rec['branch'])}, PyTorch {md(rec['torch'])}, "
        f"Python {md(rec['python'])})"
        if rec
        else "**Recommendation:** none (no compatible variant)"
    )
    warning, notes = markdown_notes(facts)
    lines += [*warning, "", "### Hardware", "", "| fact | value | source |", "|---|---|---|"]
    lines += [
        "| " + " | ".join(md(cell) for cell in cells) + " |"
        for cells in hardware_rows(facts, catalog, "compute capability")
    ]
    lines += ["", f"### Why (workload: {md(workload)})", ""]
    lines += [f"- {md(reason)}" for reason in decision.reasons]
    if decision.hints:
        lines += ["", "### What would help", ""] + [f"- {md(hint)}" for hint in decision.hints]
    if decision.rejected:
        lines += ["", "### Not chosen", ""] + [
            f"- {code(wording.choice(r))}: {md(wording.why(r))}" for r in decision.rejected
        ]
    if notes:
        lines += ["", "### Notes", "", *notes]
    return "\n".join(lines) + "\n"


def markdown_notes(facts: HostFacts) -> tuple[list[str], list[str]]:
    """The facts' notes in Markdown, every source's answer: a warning where the facts are of two machines (said
    first, after the answer: it is for neither), then the others, each an item."""
    notes = list(facts.notes)
    warning = ["", f"**Warning:** {markdown_text(notes.pop(0))}"] if facts.mixes_machines else []
    return warning, [f"- {markdown_text(note)}" for note in notes]
