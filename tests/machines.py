"""Building HostFacts for tests from real dumps or flag sets, without touching this machine."""

from __future__ import annotations

from conftest import cpuinfo_path

from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.machine.cpu import CpuFacts, read_cpuinfo_dump
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.sources.build import Catalog


def host(
    catalog: Catalog,
    dump: str | None = None,
    flags: set[str] | None = None,
    arch: str = "x86_64",
    gpus: tuple[str, ...] = (),
    driver: str | None = None,
    os_name: str = "linux",
    driver_cuda: str | None = None,
) -> HostFacts:
    if dump is not None:
        cpu = read_cpuinfo_dump(cpuinfo_path(dump))
    else:
        cpu = CpuFacts(os=os_name, arch=arch, model="test CPU", flags=frozenset(flags or ()), source="test")
    cpu = CpuFacts(
        os=cpu.os, arch=cpu.arch, model=cpu.model, flags=catalog.canonical_flags(cpu.flags), source=cpu.source
    )
    gpu_facts = tuple(
        GpuFacts(index=i, name=f"GPU {cc}", compute_capability=parse_compute_capability(cc))
        for i, cc in enumerate(gpus)
    )
    driver_facts = (
        DriverFacts(parse_driver_version(driver) if driver else None, driver_cuda) if driver or driver_cuda else None
    )
    return HostFacts(
        os=cpu.os,
        arch=cpu.arch,
        cpu=cpu,
        gpus=gpu_facts,
        driver=driver_facts,
        driver_assumed=bool(gpus) and driver_facts is None,
        gpu_inconclusive=False,
        sources={"cpu": "test"},
    )
