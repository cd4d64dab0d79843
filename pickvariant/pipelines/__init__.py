"""Each kind of source answered behind one interface, chosen once (pipx's `Backend`).

A Source (sources/registry.py) names the pipeline its builds go through; `of(source)` gives the Pipeline that answers
for it, and the library, the commands and the command line ask that object what differs between the two, never the
source's kind:

- "recipes" (pipelines/recipes.py): the Flox catalog's variants on release branches, decided by rules/decide.py (the one pick, rules/pick.py, over the recipes' walk);
- "prebuilt" (pipelines/prebuilt.py): a catalog of prebuilt builds (the wheels, or a source a program registers),
  decided by rules/prebuilt_walk.py through the one pick (rules/pick.py).

Each answers a Request with one `rules/decision.Answer` and says of that answer: detect's JSON document, its text
(and Markdown, and a prebuilt build's requirements or pyproject block), the error that ends a command where nothing
runs here, the `runs_on.Build` it chose, a report's content and a cluster's plan. The rules, the wording, the
records and the install flow behind them are one for both.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Protocol

    from pickvariant._base.errors import NoVariant
    from pickvariant._base.request import Request
    from pickvariant.machine.facts import HostFacts
    from pickvariant.rules.cluster_input import Inputs
    from pickvariant.rules.cluster_plan import ClusterPlan
    from pickvariant.rules.decision import Answer
    from pickvariant.rules.plan_document import PlanShape
    from pickvariant.sources.build import Catalog
    from pickvariant.sources.registry import Source
    from pickvariant.sources.runs_on import Build

    class Pipeline(Protocol):
        # Are its builds a catalog of recipes, judged from facts (api.recommend takes stated facts and a catalog)?
        reads_catalog: bool
        # Does its answer read a Python environment (the entry point starts that interpreter while it loads)?
        reads_environment: bool
        # Is its --explain a tree the terminal draws (rich), rather than text `text` gives?
        explain_drawn: bool

        @property
        def plan_shape(self) -> PlanShape:
            """How its plans name each node's build, and its verify lines the build probed (`install --plan`,
            `fleet`)."""

        def answer(
            self,
            request: Request,
            source: Source,
            *,
            catalog: Callable[[], Catalog] | None = None,
            facts: HostFacts | None = None,
            env: Mapping[str, str] | None = None,
        ) -> Answer[Any, Any, Any]:
            """The source's answer for the request (a described machine: nothing detected). Where it reads a catalog
            (`reads_catalog`), `catalog` loads it and `facts` are facts given; another pipeline reads neither."""

        def document(self, answer: Answer[Any, Any, Any]) -> dict[str, Any]:
            """detect's JSON document."""

        def text(self, answer: Answer[Any, Any, Any], output: str, width: int, explain: bool, colour: bool) -> str:
            """The answer as `output` ("text", "markdown"; a prebuilt build's "requirements", "pyproject") prints
            it: text `width` columns wide, its first line coloured with `colour`, every alternative with `explain`
            (where `explain_drawn` is False)."""

        def no_build_error(self, answer: Answer[Any, Any, Any]) -> NoVariant:
            """The error (exit 3) where nothing runs here: the last reason and what would help."""

        def runs_on(self, answer: Answer[Any, Any, Any]) -> Build | None:
            """What the chosen build runs on, in the record every source answers with."""

        def report(
            self, answer: Answer[Any, Any, Any], pythons: Callable[[], Sequence[str]], described: bool
        ) -> dict[str, Any]:
            """A support ticket's content, of this machine or a `described` one; `pythons` gives the interpreters
            whose torch to probe, asked only by a source that reads no environment of its own."""

        def cluster_plan(
            self,
            inputs: Inputs,
            request: Request,
            source: Source,
            *,
            max_variants: int | None,
            index: str | None,
            catalog: Callable[[], Catalog],
        ) -> ClusterPlan[Any, Any]:
            """A cluster's fewest builds (`index`: --wheel-index, for a source of prebuilt builds)."""

        def plan_document(self, plan: ClusterPlan[Any, Any]) -> dict[str, Any]:
            """`plan --format json` of its plan (rules/cluster-plan.schema.json)."""

        def plan_text(self, plan: ClusterPlan[Any, Any], org: str | None, markdown: bool) -> list[str]:
            """Its plan for people, as text or Markdown (`org`: the Flox organisation its commands name)."""


def of(source: Source) -> Pipeline:
    """The pipeline that answers for `source`, its plug-in's part (sources/registry.py): each is imported only when
    its source is asked for."""
    found: Pipeline = source.part("pipeline")
    return found
