"""detect's default text answer: the answer first (what to install and the one command that installs it), then the
facts that decided it, why, and the two or three nearest alternatives that differ on another axis, fitted to the
terminal's width. `--explain` keeps the whole tree (output/terminal.py); JSON and Markdown say everything."""

from __future__ import annotations

import shlex
import textwrap

from pickvariant._base.text import visible
from pickvariant.machine.facts import HostFacts
from pickvariant.output.present import gpu_extras, nearest_alternatives
from pickvariant.rules import wording
from pickvariant.rules.decision import Decision, RecipeDecision, Rejection
from pickvariant.sources.build import Catalog
from pickvariant.sources.hardware import Hardware

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # A source's own part of its text answer: its headline lines, the title of its reasons, its alternatives' lines.
    Own = tuple[list[str], str, list[str]]

# Of the nearest alternatives, one per axis (another instruction set, architecture, branch…), this many at most.
ALTERNATIVES_SHOWN = 3


def answer_lines(facts: HostFacts, decision: RecipeDecision, catalog: Catalog, workload: str, width: int) -> list[str]:
    """The default answer, line by line, no line wider than `width` (at least 40)."""
    width = max(width, 40)
    headline, alternatives = _headline(decision, width), _alternatives(decision, catalog, width)
    return laid_out(facts, catalog, decision, (headline, f"Why (workload {workload})", alternatives), width)


def laid_out(
    facts: HostFacts, hardware: Hardware, decision: Decision[Any, Any, Any], own: Own, width: int
) -> list[str]:
    """Every source's text answer, in one order: its headline (the answer and the command that installs it), a
    warning where the facts are of two machines (said before anything else: the answer is for neither), this
    machine, why (`own`'s title), what would help, `own`'s alternatives, the notes."""
    headline, why, alternatives = own
    lines = list(headline)
    notes = list(facts.notes)
    if facts.mixes_machines:
        lines[1:1] = wrapped(visible(f"warning: {notes.pop(0)}"), width, "  ")
    lines += section("This machine", fact_items(facts, hardware), width)
    # The first reasons restate the platform and each GPU: the facts above show them.
    reasons = decision.reasons[decision.machine_said :]
    lines += section(why, [visible(reason) for reason in reasons], width)
    if decision.hints:
        lines += section("What would help", [visible(hint) for hint in decision.hints], width)
    lines += alternatives
    lines += [line for note in notes for line in wrapped(visible(f"note: {note}"), width, "")]
    return lines


def _headline(decision: RecipeDecision, width: int) -> list[str]:
    variant, branch = decision.build, decision.detail.branch
    if variant is None:
        return ["No compatible variant (why, and what would help, below)"]
    installed = decision.detail.set_shape.installed if decision.detail.set_shape is not None else (variant.package,)
    line = decision.detail.line
    about = (
        f"PyTorch {variant.torch}"
        + (f", CUDA {line.cuda}" if line is not None else "")
        + f", Python {variant.python}"
        + (f", aligned with {branch.aligned_with}" if branch is not None and branch.aligned_with else "")
    )
    # The headline names what is installed: a set may install a companion alone, its torch propagated.
    lines = wrapped(f"Recommendation: {visible(', '.join(installed))}", width, "", "  ")
    lines += wrapped(f"branch {visible(variant.branch)}: {about}", width, "  ")
    if tuple(installed) != (variant.package,):
        shape = decision.detail.set_shape
        torch_from = shape.torch_from if shape is not None else variant.package
        lines += wrapped(f"one torch: {visible(variant.package)}, imported from {visible(torch_from)}", width, "  ")
    lines += command_lines("  install it: ", _install_command(decision), width)
    return lines


def _install_command(decision: RecipeDecision) -> list[str]:
    """The one command that installs this answer on the machine it describes, named so that it installs exactly it:
    its words quoted for the shell, then a shell comment."""
    assert decision.build is not None
    variant = decision.build
    command = ["pickvariant", "install", "--package", variant.package, "--branch", variant.branch]
    projects = [companion.project for companion in decision.companions]
    if projects:
        command += ["--with", ",".join(projects)]
    if decision.detail.set_shape is not None and decision.detail.set_shape.generated:
        return [*map(shlex.quote, [*command, "--build"]), "# built from source: companions are generated on it"]
    return [*map(shlex.quote, [*command, "--org"]), "ORG", "# or --build"]


def command_lines(first: str, words: list[str], width: int) -> list[str]:
    """A command for copying, in lines no wider than `width` joined by the shell's line continuation, never broken
    inside a word: pasted whole, it runs as one command."""
    lines, current = [], first.rstrip()
    for word in words:
        if len(current) + 1 + len(word) + 2 > width and current.strip() and not current.endswith(":"):
            lines.append(current + " \\")
            current = "    "
        current = f"{current} {word}" if current.strip() else current + word
    return [*lines, current]


def fact_items(facts: HostFacts, catalog: Hardware) -> list[str]:
    def source(name: str) -> str:
        given = facts.sources.get(name)  # type: ignore[call-overload]
        return f" [{given}]" if given else ""

    items = [f"CPU: {facts.cpu.model or 'unknown'} ({facts.os}/{facts.arch}){source('cpu')}"]
    tegra = {gpu.index: catalog.is_tegra(gpu.compute_capability) for gpu in facts.gpus}
    items += [
        f"GPU {gpu.index}: {gpu.name} (cc {gpu.compute_capability}, {'integrated Tegra' if tegra[gpu.index] else 'discrete'}"
        f"{gpu_extras(gpu)}){source('gpus')}"
        for gpu in facts.gpus
    ]
    if not facts.gpus:
        items.append(f"{'NVIDIA GPUs' if facts.other_gpus else 'GPUs'}: none{source('gpus')}")
    if facts.driver is not None and (facts.driver.version or facts.driver.cuda):
        version = str(facts.driver.version) if facts.driver.version else "version not stated"
        cuda = f" (CUDA {facts.driver.cuda})" if facts.driver.cuda else ""
        items.append(f"driver: {version}{cuda}{source('driver')}")
    if facts.cuda_visible_devices is not None:
        items.append(f"CUDA_VISIBLE_DEVICES={facts.cuda_visible_devices!r} [environment]")
    items += [f"GPU ({gpu.vendor.upper()}): {gpu.described} [{gpu.source}]" for gpu in facts.other_gpus]
    return [visible(item) for item in items]


def _alternatives(decision: RecipeDecision, catalog: Catalog, width: int) -> list[str]:
    """The nearest alternatives, the first of each axis, and how many more --explain shows; when nothing fits,
    every alternative (each is part of the answer)."""
    if decision.build is None:
        shown = list(decision.rejected)
        title = "Not chosen"
    else:
        shown, axes = [], set()
        for rejection in nearest_alternatives(decision, catalog):
            if rejection.subject[0] not in axes and len(shown) < ALTERNATIVES_SHOWN:
                axes.add(rejection.subject[0])
                shown.append(rejection)
        title = "Nearest alternatives (they would run here too)"
    lines = section(title, [_said(rejection) for rejection in shown], width) if shown else []
    left = len(decision.rejected) - len(shown)
    if left:
        lines += wrapped(f"{left} more alternatives, each with why it lost: pickvariant detect --explain", width, "")
    return lines


def _said(rejection: Rejection) -> str:
    return visible(f"{wording.choice(rejection)}: {wording.why(rejection)}")


def section(title: str, items: list[str], width: int) -> list[str]:
    return [title] + [line for item in items for line in wrapped(item, width, "  - ", "    ")]


def wrapped(text: str, width: int, first: str, rest: str | None = None) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest if rest is not None else " " * len(first) + "  ",
        break_on_hyphens=False,
        break_long_words=True,
    ) or [first.rstrip()]


def coloured(lines: list[str], found: bool) -> list[str]:
    """The answer's first line in bold, green where a build runs here, red where none does (SGR, as rich would colour
    it), for a terminal that takes colour; every source's text answer."""
    return [f"\x1b[1;{32 if found else 31}m{lines[0]}\x1b[0m", *lines[1:]] if lines else lines
