"""pickvariant's hardware facts as records: platforms, CPU instruction sets, GPU architectures, CUDA releases and
lines (their driver floors), torch sources, peak throughputs, workloads. hardware.json holds them, with sources;
every source of builds is judged against the same facts: `Hardware`, which a catalog of recipes is (with its builds)
and HardwareCatalog is alone (sources/hardware_json.py reads it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cached_property

from pickvariant._base.records import keyword_record, record
from pickvariant._base.versions import ComputeCapability, DriverVersion, version_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)


@record
class Platform:
    nix_system: str
    os: str
    arch: str


@keyword_record
class CpuIsa:
    name: str
    platform: str
    description: str
    requires: tuple[str, ...]
    compiler_flags: tuple[str, ...]
    build_env: Mapping[str, str]
    torch_cpu_capability: str
    source: str


@record
class DriverSupport:
    """Which NVIDIA drivers can drive an architecture's GPUs at all, with the source that says so."""

    first: DriverVersion | None  # older drivers list no GPU of it; "580" is a whole branch
    last_branch: int | None  # newer branches dropped it
    source: str

    def refuses(self, driver: DriverVersion) -> str | None:
        """None when `driver` can drive these GPUs, else why not."""
        if self.first is not None and driver < self.first:
            first = (
                f"the R{self.first} branch, the first"
                if len(self.first.parts) == 1
                else f"{self.first}, the first driver"
            )
            return f"is older than {first} that drives it"
        if self.last_branch is not None and driver.parts[0] > self.last_branch:
            return f"is newer than R{self.last_branch}, the last driver branch that drives it"
        return None


@keyword_record
class GpuArch:
    name: str
    compute_capability: ComputeCapability
    min_cuda: str
    max_cuda: str | None
    tegra: bool
    platforms: tuple[str, ...]
    description: str
    products: tuple[str, ...]
    reported_before_cuda_13: ComputeCapability | None
    build_env: Mapping[str, str]
    source: str
    drivers: DriverSupport | None = None

    @property
    def sm_dotted(self) -> str:
        return str(self.compute_capability)

    def builds_with(self, cuda: str) -> bool:
        """Can nvcc of this CUDA release build kernels for this architecture (min_cuda..max_cuda)?"""
        return version_key(self.min_cuda) <= version_key(cuda) and (
            not self.max_cuda or version_key(cuda) <= version_key(self.max_cuda)
        )

    def has_host(self, cpu_platform: str) -> bool:
        """Is there a machine with this GPU and a CPU of `cpu_platform` (x86_64, aarch64)?"""
        return cpu_platform in self.platforms


@record
class CudaRelease:
    cuda: str
    min_driver: DriverVersion
    toolkit_driver: str
    source: str


@keyword_record
class CudaLine:
    """One CUDA release as a branch builds it: its own nixpkgs pin and CUDA package set."""

    branch: str
    cuda: str
    cuda_packages: str
    nixpkgs_rev: str
    min_driver: DriverVersion
    min_driver_source: str

    @property
    def tag(self) -> str:
        return self.cuda.replace(".", "_")


@keyword_record
class TorchSource:
    version: str
    owner: str
    repo: str
    rev: str
    fetch_submodules: bool
    hash: str
    source: str
    # nixpkgs' own torch patches, by file name: (name, keep, why); a dropped one says why.
    nixpkgs_patches: tuple[tuple[str, bool, str], ...] = ()
    nixpkgs_patches_source: str = ""

    @property
    def dropped_patches(self) -> tuple[str, ...]:
        return tuple(name for name, keep, _ in self.nixpkgs_patches if not keep)


@record
class PeakThroughput:
    gpu: str
    name_pattern: str
    tflops: Mapping[str, float | None]
    source: str


@record
class Workload:
    name: str
    description: str
    isa_preference: tuple[str, ...]


@keyword_record
class HardwareFacts:
    """The part of the catalog that is pickvariant's own (hardware.json), checked for consistency."""

    platforms: Mapping[str, Platform]
    isas: Mapping[str, CpuIsa]
    gpu_archs: Mapping[str, GpuArch]
    cuda_releases: Mapping[str, CudaRelease]
    compiler_flags: Mapping[str, tuple[str, ...]]
    nixpkgs_torch: Mapping[str, str]
    torch_sources: Mapping[str, TorchSource]


class Hardware:
    """The hardware facts every source's builds are judged by, and what is looked up in them: what the rules and the
    machine's facts read. sources/build.Catalog is one (the recipes' catalog carries hardware.json's facts beside its
    builds); HardwareCatalog is one alone, what a source of prebuilt builds is judged against, no recipe read."""

    if TYPE_CHECKING:  # the fields of each record that is one
        platforms: Mapping[str, Platform]
        isas: Mapping[str, CpuIsa]
        gpu_archs: Mapping[str, GpuArch]
        cuda_releases: Mapping[str, CudaRelease]
        flag_aliases: Mapping[str, tuple[str, ...]]
        tegra_capabilities: frozenset[ComputeCapability]
        torch_capability_order: tuple[str, ...]
        workloads: Mapping[str, Workload]
        peaks: tuple[PeakThroughput, ...]

    def is_tegra(self, capability: ComputeCapability) -> bool:
        return capability in self.tegra_capabilities

    def arch_of(self, capability: ComputeCapability) -> GpuArch | None:
        """The architecture of exactly this compute capability (None for one the facts do not know)."""
        return self._arch_by_capability.get(capability)

    @cached_property
    def _arch_by_capability(self) -> Mapping[ComputeCapability, GpuArch]:
        return {arch.compute_capability: arch for arch in self.gpu_archs.values()}

    def nix_system(self, os_name: str, arch: str) -> str | None:
        return self._systems.get((os_name, arch))

    def first_release(self, branch: int) -> tuple[DriverVersion, str] | None:
        """The first release of driver branch R`branch` where the facts give it, with the CUDA release that says so:
        a CUDA family's minimum driver is the first release of its branch (580.65.06, CUDA 13.0's GA driver, is
        R580's). None for a branch no minimum is of: every driver of a branch is at least its first release."""
        floors = sorted(
            (release.min_driver, release.cuda)
            for release in self.cuda_releases.values()
            if release.min_driver.parts[0] == branch and len(release.min_driver.parts) > 1
        )
        return floors[0] if floors else None

    def as_judged(self, driver: DriverVersion) -> DriverVersion:
        """A driver named by its branch alone (580) as its branch's first release (580.65.06), where the facts give
        it: what every driver of that branch is at least. Any other as it is."""
        if len(driver.parts) != 1:
            return driver
        first = self.first_release(driver.parts[0])
        return first[0] if first is not None else driver

    @cached_property
    def _systems(self) -> Mapping[tuple[str, str], str]:
        # The first platform of an (os, arch) pair wins, as the facts list them.
        systems: dict[tuple[str, str], str] = {}
        for platform in self.platforms.values():
            systems.setdefault((platform.os, platform.arch), platform.nix_system)
        return systems

    def canonical_flags(self, flags: Iterable[str]) -> frozenset[str]:
        """Map every spelling a tool reports (py-cpuinfo, macOS sysctl) to the kernel's name."""
        flags = flags if isinstance(flags, (set, frozenset)) else frozenset(flags)
        aliased = flags & self.flag_aliases.keys()
        if not aliased:
            return frozenset(flags)
        canonical = set(flags - aliased)
        for flag in aliased:
            canonical.update(self.flag_aliases[flag])
        return frozenset(canonical)

    def peak_for(self, gpu_name: str) -> PeakThroughput | None:
        for peak in self.peaks:
            if re.search(peak.name_pattern, gpu_name, re.IGNORECASE):
                return peak
        return None


@keyword_record
class HardwareCatalog(Hardware):
    """pickvariant's hardware facts on their own (hardware.json), with no builds: what a source of prebuilt builds is
    judged by. `compiled`: the date the facts were compiled; `file`: the file they were read from."""

    file: str
    compiled: str
    platforms: Mapping[str, Platform]
    isas: Mapping[str, CpuIsa]
    gpu_archs: Mapping[str, GpuArch]
    cuda_releases: Mapping[str, CudaRelease]
    flag_aliases: Mapping[str, tuple[str, ...]]
    tegra_capabilities: frozenset[ComputeCapability]
    torch_capability_order: tuple[str, ...]
    workloads: Mapping[str, Workload]
    peaks: tuple[PeakThroughput, ...]
