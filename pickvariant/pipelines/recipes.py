"""The recipes' pipeline: the Flox catalog's variants, decided by rules/decide.py (stages, pick, hints), as
pipelines/__init__.py's Pipeline. The catalog is loaded here for the library and detect (PICKVARIANT_CATALOG, else
the packaged one); a command that takes --catalog hands its own loader."""

from __future__ import annotations

import functools
import os

from pickvariant._base.errors import NoVariant
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts, gather_facts
from pickvariant.rules.decision import Answer, RecipeDecision
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog
from pickvariant.sources.runs_on import Build, of_variant

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from pickvariant.rules.cluster_input import Inputs
    from pickvariant.rules.cluster_plan import RecipePlan
    from pickvariant.rules.decision import RecipeDetail
    from pickvariant.rules.plan_document import PlanShape
    from pickvariant.sources.build import Companion, Variant
    from pickvariant.sources.registry import Source

    RecipeAnswer = Answer[Variant, Companion, RecipeDetail]


def _recipes() -> tuple[Callable[[], str], Callable[[str], Catalog]]:
    """Where the source of recipes keeps its catalog now, and how it is read (sources/registry.py's Source)."""
    source = registry.of_recipes()
    assert source.catalog_path is not None and source.load_recipes is not None  # the one source of recipes has both
    return source.catalog_path, source.load_recipes


def read_catalog() -> Catalog:
    """The recipes' catalog as PICKVARIANT_CATALOG (else the packaged one) names it now, read at each call: what a
    command of the command line reads."""
    path, load = _recipes()
    return load(path())


def default_catalog() -> Catalog:
    """The catalog `detect` uses (PICKVARIANT_CATALOG, else the packaged one), loaded and validated once per process
    and path: a program that names another PICKVARIANT_CATALOG later gets that one, never the first one it loaded."""
    return _catalog_at(_recipes()[0]())


@functools.lru_cache(maxsize=4)
def _catalog_at(path: str) -> Catalog:
    return _recipes()[1](path)


default_catalog.cache_clear = _catalog_at.cache_clear  # type: ignore[attr-defined]  # a file rewritten in place


def decide(
    request: Request,
    *,
    facts: HostFacts | None = None,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
    detect_unstated: bool = True,
    source: Source | None = None,
) -> RecipeAnswer:
    """The recipes' answer for a request: the machine it states (the rest detected unless detect_unstated is False
    or the request describes a machine, or `facts` as given) and its pins, with PICKVARIANT_PYTHON where it pins no
    Python."""
    # The recipes' stages, imported here (a prebuilt build's answer never loads them) and first, while NVML is read.
    from pickvariant.rules.decide import decide as decide_variant

    environment = os.environ if env is None else env
    detect_unstated = detect_unstated and not request.described
    if facts is None:
        from pickvariant.machine.gpu import pending_reading

        # NVML first: its library load, init and queries run in C while the catalog and the CPU are read.
        pending = pending_reading(request, environment) if detect_unstated else None
        catalog = catalog or default_catalog()
        if pending is not None:
            facts = gather_facts(catalog, request, environment, read_gpus_fn=pending)
        else:
            facts = gather_facts(catalog, request, environment, detect_unstated=detect_unstated)
    catalog = catalog or default_catalog()
    decision = decide_variant(facts, catalog, request.with_environment(environment))
    answered_by = source or registry.of_recipes()  # the library's call names none: the one source of recipes
    return Answer(facts=facts, decision=decision, hardware=catalog, workload=request.workload, source=answered_by)


def no_variant_error(decision: RecipeDecision) -> NoVariant:
    """The error (exit 3) for a decision without a variant: its last reason and what would help."""
    return NoVariant("no compatible variant for this machine: " + "; ".join(decision.reasons[-1:] + decision.hints))


class _Recipes:
    reads_catalog = True
    reads_environment = False
    explain_drawn = True  # the facts as a table and every alternative as a tree (output/terminal.py)

    @property
    def plan_shape(self) -> PlanShape:
        from pickvariant.rules.plan_document import PlanShape

        return PlanShape(
            build="package",
            line="branch",
            platform=None,
            sets="variants",
            companion="package",
            indexed=False,
            probed=("package", "branch"),
            probed_said="{package} (branch {branch})",
            planned_said="{package} ({branch})",
        )

    def answer(
        self,
        request: Request,
        source: Source,
        *,
        catalog: Callable[[], Catalog] | None = None,
        facts: HostFacts | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RecipeAnswer:
        return decide(request, facts=facts, catalog=None if catalog is None else catalog(), env=env, source=source)

    def document(self, answer: RecipeAnswer) -> dict[str, Any]:
        from pickvariant.output.present import decision_json

        return decision_json(answer.facts, answer.decision, _catalog(answer), answer.workload, answer.source.name)

    def text(self, answer: RecipeAnswer, output: str, width: int, explain: bool, colour: bool) -> str:
        if output == "markdown":
            from pickvariant.output.present import decision_markdown

            return decision_markdown(answer.facts, answer.decision, _catalog(answer), answer.workload)
        from pickvariant.output.answer import answer_lines, coloured

        lines = answer_lines(answer.facts, answer.decision, _catalog(answer), answer.workload, width)
        return "\n".join(coloured(lines, answer.decision.build is not None) if colour else lines) + "\n"

    def no_build_error(self, answer: RecipeAnswer) -> NoVariant:
        return no_variant_error(answer.decision)

    def runs_on(self, answer: RecipeAnswer) -> Build | None:
        variant = answer.decision.build
        return None if variant is None else of_variant(variant, _catalog(answer), answer.source.name)

    def report(self, answer: RecipeAnswer, pythons: Callable[[], Sequence[str]], described: bool) -> dict[str, Any]:
        from pickvariant.output import report

        catalog, facts, decision = _catalog(answer), answer.facts, answer.decision
        return report.build(
            catalog, facts, decision, answer.workload, list(pythons()), answer.source.name, described=described
        )

    def cluster_plan(
        self,
        inputs: Inputs,
        request: Request,
        source: Source,
        *,
        max_variants: int | None,
        index: str | None,
        catalog: Callable[[], Catalog],
    ) -> RecipePlan:
        from pickvariant.rules.cluster_plan import make_cluster_plan

        return make_cluster_plan(inputs, catalog(), request, max_variants, source.name)

    def plan_document(self, plan: RecipePlan) -> dict[str, Any]:
        from pickvariant.rules.cluster_plan import cluster_plan_json

        return cluster_plan_json(plan)

    def plan_text(self, plan: RecipePlan, org: str | None, markdown: bool) -> list[str]:
        from pickvariant.output.cluster_plan import cluster_plan_lines

        return cluster_plan_lines(plan, org, markdown)


def _catalog(answer: RecipeAnswer) -> Catalog:
    catalog = answer.hardware
    assert isinstance(catalog, Catalog)  # the recipes' answer is judged against their catalog
    return catalog


PIPELINE = _Recipes()
