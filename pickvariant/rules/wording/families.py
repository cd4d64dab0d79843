"""The words for what rules/families.py finds of an AMD or Intel GPU and a build's code for it."""

from __future__ import annotations

from collections.abc import Sequence


def no_code_object(described: str, target: str, targets: Sequence[str]) -> str:
    named = described if target in described else f"{target}, {described}"
    return f"no code object for {named} (it carries {', '.join(targets)})"


def no_rocm_build(target: str) -> str:
    return (
        f"no ROCm wheel carries code objects for {target}, and none stands in for it: HSA_OVERRIDE_GFX_VERSION "
        f"(running another target's code) is not recommended: it is documented to hang gfx1103 and to give wrong "
        f"results on gfx1033 (pytorch#179653, unsloth#8412), and TheRock's ROCm 7.14 fails to start with it set"
    )


def code_object(described: str, entry: str) -> str:
    return f"{described}: code objects for {entry}"


def aot_code(described: str, aot: str) -> str:
    return f"{described}: AOT code for {aot}"


def spirv(described: str, family: str | None) -> str:
    which = f"no AOT code for {family}" if family else "no AOT code named for it"
    return f"{described}: {which}; its SPIR-V is compiled by the driver at first use (a slower first run)"


def no_xpu_code(described: str, aot: Sequence[str]) -> str:
    return f"no code for {described} (AOT for {', '.join(aot)}, no SPIR-V)"


def judged_on(described: str, stack: str) -> str:
    return f"{described}: judged against the {stack} builds' targets"


def not_named(described: str) -> str:
    return (
        f"{described}: unused by this answer: not a device PyTorch's XPU builds are built or validated for (Arc A and "
        f"B, Core Ultra MTL, ARL, LNL and PTL, Data Center GPU Max: facts/rocm-xpu.md), so none is chosen for it"
    )


def rocm_driver(stack: str, drivers: Sequence[str]) -> str:
    found = f"this machine's: {', '.join(drivers)}" if drivers else "this machine's amdgpu reports no version"
    return (
        f"driver: the wheel bundles ROCm {stack}'s user space, so the host needs only the amdgpu kernel driver, which "
        f"AMD supports within two ROCm releases of it ({found}); not checked here: no fact maps a driver to its ROCm "
        f"release"
    )


XPU_DRIVER = (
    "driver: the Intel GPU driver (Level Zero) must be installed; PyTorch names no minimum version, so none is checked"
)


def inferred(label: str, where: str) -> str:
    return (
        f"{label}'s target list is {where}, not read from the wheel: `pickvariant verify` once it is installed "
        f"says whether its code runs on this GPU"
    )


def installed_misses(local: str, detail: Sequence[str]) -> str:
    """Why the torch in an environment (a ROCm or XPU build) does not serve this machine's GPUs."""
    why = f"it has {detail[0]}" if detail else "it has no code for the GPUs this machine has"
    return f"torch {local} in this environment does not run on this machine's GPUs: {why}"


def alone(described: Sequence[str], label: str | None) -> str:
    """A GPU of another vendor than the one the answer serves (one environment holds one torch)."""
    gpus = ", ".join(described)
    if label is None:
        return f"{gpus}: unused by this answer (one environment holds one torch), and no wheel would serve it alone"
    return (
        f"{gpus}: unused by this answer (one environment holds one torch); for it alone, in an environment of its "
        f"own: torch {label}"
    )


def companions_inferred(names: Sequence[str], index: str) -> str:
    """Companions paired with a ROCm or XPU build: the pairing is the release's, read from PyPI's builds; that its
    index holds their builds of that stack is inferred."""
    return (
        f"{', '.join(names)} on the {index} index: inferred from the release's pairing (read from PyPI's builds); "
        f"the {index} index's own companion wheels are not in the facts, so pip says if one is missing"
    )
