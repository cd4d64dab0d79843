"""pickvariant as a library: a host's facts, the decision for them, and that decision as `detect` prints it.

    >>> from pickvariant.api import recommend
    >>> choice = recommend(cpuinfo="tests/fixtures/cpuinfo/linux-rhel7-haswell", gpus=["8.0"], driver="580.95.05")
    >>> choice.build.package
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

import os
from collections.abc import Mapping, Sequence

from pickvariant import pipelines
from pickvariant._base.errors import BadInput, NoVariant
from pickvariant._base.files import joined
from pickvariant._base.records import record, replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts, gather_facts
from pickvariant.pipelines import recipes
from pickvariant.rules.decision import Answer, Decision
from pickvariant.sources import registry
from pickvariant.sources.build import Catalog
from pickvariant.sources.runs_on import Build

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any

    from pickvariant.rules.decision import PrebuiltAnswer
    from pickvariant.sources.hardware import HardwareCatalog

__all__ = [
    "Recommendation",
    "Request",
    "answer",
    "decide_prebuilt",
    "default_catalog",
    "host_facts",
    "no_variant_error",
    "recommend",
    "recommend_request",
]


# The recipes' catalog, loaded as the library and detect load it.
read_catalog = recipes.read_catalog
default_catalog = recipes.default_catalog


def hardware_catalog() -> HardwareCatalog:
    """The hardware facts alone (no recipe): what a source of prebuilt builds judges its builds by."""
    from pickvariant.pipelines.prebuilt import hardware_catalog as hardware

    return hardware()


@record
class Recommendation:
    """The answer for one machine, whichever source gave it (`recommend`, `answer`), with the facts it was decided
    from: the recipes' variant with its catalog, or a source of prebuilt builds' build with its index and the
    environment it is for (rules/decision.Answer, the one record every command reads)."""

    answer: Answer[Any, Any, Any]

    @property
    def facts(self) -> HostFacts:
        return self.answer.facts

    @property
    def decision(self) -> Decision[Any, Any, Any]:
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
    def runs_on(self) -> Build | None:
        """What the build runs on, in the record every source answers with (detect's JSON `build`)."""
        return pipelines.of(self.answer.source).runs_on(self.answer)

    def to_json(self) -> dict[str, Any]:
        """The object `pickvariant detect --format json` prints for this machine."""
        return pipelines.of(self.answer.source).document(self.answer)

    def no_variant_error(self) -> NoVariant:
        """What `detect` reports when nothing runs here: the last reason and what would help."""
        return pipelines.of(self.answer.source).no_build_error(self.answer)


no_variant_error = recipes.no_variant_error


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
    if facts is None and catalog is None:
        return answer(request, source=source, python=python, wheel_index=wheel_index, env=env)
    chosen = registry.chosen(source, os.environ if env is None else env, "source")
    pipeline = pipelines.of(chosen)
    if not pipeline.reads_catalog:
        raise BadInput(f"source {source!r}: facts and catalog are the recipes' (its builds are its own)")
    loader = None if catalog is None else lambda: catalog
    return Recommendation(pipeline.answer(request, chosen, catalog=loader, facts=facts, env=env))


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
    asked = replace(request, interpreter=python or request.interpreter, index=wheel_index or request.index)
    return Recommendation(pipelines.of(chosen).answer(asked, chosen, env=env))


def recommend_request(
    request: Request,
    *,
    facts: HostFacts | None = None,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
    detect_unstated: bool = True,
) -> Recommendation:
    """recommend() for a Request, as every command line builds one, of the recipes: the machine it states (the rest
    detected unless detect_unstated is False, or `facts` as given) and its pins, with PICKVARIANT_PYTHON where it
    pins no Python."""
    return Recommendation(
        recipes.decide(request, facts=facts, catalog=catalog, env=env, detect_unstated=detect_unstated)
    )


def decide_prebuilt(request: Request, env: Mapping[str, str] | None = None) -> PrebuiltAnswer:
    """The answer of the source of prebuilt builds `request.source` names (else the wheels), for the environment
    `request.interpreter` names (else, for this machine, the active one) and from `request.index` (else
    PICKVARIANT_WHEEL_INDEX, else the source's own indexes)."""
    from pickvariant.pipelines.prebuilt import decide

    return decide(request, env)


def no_prebuilt_error(answer: PrebuiltAnswer) -> NoVariant:
    """Exit 3's one line where no build of a source of prebuilt builds runs here: the last reason and the hints."""
    from pickvariant.pipelines.prebuilt import no_prebuilt_error as error

    return error(answer)
