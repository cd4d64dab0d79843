"""A source of prebuilt builds' pipeline (the wheels, or a source a program registers): its catalog of builds and
the hardware facts alone (no recipe is read), the environment a build is for, decided through the one pick (rules/prebuilt_walk.py), as
pipelines/__init__.py's Pipeline."""

from __future__ import annotations

import os

from pickvariant._base import settings
from pickvariant._base.errors import NoVariant
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts, gather_facts
from pickvariant.rules.decision import Answer
from pickvariant.sources import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from pickvariant.machine.environment import Reading
    from pickvariant.rules.cluster_input import Inputs
    from pickvariant.rules.cluster_plan import PrebuiltPlan
    from pickvariant.rules.decision import PrebuiltAnswer
    from pickvariant.rules.plan_document import PlanShape
    from pickvariant.sources.build import Catalog
    from pickvariant.sources.hardware import HardwareCatalog
    from pickvariant.sources.registry import Source
    from pickvariant.sources.runs_on import Build


def hardware_catalog() -> HardwareCatalog:
    """The hardware facts alone (no recipe): what a source of prebuilt builds judges its builds by; the recipes'
    catalog is never read for its answer (a broken PICKVARIANT_CATALOG cannot stop one)."""
    from pickvariant.sources.hardware_json import load_hardware

    return load_hardware()


def environment_of(request: Request, env: Mapping[str, str]) -> Reading | None:
    """The environment a build would be installed into, being read (its interpreter started, where it must be, to
    run while the machine and the catalog are read; the entry point starts it sooner): --python's, else (for this
    machine) the active one."""
    from pickvariant.machine.environment import reading, wanted

    found = wanted(request, env)
    return None if found is None else reading(*found, env)


def decide(request: Request, env: Mapping[str, str] | None = None) -> PrebuiltAnswer:
    """The answer of the source of prebuilt builds `request.source` names (else the wheels), for the environment
    `request.interpreter` names (else, for this machine, the active one) and from `request.index` (else
    PICKVARIANT_WHEEL_INDEX, else the source's own indexes)."""
    environment_vars = os.environ if env is None else env
    source = registry.of_prebuilt(request.source)
    # A source that installs into a Python environment reads the one it would install into.
    reading = environment_of(request, environment_vars) if source.reads_python else None
    try:
        return _decide(request, source, environment_vars, reading)
    finally:
        if reading is not None:
            reading.stop()  # where an error came first: the interpreter is not left running


def _decide(
    asked: Request, source: Source, environment_vars: Mapping[str, str], reading: Reading | None
) -> PrebuiltAnswer:
    from pickvariant._base.urls import public_url
    from pickvariant.machine.gpu import pending_reading
    from pickvariant.rules.prebuilt_walk import pick_prebuilt

    # NVML first, as for the recipes: the reading entry started early (else one started now) runs in C while the
    # hardware facts and the catalog of builds are read.
    pending = None if asked.described else pending_reading(asked, environment_vars)
    hardware = hardware_catalog()
    wheels = source.catalog()
    given_root = settings.wheel_index(asked.index, environment_vars, wheels.index_root)
    root = public_url(given_root)  # what is shown, printed and recorded: never a credential
    if pending is not None:
        facts = gather_facts(hardware, asked, environment_vars, read_gpus_fn=pending, platform_allowed=True)
    else:
        facts = gather_facts(
            hardware, asked, environment_vars, detect_unstated=not asked.described, platform_allowed=True
        )
    environment = None if reading is None else reading.result()
    request = asked.with_environment(environment_vars)
    # No index named: PyPI's own build of a release comes first, installed with no index URL (issue 53).
    named = asked.index is not None or settings.setting(environment_vars, settings.WHEEL_INDEX) is not None
    decision = pick_prebuilt(facts, hardware, wheels, request, environment, root, pypi_first=not named)
    return Answer(
        facts=facts,
        decision=decision,
        hardware=hardware,
        wheels=wheels,
        environment=environment,
        index_root=root,
        workload=request.workload,
        index_root_with_credentials=given_root if given_root != root else None,
        source=source,
    )


def no_prebuilt_error(answer: PrebuiltAnswer) -> NoVariant:
    """Exit 3's one line where no wheel runs here: the last reason and the hints."""
    decision, nouns = answer.decision, answer.catalog_of_builds().nouns
    return NoVariant(
        f"no compatible {nouns.build} for this machine: " + "; ".join(decision.reasons[-1:] + decision.hints)
    )


class _Prebuilt:
    reads_catalog = False
    reads_environment = True
    explain_drawn = False  # every alternative as text (output/prebuilt_answer.py)

    @property
    def plan_shape(self) -> PlanShape:
        from pickvariant.rules.plan_document import PlanShape

        return PlanShape(
            build="torch",
            line="variant",
            platform="platform",
            sets="builds",
            companion="version",
            indexed=True,
            probed=("torch",),
            probed_said="torch {torch}",
            planned_said="torch {package} ({branch})",
        )

    def answer(
        self,
        request: Request,
        source: Source,
        *,
        catalog: Callable[[], Catalog] | None = None,
        facts: HostFacts | None = None,
        env: Mapping[str, str] | None = None,
    ) -> PrebuiltAnswer:
        return decide(replace(request, source=source.name), env)  # its own builds: no catalog of recipes, no facts

    def document(self, answer: PrebuiltAnswer) -> dict[str, Any]:
        from pickvariant.output.prebuilt_answer import prebuilt_json

        return prebuilt_json(answer)

    def text(self, answer: PrebuiltAnswer, output: str, width: int, explain: bool, colour: bool) -> str:
        from pickvariant.output import prebuilt_answer
        from pickvariant.output.answer import coloured

        if output == "markdown":
            return prebuilt_answer.prebuilt_markdown(answer)
        if output == "text":
            lines = prebuilt_answer.prebuilt_text_lines(answer, width, explain)
            return "\n".join(coloured(lines, answer.decision.build is not None) if colour else lines) + "\n"
        if answer.decision.build is None:  # a file's content only where a build runs here
            return ""
        if output == "requirements":
            return prebuilt_answer.requirements_text(answer)
        return prebuilt_answer.pyproject_text(answer)

    def no_build_error(self, answer: PrebuiltAnswer) -> NoVariant:
        return no_prebuilt_error(answer)

    def runs_on(self, answer: PrebuiltAnswer) -> Build | None:
        build = answer.decision.build
        return None if build is None else replace(build, source=answer.source.name)

    def report(self, answer: PrebuiltAnswer, pythons: Callable[[], Sequence[str]], described: bool) -> dict[str, Any]:
        from pickvariant.output.report import build_prebuilt

        return build_prebuilt(answer, described)  # the environment is its own: `pythons` is the recipes'

    def cluster_plan(
        self,
        inputs: Inputs,
        request: Request,
        source: Source,
        *,
        max_variants: int | None,
        index: str | None,
        catalog: Callable[[], Catalog],
    ) -> PrebuiltPlan:
        from pickvariant._base.urls import public_url
        from pickvariant.rules.cluster_plan import make_prebuilt_plan

        wheels = source.catalog()
        # The plan travels to every node: its index carries no credential (each node's pip takes them from its netrc).
        root = public_url(settings.wheel_index(index, os.environ, wheels.index_root))
        named = index is not None or settings.setting(os.environ, settings.WHEEL_INDEX) is not None
        return make_prebuilt_plan(
            inputs, hardware_catalog(), wheels, request, max_variants, root, source.name, pypi_first=not named
        )

    def plan_document(self, plan: PrebuiltPlan) -> dict[str, Any]:
        from pickvariant.output.cluster_plan import prebuilt_plan_json

        return prebuilt_plan_json(plan)

    def plan_text(self, plan: PrebuiltPlan, org: str | None, markdown: bool) -> list[str]:
        from pickvariant.output.cluster_plan import prebuilt_plan_lines

        return prebuilt_plan_lines(plan, markdown)  # its commands name no Flox organisation


PIPELINE = _Prebuilt()
