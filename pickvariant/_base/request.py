"""What one command asks: the machine to decide for (stated facts; what is not stated is detected) and the pins.

Every way in builds one Request (the typer CLI, the typer-free `detect --format json` path, `api.recommend`'s
arguments) and every layer takes it whole: the facts layer reads the stated machine, the rules read the pins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record, replace

# The CPU-side workloads, in the order the CLI lists them; the catalog ranks instruction sets for each.
WORKLOADS = ("general", "int8", "bf16")
# A node's label in detect's JSON and plan's input: the detect-line schema allows no longer one.
MAX_LABEL_LENGTH = 256


def check_label(label: str, given: str) -> str:
    """A node's label as plan, install --plan, verify and fleet read it: 1 to MAX_LABEL_LENGTH printable characters."""
    if not 0 < len(label) <= MAX_LABEL_LENGTH:
        raise BadInput(
            f"{given}: {len(label)} characters; a label is 1 to {MAX_LABEL_LENGTH} (plan reads no longer one)"
        )
    if not label.isprintable():
        raise BadInput(f"{given}: it holds a control character; a label names a node in plain text")
    return label


# The platforms a machine may be stated as (--platform), as PyTorch's wheels name them: (os, arch) as the CPU facts do.
STATED_PLATFORMS = {
    "linux-x86_64": ("linux", "x86_64"),
    "linux-aarch64": ("linux", "aarch64"),
    "windows-amd64": ("windows", "x86_64"),
    "macos-arm64": ("darwin", "aarch64"),
}

# The projects built beside PyTorch, in the same naming (barstoolbluz/build-torchvision, -torchaudio, -vllm).
COMPANION_PROJECTS = ("torchvision", "torchaudio", "vllm")


@keyword_record
class Request:
    # The machine: a /proc/cpuinfo dump, compute capabilities ("9.0", "sm_90"), no GPU, a driver version and its CUDA version.
    cpuinfo: str | os.PathLike[str] | None = None
    # The machine's OS and architecture where no CPU dump states them (one of STATED_PLATFORMS): the wheels source only.
    platform: str | None = None
    gpus: tuple[str, ...] = ()
    no_gpu: bool = False
    driver: str | None = None
    # The CUDA version that driver reports (nvidia-smi's "CUDA Version"): what judges a Jetson driver.
    driver_cuda: str | None = None
    # What the CPU side mostly runs (one of WORKLOADS).
    workload: str = "general"
    # The pins: each narrows the choice as the option of the same name does.
    torch: str | None = None
    cuda: str | None = None
    gpu_index: int | None = None
    branch: str | None = None
    python: str | None = None
    # Where the Python pin came from, for messages: the option, or PICKVARIANT_PYTHON.
    python_given_as: str = "--python-version"
    # Companions chosen with the torch (--with, PICKVARIANT_WITH): one PyTorch for all of them.
    with_projects: tuple[str, ...] = ()
    # The set as built from source (install --build, detect --build): each companion generated on the chosen
    # variant's own recipe, not a published one.
    build: bool = False
    # The source of builds asked, by name (sources/registry.py; None: PICKVARIANT_SOURCE, else flox), and what a
    # source of prebuilt builds is asked beside the machine: the environment a build is for (--python, else the
    # active one: `interpreter_given_as` says where it was found) and a mirror of its indexes (--wheel-index).
    source: str | None = None
    interpreter: str | None = None
    interpreter_given_as: str = "--python"
    index: str | None = None
    # A report of a stated machine: nothing of this one is read or mixed in (a stated machine needs its CPU).
    described: bool = False

    def machine_stated(self, env: Mapping[str, str]) -> bool:
        """Is the machine described by options or variables rather than read here? Then the Python environment here
        is not the one a wheel is for, unless --python names it."""
        variables = (settings.GPU, settings.CPUINFO, settings.DRIVER)
        stated = self.gpus or self.no_gpu or self.cpuinfo or self.platform
        return bool(stated or any(settings.setting(env, v) for v in variables))

    def with_environment(self, env: Mapping[str, str]) -> Request:
        """This request with the pins PICKVARIANT_* states where the request states none (the machine's
        variables are read where the facts are gathered, so that each fact can name its source)."""
        request = self
        if request.python is None and (python := settings.setting(env, settings.PYTHON)) is not None:
            request = replace(request, python=python, python_given_as=settings.PYTHON)
        if not request.with_projects:
            request = replace(request, with_projects=projects_or_environment((), env))
        return request


def projects_or_environment(projects: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, ...]:
    """The companions asked for: those given, else PICKVARIANT_WITH's (what --with means for every command)."""
    if projects or (stated := settings.setting(env, settings.WITH)) is None:
        return projects
    return projects_from([stated], settings.WITH + "=")


def projects_from(values: Sequence[str], given_as: str) -> tuple[str, ...]:
    """`--with torchvision,torchaudio` (repeatable) or PICKVARIANT_WITH as projects, each once, in the order given."""
    found: list[str] = []
    for value in values:
        for name in (part.strip().lower() for part in value.split(",")):
            if not name:
                continue
            if name not in COMPANION_PROJECTS:
                raise BadInput(f"{given_as.rstrip('=')} {name!r:.40}: choose from {', '.join(COMPANION_PROJECTS)}")
            if name not in found:
                found.append(name)
    return tuple(found)
