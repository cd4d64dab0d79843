"""The installer command line that installs a wheel decision: pip run by the environment's interpreter, or uv's pip
interface pointed at it. One construction for what detect prints, what `install --dry-run` shows and what install
runs."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant.sources.prebuilt import PairedRelease
from pickvariant.sources.runs_on import Build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from pickvariant.rules.decision import PrebuiltAnswer

    Installer = Literal["pip", "uv"]

INSTALLERS = ("pip", "uv")


def torch_pin(build: Build, from_pypi: bool = False) -> str:
    """torch pinned to exactly this build, local label included where its wheels carry one, so that an index (or
    a mirror) holding several variants cannot hand over another. PyPI's own build is pinned by its release: PyPI
    holds one build of it per platform, and its version carries no local label."""
    return f"torch=={build.torch if from_pypi else build.label}"


def requirements(build: Build, companions: Sequence[PairedRelease], from_pypi: bool = False) -> list[str]:
    """torch and each companion, pinned (a companion by its release: its local label matches the index's)."""
    return [torch_pin(build, from_pypi), *(f"{pair.project}=={pair.version}" for pair in companions)]


def installer_argv(
    installer: Installer,
    interpreter: str,
    build: Build,
    companions: Sequence[PairedRelease],
    index_url: str | None,
    uv: str = "uv",
    from_pypi: bool = False,
) -> list[str]:
    """The command that installs the set into `interpreter`'s environment from `index_url` alone; None: the index
    is given in the installer's environment instead (index_environment), where it carries credentials, or, for
    PyPI's own build (`from_pypi`), the installer's default index is used (PyPI, or what pip or uv is set to)."""
    pinned = requirements(build, companions, from_pypi)
    index = ["--index-url", index_url] if index_url is not None else []
    if installer == "uv":
        return [uv, "pip", "install", "--python", interpreter, *pinned, *index]
    return [interpreter, "-m", "pip", "install", *pinned, *index]


def index_environment(installer: Installer, index_url: str) -> tuple[tuple[str, str], ...]:
    """The variable that gives the installer its index, credentials included, out of its argument list (which
    `ps` shows every user and the log records): pip's PIP_INDEX_URL, uv's UV_DEFAULT_INDEX."""
    return (("UV_DEFAULT_INDEX" if installer == "uv" else "PIP_INDEX_URL", index_url),)


def index_url_for_installer(answer: PrebuiltAnswer) -> str | None:
    """The chosen index's URL with its credentials, for the installer and the files it reads; None: no index."""
    decision = answer.decision
    if decision.build is None or decision.detail.index_url is None:
        return None
    root = answer.index_root_with_credentials
    return answer.catalog_of_builds().url(root, decision.build.index) if root else decision.detail.index_url


class PipPackaging:
    """A source of wheels' packaging part (sources/registry.py, role "packaging"): how detect, a plan and a report pin
    its builds and the command a person copies that installs them: pip's requirements and command line. `python`:
    the CPython tag the set is for, where one was named (pip takes the interpreter's: a wheel's pin needs none)."""

    def pins(self, build: Build, companions: Sequence[PairedRelease], from_pypi: bool, python: str | None) -> list[str]:
        return requirements(build, companions, from_pypi)

    def command(
        self,
        interpreter: str,
        build: Build,
        companions: Sequence[PairedRelease],
        url: str | None,
        from_pypi: bool,
        python: str | None,
    ) -> list[str]:
        return installer_argv("pip", interpreter, build, companions, url, from_pypi=from_pypi)


PACKAGING = PipPackaging()
