"""The installer command line that installs a wheel decision: pip run by the environment's interpreter, or uv's pip
interface pointed at it. One construction for what detect prints, what `install --dry-run` shows and what install
runs."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant.sources.wheel_build import PairedRelease, WheelBuild

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Installer = Literal["pip", "uv"]

INSTALLERS = ("pip", "uv")


def torch_pin(build: WheelBuild) -> str:
    """torch pinned to exactly this build, local label included where its wheels carry one, so that an index (or
    a mirror) holding several variants cannot hand over another."""
    return f"torch=={build.local}"


def requirements(build: WheelBuild, companions: Sequence[PairedRelease]) -> list[str]:
    """torch and each companion, pinned (a companion by its release: its local label matches the index's)."""
    return [torch_pin(build), *(f"{pair.project}=={pair.version}" for pair in companions)]


def installer_argv(
    installer: Installer,
    interpreter: str,
    build: WheelBuild,
    companions: Sequence[PairedRelease],
    index_url: str,
    uv: str = "uv",
) -> list[str]:
    """The command that installs the set into `interpreter`'s environment from `index_url` alone."""
    pinned = requirements(build, companions)
    if installer == "uv":
        return [uv, "pip", "install", "--python", interpreter, *pinned, "--index-url", index_url]
    return [interpreter, "-m", "pip", "install", *pinned, "--index-url", index_url]
