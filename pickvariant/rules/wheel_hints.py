"""What would help where no wheel runs here: the driver that would run the nearest one, another Python, the cpu
wheel, torch without its companions. Each hint names a build the rules judged, never one they did not."""

from __future__ import annotations

from collections.abc import Mapping

from pickvariant._base.versions import DriverVersion
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules import wheel_wording as said
from pickvariant.rules.decision import Kind, Rejection, WheelDecision
from pickvariant.rules.wheel_stages import newest_first
from pickvariant.sources.build import Catalog
from pickvariant.sources.wheel_build import WheelBuild


def hints_for_nothing(
    decision: WheelDecision,
    hardware: Catalog,
    verdicts: Mapping[WheelBuild, Rejection | None],
    passed_over: Mapping[WheelBuild, tuple[str, ...]],
    driver: DriverFacts | None = None,
) -> tuple[str, ...]:
    hints = []
    if passed_over:
        hints.append(said.without_companions())
    refused: dict[str, list[WheelBuild]] = {}
    for build in newest_first(verdicts):
        verdict = verdicts[build]
        if verdict is not None:
            refused.setdefault(f"{verdict.kind}/{dict(verdict.facts).get('cause', '')}", []).append(build)
    by_driver = refused.get(f"{Kind.DRIVER}/wheel", [])
    last = _last_branch(decision.targets, hardware)
    given = driver.version if driver is not None else None
    # The ceiling is said where the driver is above it, as the recipe answer says it (rules/hints.py).
    last = last if last is not None and given is not None and given.parts[0] > last else None
    for build, floor, gpus_need in _driver_choices(by_driver, decision.targets, hardware):
        hints.append(said.driver_would_allow(build.local, str(floor), gpus_need, last))
    by_python = refused.get(f"{Kind.NOT_BUILT}/python_tag", [])
    if by_python:
        hints.append(said.other_python(by_python[0].local, ", ".join(by_python[0].python)))
    # The cpu wheel, refused only for leaving the GPUs unused, runs here: said whether the GPUs lack kernels or the
    # driver is too old for every CUDA line (a T4 on R470, issue 53), after what would let them be used.
    if decision.targets and refused.get(f"{Kind.NOT_BUILT}/gpus_unused"):
        hints.append(said.no_gpu_wheel())
    return tuple(hints)


def _driver_choices(
    builds: list[WheelBuild], gpus: tuple[GpuFacts, ...], hardware: Catalog
) -> list[tuple[WheelBuild, DriverVersion, str]]:
    """The wheels a newer driver would run: the newest at the lowest driver that runs any, and the newest of all
    where it needs more (each with its floor and the GPUs that raise it)."""
    if not builds:
        return []
    needs = [(build, *_driver_needed(build, gpus, hardware)) for build in builds]  # newest first
    lowest = min(floor for _, floor, _ in needs)
    cheapest = next(need for need in needs if need[1] == lowest)
    return [cheapest] if cheapest is needs[0] or needs[0][1] == lowest else [cheapest, needs[0]]


def _last_branch(gpus: tuple[GpuFacts, ...], hardware: Catalog) -> int | None:
    """The last driver branch that drives every GPU here (R580 for a Pascal card), None where no GPU has one: a
    driver newer than it drives none of them, so a hint that names a floor names this ceiling too."""
    archs = [hardware.arch_of(gpu.compute_capability) for gpu in gpus]
    return min(
        (arch.drivers.last_branch for arch in archs if arch is not None and arch.drivers and arch.drivers.last_branch),
        default=None,
    )


def _driver_needed(build: WheelBuild, gpus: tuple[GpuFacts, ...], hardware: Catalog) -> tuple[DriverVersion, str]:
    """The driver floor of `build`'s CUDA line, raised to the first driver that drives each GPU here, and the GPUs
    that raise it (named with their own floors)."""
    assert build.min_driver is not None  # refused by the driver: a CUDA build
    floor = build.min_driver
    raised = []
    for gpu in dict.fromkeys(gpus):
        arch = hardware.arch_of(gpu.compute_capability)
        first = arch.drivers.first if arch is not None and arch.drivers is not None else None
        if first is not None and floor < first:
            floor = first
            raised.append(f"GPU {gpu.index} needs {'R' + str(first) if len(first.parts) == 1 else str(first)} or newer")
    return floor, "; ".join(raised)
