"""The one driver-upgrade search, every source's: the drivers that would run the CUDA builds this driver cannot,
smallest first, each of which a hint decides again with (rules/hints.py for the recipes, rules/prebuilt_hints.py for
a catalog of prebuilt builds). How a driver is raised follows how rules/compat.py judges it: by the CUDA version it
reports where that decides (a Jetson's; one known by no number, as a Windows driver is judged), else by number, to
each CUDA line's floor raised to the first driver of each GPU newer than it (compat.machine_floor)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pickvariant._base.versions import DriverVersion, version_key
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules.compat import has_tegra, machine_floor
from pickvariant.sources.hardware import Hardware


def raised_by_cuda(driver: DriverFacts, gpus: Sequence[GpuFacts], hardware: Hardware) -> bool:
    """Whether `driver` is raised by the CUDA version it reports rather than by number: a Jetson's (its number says
    nothing of its CUDA), or one known by no number (the floors in the facts number Linux's releases)."""
    return driver.cuda is not None and (driver.version is None or has_tegra(gpus, hardware))


def driver_upgrades(
    driver: DriverFacts, lines: Iterable[tuple[DriverVersion | None, str]], gpus: Sequence[GpuFacts], hardware: Hardware
) -> tuple[DriverFacts, ...]:
    """The drivers that would run the CUDA `lines` this driver cannot ((floor, CUDA version); no floor: none is
    known), smallest first and one per driver as judged: its number kept and its CUDA raised to each line's, or each
    line's floor on these GPUs."""
    if raised_by_cuda(driver, gpus, hardware):
        cudas = sorted({cuda for _, cuda in lines}, key=version_key)
        return tuple(DriverFacts(driver.version, cuda) for cuda in cudas)
    floors = {machine_floor(floor, gpus, hardware) for floor, _ in lines}
    return tuple(DriverFacts(floor, None) for floor in sorted(f for f in floors if f is not None))
