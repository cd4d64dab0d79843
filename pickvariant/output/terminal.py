"""What a terminal gets: the recipes' decision as a rich view (detect --explain), progress while a command works.

The one module of the output layer that draws with rich; everything that is read by a program or
pasted into a ticket (JSON, Markdown, plain lines) is in the modules beside it. Each view prints
plainly when its stream is no terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from pickvariant._base.text import visible
from pickvariant.machine.facts import HostFacts
from pickvariant.output.present import hardware_rows, recommendation_json
from pickvariant.rules import wording
from pickvariant.rules.decision import RecipeDecision
from pickvariant.sources.build import Catalog

# typing (3 ms) stays off the text answer's path (entry.py): it is loaded only for the type checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rich.table import Table
    from rich.tree import Tree


def print_explained(facts: HostFacts, decision: RecipeDecision, catalog: Catalog, workload: str) -> None:
    """detect --explain of the recipes: the facts as a table, why, and every alternative with why it lost, as a tree
    (the short answer is text every source's pipeline gives: pipelines/)."""
    from rich.console import Console

    console = Console()
    console.print(_hardware_table(facts, catalog))
    console.print(_decision_tree(facts, decision, workload))


def _hardware_table(facts: HostFacts, catalog: Catalog) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Hardware", show_header=True, header_style="bold")
    table.add_column("fact")
    table.add_column("value")
    table.add_column("source", style="dim")
    for cells in hardware_rows(facts, catalog, "cc"):
        # Text, not markup: a model name or path holding "[/]" must print, not raise.
        table.add_row(*(Text(cell) for cell in cells))
    return table


def _decision_tree(facts: HostFacts, decision: RecipeDecision, workload: str) -> Tree:
    """The recommendation, why, what would help, and every alternative with why it lost."""
    from rich.text import Text
    from rich.tree import Tree

    rec = recommendation_json(decision)
    # The title names what is installed: a set may install a companion alone, its torch propagated.
    shape = decision.detail.set_shape
    installed = ", ".join(shape.installed) if shape is not None else rec and rec["package"]
    title = (
        Text(f"Recommendation: {installed} (branch {rec['branch']})", style="bold green")
        if rec
        else Text("No compatible variant", style="bold red")
    )
    tree = Tree(title)
    why = tree.add(Text(f"why (workload {workload})"))
    for reason in decision.reasons:
        why.add(Text(visible(reason)))
    if decision.hints:
        helps = tree.add("what would help")
        for hint in decision.hints:
            helps.add(Text(visible(hint)))
    if decision.rejected:
        others = tree.add("not chosen")
        for rejection in decision.rejected:
            others.add(Text(visible(f"{wording.choice(rejection)}: {wording.why(rejection)}")))
    for note in facts.notes:
        tree.add(Text(visible(f"note: {note}"), style="dim"))
    return tree


def reading_progress(total_bytes: int | None) -> Any:
    """A progress bar on stderr once reading has taken more than a second, on a terminal only.

    Its measure is bytes (known beforehand for files; a pulsing bar for a pipe), its text the nodes read."""
    import contextlib
    import time

    @contextlib.contextmanager
    def bar() -> Any:
        start = time.monotonic()
        shown: list[Any] = []

        def update(nodes: int, consumed: int) -> None:
            if not shown:
                if time.monotonic() - start < 1.0:
                    return
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    Progress,
                    TextColumn,
                    TimeRemainingColumn,
                )

                progress = Progress(
                    TextColumn("reading nodes"),
                    BarColumn(),
                    TextColumn("{task.fields[nodes]:,} nodes"),
                    TimeRemainingColumn(),
                    console=Console(stderr=True),
                    transient=True,
                )
                progress.start()
                shown.append((progress, progress.add_task("read", total=total_bytes, nodes=0)))
            progress, task = shown[0]
            progress.update(task, completed=consumed, nodes=nodes)

        try:
            yield update
        finally:
            if shown:
                shown[0][0].stop()

    @contextlib.contextmanager
    def silent() -> Any:
        yield lambda nodes, consumed: None

    return bar() if sys.stderr.isatty() else silent()


def flox_progress(label: str, echo: Callable[[str], None]) -> Any:
    """A spinner with elapsed time and the last log line on a terminal; otherwise each step's line, through `echo`."""
    import contextlib
    import time

    @contextlib.contextmanager
    def plain() -> Any:
        yield lambda line: echo(line) if line.startswith("» ") else None

    @contextlib.contextmanager
    def spinner() -> Any:
        from rich.console import Console
        from rich.markup import escape

        start = time.monotonic()
        with Console(stderr=True).status(f"{label}: starting") as status:

            def update(line: str) -> None:
                elapsed = int(time.monotonic() - start)
                status.update(f"{label} [{elapsed // 60:02d}:{elapsed % 60:02d}] {escape(line[-100:])}")

            yield update

    return spinner() if sys.stderr.isatty() else plain()
