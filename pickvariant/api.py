"""pickvariant as a library: a host's facts, the decision for them, and that decision as `detect` prints it.

    >>> from pickvariant.api import recommend
    >>> choice = recommend(cpuinfo="tests/fixtures/cpuinfo/linux-rhel7-haswell", gpus=["8.0"], driver="580.95.05")
    >>> choice.variant.package
    'pytorch-python313-cuda13_1-sm80-avx2'
    >>> choice.to_json()["recommendation"]["branch"]
    'pytorch-2.10-python313'

The same for PyTorch's own wheels (`detect --source wheels`), in the same record:

    >>> wheel = recommend(cpuinfo="tests/fixtures/cpuinfo/linux-rhel7-haswell", gpus=["6.1"], driver="580.95.05",
    ...                   python_version="3.12", source="wheels")
    >>> wheel.build.label
    '2.14.1+cu126'

Importing this module loads no CLI or terminal library (typer, click, rich); see what it costs with
`python -X importtime -c "import pickvariant.api"`. Every argument that is left out is detected
on this machine (or read from the PICKVARIANT_* variables, as `detect` reads them); every argument
given is a stated fact, so the same call gives the same answer anywhere.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence

from pickvariant._base import settings
from pickvariant._base.errors import BadInput, NoVariant
from pickvariant._base.files import joined
from pickvariant._base.records import record, replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts, gather_facts
from pickvariant.rules.decision import Answer, Decision, RecipeDecision
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog
from pickvariant.sources.runs_on import Build, of_variant

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pickvariant.machine.environment import Reading
    from pickvariant.machine.gpu import GpuReport
    from pickvariant.rules.decision import PrebuiltAnswer
    from pickvariant.sources.hardware import HardwareCatalog

__all__ = [
    "Recommendation",
    "Request",
    "WheelRecommendation",
    "answer",
    "decide_prebuilt",
    "decide_wheel",
    "default_catalog",
    "host_facts",
    "no_variant_error",
    "recommend",
    "recommend_request",
]


def read_catalog() -> Catalog:
    """The recipes' catalog as PICKVARIANT_CATALOG (else the packaged one) names it now, read at each call: what a
    command of the command line reads."""
    from pickvariant.sources.flox.load import load_catalog

    return load_catalog()


def default_catalog() -> Catalog:
    """The catalog `detect` uses (PICKVARIANT_CATALOG, else the packaged one), loaded and validated once per process
    and path: a program that names another PICKVARIANT_CATALOG later gets that one, never the first one it loaded."""
    from pickvariant.sources.flox.load import default_catalog_path

    return _catalog_at(default_catalog_path())


@functools.lru_cache(maxsize=4)
def _catalog_at(path: str) -> Catalog:
    from pickvariant.sources.flox.load import load_catalog

    return load_catalog(path)


default_catalog.cache_clear = _catalog_at.cache_clear  # type: ignore[attr-defined]  # a file rewritten in place


def hardware_catalog() -> HardwareCatalog:
    """The hardware facts alone (no recipe): what the wheels source judges its builds by; the recipes' catalog is
    never read for a wheel answer (a broken PICKVARIANT_CATALOG cannot stop one)."""
    from pickvariant.sources.hardware_json import load_hardware

    return load_hardware()


@record
class Recommendation:
    """The answer for one machine, whichever source gave it (`recommend`, `answer`), with the facts it was decided
    from: the recipes' variant with its catalog, or a source of prebuilt builds' build with its index and the
    environment it is for (rules/decision.Answer, the one record every command reads)."""

    answer: Answer[Any, Any]

    @property
    def facts(self) -> HostFacts:
        return self.answer.facts

    @property
    def decision(self) -> Decision[Any, Any]:
        return self.answer.decision

    @property
    def workload(self) -> str:
        return self.answer.workload

    @property
    def source(self) -> str:
        """The source that answered, by name (sources/registry.py)."""
        return self.answer.source.name

    @property
    def catalog(self) -> Catalog:
        """The recipes' catalog it was decided from (a source of prebuilt builds has its own: `answer.wheels`)."""
        hardware = self.answer.hardware
        if not isinstance(hardware, Catalog):
            raise AttributeError(f"source {self.source!r} answers from its own builds, not from a catalog of recipes")
        return hardware

    @property
    def build(self) -> Any:
        """The build that is safe and fastest here (a Flox variant, a prebuilt Build), or None when none runs
        here (`detect` exits 3)."""
        return self.answer.decision.build

    @property
    def variant(self) -> Any:
        """The same as `build`, as the recipes name theirs."""
        return self.answer.decision.build

    @property
    def runs_on(self) -> Build | None:
        """What the build runs on, in the record every source answers with (detect's JSON `build`)."""
        build = self.answer.decision.build
        if build is None:
            return None
        if self.answer.source.pipeline == "builds":
            return replace(build, source=self.source)
        return of_variant(build, self.catalog, self.source)

    def to_json(self) -> dict[str, Any]:
        """The object `pickvariant detect --format json` prints for this machine."""
        if self.answer.source.pipeline == "builds":
            from pickvariant.output.prebuilt_answer import prebuilt_json

            return prebuilt_json(self.answer)
        from pickvariant.output.present import decision_json

        return decision_json(self.facts, self.decision, self.catalog, self.workload, self.source)

    def no_variant_error(self) -> NoVariant:
        """What `detect` reports when nothing runs here: the last reason and what would help."""
        if self.answer.source.pipeline == "builds":
            return no_prebuilt_error(self.answer)
        return no_variant_error(self.decision)


# Until 0.1.0 a source of prebuilt builds answered with a record of its own; the one record answers for every source.
WheelRecommendation = Recommendation


def no_variant_error(decision: RecipeDecision) -> NoVariant:
    """The error (exit 3) for a decision without a variant: its last reason and what would help."""
    return NoVariant("no compatible variant for this machine: " + "; ".join(decision.reasons[-1:] + decision.hints))


def _stated(cpuinfo: str | os.PathLike[str] | None, gpus: Sequence[str] | None, driver: str | None) -> Request:
    return Request(
        cpuinfo=joined(os.fspath(cpuinfo)) if cpuinfo is not None else None,  # as a Path writes it: '' is .
        gpus=tuple(gpus or ()),
        no_gpu=gpus is not None and not gpus,
        driver=driver,
    )


def host_facts(
    cpuinfo: str | os.PathLike[str] | None = None,
    gpus: Sequence[str] | None = None,
    driver: str | None = None,
    *,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
) -> HostFacts:
    """This machine's facts, or those stated.

    cpuinfo: a /proc/cpuinfo dump to read instead of this CPU. gpus: compute capabilities ("9.0",
    "sm_90") instead of asking NVML; an empty sequence states a machine without GPUs. driver: the
    NVIDIA driver version ("580.95.05"). env: where PICKVARIANT_* variables are read (default os.environ).
    """
    return gather_facts(catalog or default_catalog(), _stated(cpuinfo, gpus, driver), env)


def recommend(
    cpuinfo: str | os.PathLike[str] | None = None,
    gpus: Sequence[str] | None = None,
    driver: str | None = None,
    workload: str = "general",
    *,
    torch: str | None = None,
    cuda: str | None = None,
    gpu_index: int | None = None,
    branch: str | None = None,
    python_version: str | None = None,
    driver_cuda: str | None = None,
    facts: HostFacts | None = None,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
    source: str | None = None,
    python: str | None = None,
    wheel_index: str | None = None,
) -> Recommendation:
    """The variant for this machine (or the facts given), as `pickvariant detect` decides it.

    source: "flox" (the recipes' catalog) or "wheels" (PyTorch's own wheels), else PICKVARIANT_SOURCE, else flox,
    as `detect --source` reads it; for wheels, python names the interpreter whose environment a wheel is for and
    wheel_index a mirror of PyTorch's indexes (`--python`, `--wheel-index`), and facts and catalog are not taken.

    driver_cuda is the CUDA version the driver reports (what judges a Jetson's driver).
    The pins (torch, cuda, gpu_index, branch, python_version) narrow the choice as detect's options
    of the same names do; python_version defaults to PICKVARIANT_PYTHON, then to the newest built.
    Raises BadInput (a PickVariantError) for unusable input; a machine no variant fits is not an
    error here: `variant` is None and `decision.reasons`/`decision.hints` say why.
    """
    request = replace(
        _stated(cpuinfo, gpus, driver),
        workload=workload,
        torch=torch,
        cuda=cuda,
        gpu_index=gpu_index,
        branch=branch,
        python=python_version,
        driver_cuda=driver_cuda,
    )
    if facts is not None or catalog is not None:
        if registry.chosen(source, os.environ if env is None else env, "source").pipeline == "builds":
            raise BadInput(f"source {source!r}: facts and catalog are the recipes' (its builds are its own)")
        return recommend_request(request, facts=facts, catalog=catalog, env=env)
    return answer(request, source=source, python=python, wheel_index=wheel_index, env=env)


def answer(
    request: Request,
    *,
    source: str | None = None,
    python: str | None = None,
    wheel_index: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Recommendation:
    """The answer of the source `source` names (else PICKVARIANT_SOURCE, else flox) for a request: what detect shows
    of it. `python` and `wheel_index` are a source of prebuilt builds' (`--python`, `--wheel-index`)."""
    chosen = registry.chosen(source or request.source, os.environ if env is None else env, "source")
    if chosen.pipeline == "builds":
        asked = replace(
            request, source=chosen.name, interpreter=python or request.interpreter, index=wheel_index or request.index
        )
        return Recommendation(decide_prebuilt(asked, env))
    return recommend_request(request, env=env)


def _gpus_pending(request: Request, env: Mapping[str, str]) -> Callable[[], GpuReport] | None:
    """This machine's GPUs, being read, where the request leaves them to detection (none stated)."""
    if request.gpus or request.no_gpu or settings.setting(env, settings.GPU) is not None:
        return None
    from pickvariant.machine.gpu import take_reading

    return take_reading()


def recommend_request(
    request: Request,
    *,
    facts: HostFacts | None = None,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
    detect_unstated: bool = True,
) -> Recommendation:
    """recommend() for a Request, as every command line builds one: the machine it states (the rest
    detected unless detect_unstated is False, or `facts` as given) and its pins, with PICKVARIANT_PYTHON
    where it pins no Python."""
    # The recipes' stages, imported here (a wheel answer never loads them) and first, while NVML is still read.
    from pickvariant.rules.decide import decide

    environment = os.environ if env is None else env
    if facts is None:
        # NVML first: its library load, init and queries run in C while the catalog and the CPU are read.
        pending = _gpus_pending(request, environment) if detect_unstated else None
        catalog = catalog or default_catalog()
        if pending is not None:
            facts = gather_facts(catalog, request, environment, read_gpus_fn=pending)
        else:
            facts = gather_facts(catalog, request, environment, detect_unstated=detect_unstated)
    catalog = catalog or default_catalog()
    decision = decide(facts, catalog, request.with_environment(environment))
    flox = registry.named(registry.RECIPES)
    return Recommendation(
        Answer(facts=facts, decision=decision, hardware=catalog, workload=request.workload, source=flox)
    )


def environment_of(request: Request, env: Mapping[str, str]) -> Reading | None:
    """The environment a wheel would be installed into, being read (its interpreter started, where it must be, to
    run while the machine and the catalog are read; the entry point starts it sooner): --python's, else (for this
    machine) the active one."""
    from pickvariant.machine.environment import reading, wanted

    found = wanted(request, env)
    return None if found is None else reading(*found, env)


def decide_prebuilt(request: Request, env: Mapping[str, str] | None = None) -> PrebuiltAnswer:
    """The answer of the source of prebuilt builds `request.source` names (else the wheels), for the environment
    `request.interpreter` names (else, for this machine, the active one) and from `request.index` (else
    PICKVARIANT_WHEEL_INDEX, else the source's own indexes)."""
    environment_vars = os.environ if env is None else env
    reading = environment_of(request, environment_vars)
    try:
        return _decide_prebuilt(request, environment_vars, reading)
    finally:
        if reading is not None:
            reading.stop()  # where an error came first: the interpreter is not left running


# Until 0.1.0 the answer of a source of prebuilt builds was asked by this name.
decide_wheel = decide_prebuilt


def _decide_prebuilt(asked: Request, environment_vars: Mapping[str, str], reading: Reading | None) -> PrebuiltAnswer:
    from pickvariant._base.urls import public_url
    from pickvariant.rules.prebuilt_pick import pick_prebuilt

    # NVML first, as for the recipes: the reading entry started early (else one started now) runs in C while the
    # hardware facts and the catalog of builds are read.
    pending = None if asked.described else _gpus_pending(asked, environment_vars)
    source = registry.named(asked.source or registry.PREBUILT)
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
    decision = answer.decision
    return NoVariant("no compatible wheel for this machine: " + "; ".join(decision.reasons[-1:] + decision.hints))
