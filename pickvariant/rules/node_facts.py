"""What a cluster plan records of each hardware profile it judged, and what changed on a node since.

`plan` writes each profile's fingerprint (the facts its assignment rests on: OS and CPU architecture, every GPU's
compute capability, the driver, the instruction sets the CPU runs) into its JSON; `install --plan` reads this node's
facts again and refuses its assignment where any of them differ, naming each: a plan made for other hardware is
never carried out on this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pickvariant.machine.facts import HostFacts
from pickvariant.rules.compat import usable_isas
from pickvariant.sources.hardware import Hardware


def fingerprint(facts: HostFacts, catalog: Hardware) -> dict[str, Any]:
    return {
        "os": facts.os,
        "arch": facts.arch,
        "gpus": [str(gpu.compute_capability) for gpu in facts.gpus],
        "driver": str(facts.driver.version) if facts.driver and facts.driver.version else None,
        "cpu_isas": [isa.name for isa in usable_isas(catalog, facts)],
    }


def prebuilt_fingerprint(facts: HostFacts, catalog: Hardware) -> dict[str, Any]:
    """What a wheel's assignment rests on: the same facts but the instruction sets, which pick no wheel (ATen
    chooses its CPU kernels at run time)."""
    return {key: value for key, value in fingerprint(facts, catalog).items() if key != "cpu_isas"}


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "none"
    return "none" if value is None else str(value)


_NAMES = {
    "os": "operating system",
    "arch": "CPU architecture",
    "gpus": "GPU compute capabilities",
    "driver": "driver",
    "cpu_isas": "CPU instruction sets",
}


def changes(planned: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Each fact that differs, as 'driver 580.95.05 in the plan, 550.54.15 now'."""
    return [
        f"{name} {_shown(planned.get(key))} in the plan, {_shown(now.get(key))} now"
        for key, name in _NAMES.items()
        if planned.get(key) != now.get(key)
    ]
