"""Whether the torch already in an environment runs on this machine's GPUs: judged by the catalog's build of the
same version and local label (a plain version is PyPI's own build of the platform), with the same kernel rule every
build is chosen by."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant.machine.environment import PythonEnvironment
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import compat
from pickvariant.rules.wording import families as families_said
from pickvariant.rules.wording import prebuilt as said
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.nouns import Nouns
from pickvariant.sources.prebuilt import other_stack
from pickvariant.sources.runs_on import Build


def installed_build(local: str, builds: Sequence[Build]) -> Build | None:
    """The catalog's build that `torch.__version__` `local` is on this platform, or None where none is known."""
    release, _, label = local.partition("+")
    for build in builds:
        if build.torch == release and (build.index == label if label else build.label == local or build.default_index):
            return build
    return None


def installed_finding(
    environment: PythonEnvironment,
    builds: Sequence[Build],
    gpus: Sequence[GpuFacts],
    hardware: Hardware,
    chosen: Build | None,
    facts: HostFacts,
    others: Sequence[OtherGpu],
    nouns: Nouns,
) -> tuple[str | None, str, str]:
    """(the installed torch's version, whether it runs on every GPU here: yes, no, unknown or none, the sentence).
    It runs where its kernels run on every GPU and the driver runs its CUDA line: the rules every wheel is held to."""
    local = environment.torch
    if local is None:
        return None, "none", said.installed_none(environment.interpreter)
    build = installed_build(local, builds)
    if build is None:
        stack = other_stack(local)
        unknown = said.installed_other_stack(local, stack, nouns) if stack else said.installed_unknown(local, nouns)
        return local, "unknown", unknown
    # PyPI's build: its metadata carries no local label (its torch.__version__ does): named with the build's.
    shown = local if build.label == local else said.pypi_build(local, build.label)
    if chosen is not None and build == chosen:
        return local, "yes", said.installed_is_chosen(shown)
    if not gpus and not others:
        return local, "yes", said.installed_no_gpus(shown)
    found = compat.first_refusal(build, facts, hardware, gpus, others)
    if found is not None and found.what == compat.GPUS_UNUSED:
        return local, "no", said.installed_cpu_only(shown)
    if (found is not None and found.what in (compat.NO_GPU, compat.UNJUDGED)) or (found and found.other is not None):
        return local, "no", families_said.installed_misses(shown, found.detail)
    if found is not None and found.what == compat.KERNELS:
        assert found.gpu is not None
        return local, "no", said.installed_lacks(shown, found.gpu.index, found.gpu.compute_capability)
    if found is not None:
        return local, "no", said.installed_undriven(shown, found.detail[0])
    served = ", ".join(
        [*(f"GPU {gpu.index} ({gpu.compute_capability})" for gpu in gpus), *(gpu.described for gpu in others)]
    )
    return local, "yes", said.installed_covers(shown, served)
