"""The sentences of compat's findings: whether a build can run here at all (its kernels, its driver, its CPU).

Beside the package's other sentences so that each module stays one concept; every source's builds are judged (and
worded) by these.
"""

from __future__ import annotations

from collections.abc import Sequence

# Jetson drivers ship in the Jetson Linux BSP on their own cadence (JetPack 7 on Thor reports "580.00" with CUDA 13.0),
# so their numbers say nothing about the desktop minimums (rules/compat.py has the sources).
TEGRA_DRIVER_RULE = "Jetson drivers are judged by the CUDA version they report, not by desktop driver minimums"
TEGRA_CUDA_UNKNOWN = (
    "a Jetson driver is judged by the CUDA version it reports, and none was given "
    "(--driver-cuda X.Y: the CUDA Version that nvidia-smi prints)"
)
CPU_ONLY_UNUSED_GPUS = "it is CPU-only and would leave this machine's GPUs unused"


def kernels_other_major(built: object, capability: object) -> str:
    return f"kernels for {built} do not run on {capability} (a different major version)"


def kernels_across_tegra(built: object, capability: object, device_tegra: bool) -> str:
    kind = "an integrated Tegra GPU" if device_tegra else "a discrete GPU"
    return (
        f"kernels for {built} do not run on {kind} of {capability} (no binary compatibility across Tegra and desktop, "
        "nor between Tegra GPUs)"
    )


def kernels_newer_than(built: object, capability: object) -> str:
    return f"kernels for {built} do not run on the older {capability}"


def driver_cannot_drive(driver: object, index: int, capability: object, why: str) -> str:
    return f"driver {driver} cannot drive GPU {index} (compute capability {capability}): it {why}"


def tegra_driver_older(driver_cuda: str, cuda: str) -> str:
    return f"the driver supports CUDA {driver_cuda}, older than CUDA {cuda} ({TEGRA_DRIVER_RULE})"


def driver_below_minimum(driver: object, minimum: object, cuda: str) -> str:
    return f"driver {driver} is older than {minimum}, the minimum for CUDA {cuda}"


def driver_branch_only(driver: object, minimum: object, cuda: str) -> str:
    return (
        f"driver {driver} names a branch only, and CUDA {cuda} needs {minimum} or newer of it: give the full "
        "version (nvidia-smi's Driver Version) to have it judged"
    )


def driver_other_major(driver_cuda: str, cuda: str, minimum: object) -> str:
    return f"the driver supports CUDA {driver_cuda}; CUDA {cuda} builds need a driver >= {minimum}"


def minor_version_compatibility(majors: Sequence[str], minimums: Sequence[str], shipped: str) -> str:
    return (
        f"CUDA {'/'.join(m + '.x' for m in majors)} minor-version compatibility: builds of a release run on any driver "
        f">= {', '.join(minimums)}, older than the one its toolkit ships with ({shipped})"
    )


def cuda_words(cuda: str, by_compatibility: bool) -> str:
    return f"CUDA {cuda}" + (
        f", by CUDA {cuda.split('.', 1)[0]}.x minor-version compatibility" if by_compatibility else ""
    )


def built_for_another_platform(platform: str, os: str, arch: str) -> str:
    return f"it is built for {platform}, this machine is {os}/{arch}"


def crashes_without(missing: Sequence[str]) -> str:
    return f"this CPU lacks {', '.join(missing)}: it would crash with an illegal instruction"


def cuda_build_without_gpu(arch: str) -> str:
    return f"it is a CUDA build ({arch}) and this machine has no NVIDIA GPU"


def windows_driver(version: str, cuda: str | None) -> str:
    judged = f"its CUDA {cuda} judges it" if cuda else "give its CUDA version (--driver-cuda, as nvidia-smi prints it)"
    return (
        f"driver {version} on Windows is not judged by its number (Windows numbers its releases apart from Linux, "
        f"whose floors and branches the facts give): {judged}"
    )
