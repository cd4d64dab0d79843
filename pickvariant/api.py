"""pickvariant as a library: a host's facts, the decision for them, and that decision as `detect` prints it.

    >>> from pickvariant.api import recommend
    >>> choice = recommend(cpuinfo="tests/fixtures/cpuinfo/linux-rhel7-haswell", gpus=["8.0"], driver="580.95.05")
    >>> choice.variant.package
    'pytorch-python313-cuda13_1-sm80-avx2'
    >>> choice.to_json()["recommendation"]["branch"]
    'pytorch-2.10-python313'

Importing this module loads no CLI or terminal library (typer, click, rich); see what it costs with
`python -X importtime -c "import pickvariant.api"`. Every argument that is left out is detected
on this machine (or read from the PICKVARIANT_* variables, as `detect` reads them); every argument
given is a stated fact, so the same call gives the same answer anywhere.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.errors import NoVariant
from pickvariant._base.records import record, replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts, gather_facts
from pickvariant.rules.decide import decide
from pickvariant.rules.decision import Decision
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.flox.load import load_catalog

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pickvariant.machine.gpu import GpuReport

__all__ = [
    "Recommendation",
    "Request",
    "default_catalog",
    "host_facts",
    "no_variant_error",
    "recommend",
    "recommend_request",
]


@functools.cache
def default_catalog() -> Catalog:
    """The catalog `detect` uses (PICKVARIANT_CATALOG, else the packaged one), loaded and validated once per process."""
    return load_catalog()


@record
class Recommendation:
    """The decision for one machine, with the facts it was made from."""

    facts: HostFacts
    decision: Decision
    catalog: Catalog
    workload: str

    @property
    def variant(self) -> Variant | None:
        """The variant that is safe and fastest here, or None when none fits (`detect` exits 3)."""
        return self.decision.variant

    def to_json(self) -> dict[str, Any]:
        """The object `pickvariant detect --format json` prints for this machine."""
        from pickvariant.output.present import decision_json

        return decision_json(self.facts, self.decision, self.catalog, self.workload)

    def no_variant_error(self) -> NoVariant:
        """What `detect` reports when no variant fits: the last reason and what would help."""
        return no_variant_error(self.decision)


def no_variant_error(decision: Decision) -> NoVariant:
    """The error (exit 3) for a decision without a variant: its last reason and what would help."""
    return NoVariant("no compatible variant for this machine: " + "; ".join(decision.reasons[-1:] + decision.hints))


def _stated(cpuinfo: str | os.PathLike[str] | None, gpus: Sequence[str] | None, driver: str | None) -> Request:
    return Request(
        cpuinfo=Path(cpuinfo) if cpuinfo is not None else None,
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
) -> Recommendation:
    """The variant for this machine (or the facts given), as `pickvariant detect` decides it.

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
    return recommend_request(request, facts=facts, catalog=catalog, env=env)


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
    return Recommendation(facts, decision, catalog, request.workload)
