"""Every sentence the rules say, in one place: a stage finds facts, this package words them.

Here: a rejection of any source's stages in words (`choice`, `why`: one table of every source's kinds and causes), and
what every answer says of the machine (its platform, its GPUs, its driver). Beside it, by what they speak of:
`compat` (whether a build can run here at all: its kernels, its driver, its CPU; rules/compat.py's findings),
`recipes` (the recipe answer's branch, architecture, instruction set, sets and hints) and `prebuilt` (a source of
prebuilt builds' answer: the wheel chosen, its index, companions, the torch installed, its hints).

A rejection is a kind, a subject and the facts its stage found (rules/decision.py); `why` and `choice` turn it into
what text, Markdown and JSON show. A stage never writes prose of its own, so a reason can only state what a stage
found: "workload general prefers avx" is said only where the instruction set stage ranked avx first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pickvariant.rules.decision import Kind, Rejection
from pickvariant.rules.wording.compat import TEGRA_CUDA_UNKNOWN
from pickvariant.sources.nouns import WHEELS, Nouns
from pickvariant.sources.prebuilt import OTHER_STACKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.rules.decision import SetRefusal

_SUBJECTS = {
    "branch": "branch {}",
    "cuda_line": "CUDA {} (every branch)",
    "cpu_isa": "CPU instruction set {}",
    "gpu_arch": "GPU architecture {}",
    "package": "{}",
    "companion": "{}",
    "wheel_variant": "{} {wheels}",
    "torch_release": "torch {}",
}


def choice(rejection: Rejection, nouns: Nouns = WHEELS) -> str:
    """What lost, as a person names it; a prebuilt build in its source's `nouns` (a recipe's rejection names none)."""
    axis, name = rejection.subject
    return _SUBJECTS[axis].format(name, **_nouns(nouns))


def why(rejection: Rejection, nouns: Nouns = WHEELS) -> str:
    """Why it lost: the facts its stage found, in words (a prebuilt build's in its source's `nouns`)."""
    facts = {name: value if value.__class__ is str else ", ".join(value) for name, value in rejection.facts}
    key = (rejection.kind, facts.get("cause", ""))
    said = _WHY[key]
    return said.format_map({**facts, **_nouns(nouns)}) if isinstance(said, str) else said(facts)


def _nouns(nouns: Nouns) -> dict[str, str]:
    """The placeholders a template of a prebuilt build's rejection names its source's nouns by."""
    return {"wheel": nouns.build, "wheels": nouns.builds, "index": nouns.where}


def set_refusal(refusal: SetRefusal) -> str:
    """Why a set cannot be on a variant (rules/pairing.py found it)."""
    if refusal.cause == "missing":
        return f"no {', '.join(refusal.projects)} recipe is built on its PyTorch for this machine"
    if refusal.cause == "not_generated":
        return f"no {', '.join(refusal.projects)} recipe can be generated on it: {refusal.detail}"
    if refusal.cause == "aligned":
        return f"the set takes the equal variant of branch {refusal.detail}, aligned with the vLLM release chosen"
    return f"with {', '.join(refusal.projects)} it would hold two PyTorch builds: {refusal.detail}"


def _ranked_arch(f: dict[str, str]) -> str:
    if f["higher"] == "yes":
        return (
            f"its kernels run on {f['runs_on']} too, but {f['better']} is the higher architecture and has a variant "
            "here (native kernels, newer instructions)"
        )
    return f"its kernels run on {f['runs_on']} too, but no variant of it fits as well as {f['better']}'s"


def _isa_not_built(f: dict[str, str]) -> str:
    on_cuda = f" on CUDA {f['cuda']}" if f["cuda"] else ""
    return f"fits this CPU, but {f['branch']} has no {f['arch'] or 'CPU-only'} variant of it{on_cuda}"


def _wheel_no_kernels(f: dict[str, str]) -> str:
    if f["ptx"]:
        ptx = f" and PTX for {f['ptx']}"
    elif f["ptx_known"] == "yes":
        ptx = " and no PTX (no JIT fallback)"
    else:
        ptx = " (its PTX is not known, so none is counted)"
    return f"{f['example']} ships kernels for {f['sass'] or 'no GPU'}{ptx}: GPU {f['gpu']} ({f['capability']}) has none"


# (kind, cause) -> a template over the facts, or a function of them where the words depend on a fact's value.
# Templates rather than functions: this table is imported on detect's path, and each function is one more code object
# to load (benchmarks/detect_speed.py, cold).
_WHY: dict[tuple[str, str], str | Callable[[dict[str, str]], str]] = {
    (Kind.CPU_LACKS_FLAGS, ""): "this CPU lacks {missing}: the build would crash with an illegal instruction",
    (Kind.NO_KERNELS, ""): "GPU {gpu}: {refusal}",
    (Kind.DRIVER, ""): "{refusal}",
    (Kind.PINNED_OUT, "branch"): "--branch {named} was named",
    (Kind.PINNED_OUT, "torch"): "ships PyTorch {shipped}, not the pinned --torch {pin}",
    (Kind.PINNED_OUT, "python"): "builds Python {shipped}, not the requested {pin}",
    (Kind.ALIGNED, ""): "aligned with {aligned_with}: chosen only when named with --branch (or --with vllm)",
    (Kind.NOT_BUILT, "isa"): _isa_not_built,
    (Kind.NOT_BUILT, "platform"): "builds nothing for {system}",
    (Kind.NOT_BUILT, "mps"): "has no MPS build",
    (Kind.NOT_BUILT, "cpu_only"): "has no CPU-only variant for {isas}",
    (Kind.NOT_BUILT, "gpu"): "no {wanted} build (nor one whose kernels run on {capabilities})",
    (Kind.NOT_BUILT, "isa_for_gpu"): "its {archs} variants exist only for {isas}, none of which this CPU can run",
    (Kind.NOT_BUILT, "driver"): "its fitting variants are on CUDA {cudas}, which the driver cannot run",
    (Kind.RANKED_LOWER, "isa"): "fits this machine, but workload {workload} prefers {preferred}",
    (Kind.RANKED_LOWER, "torch"): "fits (e.g. {example}), but ships the older PyTorch {torch}",
    (Kind.RANKED_LOWER, "cuda"): "fits, but its newest fitting CUDA line is {cuda}",
    (Kind.RANKED_LOWER, "python"): "fits (e.g. {example}), but Python {python} ranks after {preferred}",
    (Kind.RANKED_LOWER, "arch"): _ranked_arch,
    (Kind.RANKED_LOWER, "branch_arch"): (
        "fits (e.g. {example}), but its highest fitting GPU architecture is {arch}, lower than {preferred}"
    ),
    (Kind.RANKED_LOWER, "branch_isa"): (
        "fits (e.g. {example}), but workload {workload} ranks its instruction set {isa} after {preferred}"
    ),
    (Kind.RANKED_LOWER, "order"): (
        "fits (e.g. {example}), but ranks after {preferred} in the order (PyTorch, CUDA line, Python, GPU "
        "architecture, instruction set, branch name)"
    ),
    (Kind.NO_SET, "variant"): "{refusal}",
    (Kind.NO_SET, "branch"): "fits for PyTorch alone (e.g. {example}), but {refusal}",
    (Kind.COMPANION_TORCH_UNKNOWN, ""): (
        "built against an unknown torch: its recipe pins no nixpkgs, so its torch is whatever the nixpkgs Flox builds "
        "it with gives, and it cannot be shown to be PyTorch {torch}; a recipe that pins nixpkgs (or imports the "
        "pytorch recipe) would settle it"
    ),
    # A source of prebuilt builds' (rules/prebuilt_stages.py)
    (Kind.NO_KERNELS, "wheel"): _wheel_no_kernels,
    (Kind.DRIVER, "wheel"): "{example}: {refusal}",
    (Kind.NO_KERNELS, "wheel_other"): "{example} has {refusal}",
    (Kind.NOT_BUILT, "unjudged"): "{example} carries GPU code of a kind pickvariant cannot judge, so it is not chosen",
    (Kind.PINNED_OUT, "wheel_torch"): "{example}: not the pinned --torch {pin}",
    (Kind.PINNED_OUT, "wheel_cuda"): "{example}: {shipped}, not the pinned --cuda {pin}",
    (Kind.NOT_BUILT, "python_tag"): "{example} has no {wheel} for {tag} (it has {tags})",
    (
        Kind.NOT_BUILT,
        "no_gpu",
    ): "{example} is a CUDA build and this machine has no NVIDIA GPU (the cpu {wheel} serves it)",
    (Kind.NOT_BUILT, "no_gpu_served"): "{example} is a CUDA build and this machine has no NVIDIA GPU",
    (Kind.NOT_BUILT, "no_gpu_rocm"): "{example} is a ROCm build and this machine has no AMD GPU",
    (Kind.NOT_BUILT, "no_gpu_xpu"): "{example} is an XPU build and this machine has no Intel GPU the XPU builds serve",
    (Kind.NOT_BUILT, "gpus_unused"): "{example} is CPU-only and would leave this machine's GPUs unused",
    (Kind.NOT_BUILT, "release"): "none of its {wheels} fits here: {refusals}",
    (Kind.RANKED_LOWER, "wheel_torch"): "fits ({example}), but ships the older PyTorch {torch}",
    (Kind.RANKED_LOWER, "wheel_cuda"): "fits ({example}), but CUDA {cuda} is older than the chosen CUDA {preferred}",
    (Kind.RANKED_LOWER, "wheel_stack"): "fits ({example}), but {stack} is older than the chosen {preferred}",
    (
        Kind.NO_SET,
        "wheel",
    ): "fits ({example}) for torch alone, but {projects} published no release paired with torch {torch}",
    (Kind.NO_SET, "wheel_python"): (
        "fits ({example}) for torch alone, but {projects} paired with torch {torch} has no {wheel} for {tag}"
    ),
}


# Reasons: what each stage found that decided the answer.


def platform_has_builds(os: str, arch: str, system: str) -> str:
    return f"platform {os}/{arch} ({system}) has builds"


def unsupported_platform(os: str, arch: str, built_for: Sequence[str]) -> str:
    platform = f"{os}/{arch}"
    if os == "darwin" and arch == "x86_64":
        return (
            f"platform {platform} (an Intel Mac) is not supported: macOS builds are for Apple Silicon only "
            f"(aarch64-darwin, MPS); the catalog builds {', '.join(built_for)}"
        )
    return f"platform {platform} is not supported: every variant is built for one of {', '.join(built_for)}"


GPU_INCONCLUSIVE = "GPU detection was inconclusive, so no variant can be shown to have kernels for this machine's GPUs"
GPU_INCONCLUSIVE_HINT = "describe the GPUs with --gpu CC (and --driver VERSION), or pass --no-gpu for a CPU-only build"
APPLE_MPS = "Apple Silicon: the MPS build runs on the Apple GPU through Metal"
NVIDIA_ON_MACOS = "the stated NVIDIA GPUs change nothing on macOS: no build there uses CUDA"
OTHER_GPUS_ON_MACOS = "the stated AMD or Intel GPUs change nothing on macOS: no build there uses ROCm or XPU"
NO_GPU = "no GPU: choosing among CPU-only builds"
NO_NVIDIA_GPU = "no NVIDIA GPU: choosing among CPU-only builds"
DRIVER_ASSUMED = "driver: none given, assumed new enough for every CUDA line"


def gpu_reason(index: int, name: str, capability: object, tegra: bool) -> str:
    kind = "integrated Tegra" if tegra else "discrete"
    return f"GPU {index}: {name}, compute capability {capability} ({kind})"


def other_gpu(described: str, vendor: str, published: str | None, nouns: Nouns, index_url: str | None = None) -> str:
    """An AMD or Intel GPU (machine/othergpu.py), to a source of prebuilt builds: what the answer does with it, and
    why; `published`: the newest builds of its stack the catalog names for this platform, left out and not judged
    ("torch 2.14.1 rocm7.14"), or None where it names none; `index_url`: where the newest of them is installed from,
    whose build `verify` judges on the GPU once installed (verify/devices.py: an AMD GPU by its target, an Intel GPU by
    what ran on it)."""
    stack = OTHER_STACKS[vendor][1]
    if published is None:
        return f"{described}: unused by this answer: the {nouns.build} catalog names no {stack} build for this platform"
    what = "which gfx targets those builds carry" if vendor == "amd" else "which Intel GPUs those builds run on"
    said = (
        f"{described}: unused by this answer: the {nouns.build} catalog names {stack} builds for this platform (the newest: "
        f"{published}; every one under --explain and in the JSON's left_out), but {what} is not known, so it "
        f"chooses none of them"
    )
    if index_url is None:
        return said
    judged = (
        "a code object for its target, or 'invalid device function'"
        if vendor == "amd"
        else "a kernel and the matmul and convolution checks run on it"
    )
    return f"{said}; one installed from {index_url} is judged on this GPU by `pickvariant verify` ({judged})"


def cuda_pin_unused(pin: str) -> str:
    """`--cuda` named where the build chosen has no CUDA: the pin leaves such a build (rules/pins.py), said so."""
    return (
        f"--cuda {pin} pins the CUDA line of CUDA builds only: with no NVIDIA GPU to serve, the build chosen has no "
        "CUDA, and the pin leaves it"
    )


def hidden_gpus(value: str, visible: int, total: int) -> str:
    if total == 1:
        return (
            f"CUDA_VISIBLE_DEVICES={value!r} hides the GPU from CUDA programs; the choice still covers it, "
            "so it stays right when the variable changes"
        )
    return (
        f"CUDA_VISIBLE_DEVICES={value!r} lets CUDA programs see {visible} of the {total} GPUs; "
        "the choice still covers all of them, so it stays right when the variable changes (--gpu-index N decides for "
        "one GPU)"
    )


def driver_can_run(label: str, cudas: Sequence[str], rule: str, minor: str | None) -> str:
    return f"{label} can run CUDA {', '.join(cudas)}{rule}" + (f" ({minor})" if minor else "")


def jetson_lines_unknown(label: str) -> str:
    return f"which CUDA lines {label} can run is unknown: {TEGRA_CUDA_UNKNOWN}"


def driver_runs_none(label: str, pinned: bool, rule: str) -> str:
    return f"{label} can run none of the CUDA lines {'the pins leave' if pinned else 'of the catalog'}{rule}"


def unserved_gpus(
    arch: str, without: Sequence[tuple[int, object]], served: Sequence[tuple[int, object]], chosen: str
) -> str:
    """--gpu-index: what the answer means for the GPUs it was not chosen for."""
    said = []
    if without:
        shown = ", ".join(f"GPU {index} ({capability})" for index, capability in without)
        said.append(
            f"{arch} has no kernels for {shown}: a process that touches it fails with 'no kernel image is available'; "
            # CUDA numbers GPUs fastest first unless told to follow the PCI order NVML's indices follow.
            f"hide it with CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={chosen}"
        )
    if served:
        shown = ", ".join(f"GPU {index} ({capability})" for index, capability in served)
        said.append(f"its kernels run on {shown} too")
    return f"chosen for GPU {chosen} (--gpu-index): " + "; ".join(said)
