"""What would help where no wheel runs here: the driver that would run the nearest one, another Python, the cpu
wheel, torch without its companions. A hint that promises a wheel decides again with the change it proposes: the one
pick (rules/pick.py) with the driver raised, as the recipe answer's hints do (rules/hints.py). It never promises a
build the rules would not choose, nor a companion set they could not make."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pickvariant._base import settings
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules.compat import floor_raisers, last_branch, machine_floor, tegra_cuda_unknown
from pickvariant.rules.decision import Kind, PrebuiltDecision, Rejection
from pickvariant.rules.prebuilt_stages import newest_first
from pickvariant.rules.upgrades import driver_upgrades, raised_by_cuda
from pickvariant.rules.wording import prebuilt as said
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.nouns import Nouns
from pickvariant.sources.runs_on import Build

TYPE_CHECKING = False
if TYPE_CHECKING:
    DecideAgain = Callable[[DriverFacts], PrebuiltDecision]


def hints_for_nothing(
    decision: PrebuiltDecision,
    hardware: Hardware,
    verdicts: Mapping[Build, Rejection | None],
    passed_over: Mapping[Build, tuple[str, ...]],
    driver: DriverFacts | None,
    again: DecideAgain,
    nouns: Nouns,
) -> tuple[str, ...]:
    """What would help where nothing runs here, in the catalog's `nouns`."""
    hints = []
    if passed_over:
        hints.append(said.without_companions(nouns))
    refused: dict[str, list[Build]] = {}
    for build in newest_first(verdicts):
        verdict = verdicts[build]
        if verdict is not None:
            refused.setdefault(f"{verdict.kind}/{dict(verdict.facts).get('cause', '')}", []).append(build)
    by_driver = refused.get(f"{Kind.DRIVER}/wheel", [])
    if tegra_cuda_unknown(decision.targets, driver, hardware):  # no driver can be named: its CUDA is not known
        hints.append(recipe_wording.state_jetson_cuda(settings.DRIVER_CUDA))
    elif by_driver and driver is not None:
        hints += _driver_hints(by_driver, decision.targets, hardware, driver, again)
    by_python = refused.get(f"{Kind.NOT_BUILT}/python_tag", [])
    if by_python:
        hints.append(said.other_python(by_python[0].label, ", ".join(by_python[0].python)))
    # The cpu wheel, refused only for leaving the GPUs unused, runs here: said whether the GPUs lack kernels or the
    # driver is too old for every CUDA line (a T4 on R470, issue 53), after what would let them be used.
    if refused.get(f"{Kind.NOT_BUILT}/gpus_unused"):  # refused only where there are GPUs to serve, of any vendor
        hints.append(said.no_gpu_wheel(nouns))
    return tuple(hints)


def _driver_hints(
    builds: list[Build], gpus: tuple[GpuFacts, ...], hardware: Hardware, driver: DriverFacts, again: DecideAgain
) -> list[str]:
    """The wheels a newer driver would give, each decided again with that driver: the one the smallest update gives,
    and where a larger one gives a newer wheel, that too. A driver judged by the CUDA version it reports (a Jetson's,
    a Windows driver's) is raised by CUDA version; any other to the floor each refused wheel needs on these GPUs."""
    lines = [(build.cuda_min_driver, build.cuda) for build in builds if build.cuda]
    upgrades = driver_upgrades(driver, lines, gpus, hardware)  # the one search, the recipes' too
    if not upgrades:
        return []
    found: list[PrebuiltDecision] = []
    smallest = next((d for d in map(again, upgrades[:-1]) if d.build is not None), None)
    largest = again(upgrades[-1])
    for decided in (smallest, largest):
        if decided is not None and decided.build is not None and decided.build not in (d.build for d in found):
            found.append(decided)
    if raised_by_cuda(driver, gpus, hardware):
        return [said.driver_would_give(d.detail.driver_needed or "", d.build.label) for d in found if d.build]
    last = last_branch(gpus, hardware)
    # The ceiling is said where the driver is above it, as the recipe answer says it (rules/hints.py).
    given = driver.version
    last = last if last is not None and given is not None and given.parts[0] > last else None
    return [_by_number(d.build, gpus, hardware, last) for d in found if d.build is not None]


def _by_number(build: Build, gpus: tuple[GpuFacts, ...], hardware: Hardware, last: int | None) -> str:
    assert build.cuda_min_driver is not None  # a CUDA build: a driver gave it
    raisers = floor_raisers(build.cuda_min_driver, gpus, hardware)
    floor = machine_floor(build.cuda_min_driver, gpus, hardware)
    need = "; ".join(f"GPU {gpu.index} needs {said.driver_floor(first)} or newer" for gpu, first in raisers)
    return said.driver_would_allow(build.label, str(floor), need, last)
