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
from pickvariant.catalog.model import Catalog, Variant, load_catalog
from pickvariant.rules.decide import Decision, Options, decide
from pickvariant._base.errors import NoVariant
from pickvariant.machine.facts import HostFacts, WhatIf, gather_facts
from pickvariant._base.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Recommendation", "default_catalog", "host_facts", "no_variant_error", "recommend"]


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
    what_if = WhatIf(Path(cpuinfo) if cpuinfo is not None else None, tuple(gpus or ()), gpus is not None and not gpus, driver)
    return gather_facts(catalog or default_catalog(), what_if, env)


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
    facts: HostFacts | None = None,
    catalog: Catalog | None = None,
    env: Mapping[str, str] | None = None,
) -> Recommendation:
    """The variant for this machine (or the facts given), as `pickvariant detect` decides it.

    The pins (torch, cuda, gpu_index, branch, python_version) narrow the choice as detect's options
    of the same names do; python_version defaults to PICKVARIANT_PYTHON, then to the newest built.
    Raises BadInput (a PickVariantError) for unusable input; a machine no variant fits is not an
    error here: `variant` is None and `decision.reasons`/`decision.hints` say why.
    """
    catalog = catalog or default_catalog()
    environment = os.environ if env is None else env
    if facts is None:
        facts = host_facts(cpuinfo, gpus, driver, catalog=catalog, env=environment)
    python = python_version if python_version is not None else settings.setting(environment, settings.PYTHON)
    decision = decide(facts, catalog, Options(workload, torch, cuda, gpu_index, branch, python))
    return Recommendation(facts, decision, catalog, workload)

