"""What the recipe answer says of its build: the branch, GPU architecture and instruction set chosen, the sets and
companions, what left no variant, and its hints (rules/recipe_walk.py, pairing.py, nothing.py, hints.py find the facts)."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant.rules.wording import set_refusal
from pickvariant.sources.prebuilt import OTHER_STACKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.rules.decision import SetRefusal, SetShape
    from pickvariant.sources.build import Variant


def branch_reason(
    *, name: str, torch: str, python: str, cuda: str | None, nixpkgs: str, cuda_packages: str, why: str
) -> str:
    parts = [f"PyTorch {torch}"]
    if cuda is not None:
        parts.append(f"CUDA {cuda} (nixpkgs {nixpkgs[:7]}, {cuda_packages})")
    parts.append(f"Python {python}")
    return f"branch {name}: {', '.join(parts)}: {why}"


BRANCH_NAMED = "named with --branch"


def branch_for_set(projects: Sequence[str], aligned_with: str | None) -> str:
    """Why a set's branch, where it is not the one PyTorch alone would get."""
    aligned = f"; it is aligned with {aligned_with}, the release the set takes" if aligned_with else ""
    verb = "makes" if len(projects) == 1 else "make"
    return (
        f"the first branch, in the order newest PyTorch, newest CUDA line the driver can run, preferred Python, "
        f"on whose PyTorch {', '.join(projects)} {verb} a set{aligned}"
    )


BRANCH_MPS = "the newest PyTorch, then the preferred Python, that has an MPS build"
BRANCH_CPU = "the newest PyTorch, then the preferred Python, that has a CPU-only variant this CPU can run"
BRANCH_CUDA = (
    "the newest PyTorch, then the newest CUDA line the driver can run, then the preferred Python, that has a "
    "variant for this machine"
)


def other_gpu_no_recipe(described: str, vendor: str) -> str:
    """An AMD or Intel GPU (machine/othergpu.py), to the recipes' answer: no variant of a catalog of recipes is built
    for one (its GPU builds are NVIDIA architectures and Apple's MPS, by the catalog's schema), and the wheels'
    answer is the one that names what PyTorch publishes for it."""
    stack = OTHER_STACKS[vendor][1]
    return (
        f"{described}: unused by this answer: no recipe of the catalog builds for {stack} (its GPU builds are for "
        f"NVIDIA GPUs and Apple's MPS); `pickvariant detect --source wheels` says which {stack} builds of PyTorch's "
        "own wheels its catalog names for this platform"
    )


def mps_reason(min_macos: str) -> str:
    return f"GPU: Apple MPS (needs macOS {min_macos} or newer)"


def arch_exact(name: str, capability: object, description: str) -> str:
    return f"GPU architecture {name}: exact match for compute capability {capability} ({description})"


def arch_highest(name: str, gpus: Sequence[tuple[int, object]]) -> str:
    runs_on = ", ".join(f"GPU {index} ({capability})" for index, capability in gpus)
    return f"GPU architecture {name}: the highest architecture with a variant whose kernels run on {runs_on}"


def without_cudnn(arch: str) -> str:
    return f"built without cuDNN (cuDNN 9.11+ has no kernels for {arch}): convolutions use PyTorch's own CUDA kernels"


def isa_reason(name: str, requires: Sequence[str], workload: str, ranked: Sequence[str]) -> str:
    return (
        f"CPU instruction set {name}: every required flag is present ({' '.join(requires)}); "
        f"workload {workload} ranks {' > '.join(ranked)}"
    )


def set_on_one_torch(projects: Sequence[str], torch: str, axes: Sequence[str]) -> str:
    return f"with {', '.join(projects)}: every piece is on PyTorch {torch} ({', '.join(axes)})"


def built_for_want_of_published(projects: Sequence[str], best: tuple[Variant, SetRefusal] | None) -> str:
    cause = f"the best, {best[0].label}: {set_refusal(best[1])}" if best else ""
    return (
        f"no published {', '.join(projects)} makes a set on one PyTorch here{f' ({cause})' if cause else ''}, so the "
        "set is built from source: each companion from a recipe pickvariant generates on the variant's own (one torch, "
        "built once)"
    )


def install_needs_build(shape: SetShape, variant: str, projects: Sequence[str]) -> str:
    return (
        f"the set {', '.join(shape.installed)} is built from source ({', '.join(shape.generated)} generated on "
        f"{variant}'s recipe): nothing published makes it on one PyTorch here (`pickvariant detect --with "
        f"{','.join(projects)}` says why); install it with --build"
    )


def generated_reason(project: str, package: str, variant: Variant, cost: str, pin_torch: str | None) -> str:
    """A companion generated on the variant: what it is built on, what it costs, and, where the variant's torch is
    a source upgrade over its nixpkgs pin, that the companion is the pin's own release compiled against it."""
    said = (
        f"{project}: {package}, generated on {variant.package}'s own recipe (one torch derivation); "
        f"built from source: {cost}"
    )
    if pin_torch != variant.torch:
        own = f"PyTorch {pin_torch}" if pin_torch else "the pin's own torch"
        said += (
            f"; nixpkgs {variant.nixpkgs_rev[:7]}'s {project} is its release for {own}, compiled here against "
            f"{variant.torch} (as build-torchvision's pytorch-2.10 branch builds torchvision)"
        )
    return said


def generated_relation(package: str, cost: str) -> str:
    return f"generated on {package}'s own recipe (one torch derivation); built from source: {cost}"


def companion_reason(project: str, package: str, repo: str, branch: str, relation: str) -> str:
    return f"{project}: {package} from {repo} {branch}: {relation}"


def set_moved(alone: str, torch: str, cuda: str | None, refusal: str) -> str:
    return (
        f"PyTorch alone would be {alone} (PyTorch {torch}, CUDA {cuda or 'none'}): {refusal}, so the set takes the "
        "next that has one"
    )


def no_set_recipe(lacking: Sequence[str], best: Variant) -> str:
    axes = [
        f"PyTorch {best.torch}",
        f"Python {best.python}",
        f"CUDA {best.cuda or 'none'}",
        best.gpu_arch or "CPU only",
        best.cpu_isa or "",
    ]
    return (
        f"no {', '.join(lacking)} recipe is built on the PyTorch of any variant that runs here (the best, {best.label}: "
        f"{', '.join(a for a in axes if a)})"
    )


def no_set_one_torch(label: str, refusal: str) -> str:
    return f"no set gives one PyTorch here (the best, {label}: {refusal})"


def without_with(label: str) -> str:
    return f"without --with, PyTorch alone is {label}"


def identical_relation(package: str) -> str:
    return f"identical: it imports {package}'s own recipe (one derivation)"


def separate_relation(torch: str | None, pin: str, own_pin: str) -> str:
    where = "the same nixpkgs pin" if pin == own_pin else f"nixpkgs {pin[:7]} (the variant's is {own_pin[:7]})"
    return f"a separate build of torch {torch} from {where}"


def two_torches(own: Sequence[str], identical: Sequence[str]) -> str:
    beside = f" besides {', '.join(identical)}" if identical else ""
    return (
        f"{', '.join(own)} each bring a torch of their own build{beside}: one environment links "
        "only one of them, and the others' compiled extensions would load against a torch they were not built with"
    )


# No variant: what the stages found, and what would help.

NO_MPS_BUILD = "no branch left by the pins has an MPS build for {system}"
DROP_PINS_MAC = "drop --torch/--python-version/--branch to consider every branch"
DROP_PINS = "drop --torch/--cuda/--python-version/--branch to consider every branch"
NOTHING_COMBINES = (
    "no variant combines an admissible branch and CUDA line, a GPU architecture with kernels for this machine and a "
    "CPU instruction set it can run"
)
NO_FLAGS_KNOWN = (
    "no CPU flags are known (see the notes): describe the CPU with --cpuinfo FILE, a copy of its /proc/cpuinfo"
)
TARGET_ONE_GPU = "target one GPU with --gpu-index N"


def no_isa_fits(model: str, arch: str) -> str:
    return f"this CPU ({model}) has the flags of no {arch} instruction set in the catalog"


def gpus_conflict(gpus: Sequence[tuple[int, str, object]]) -> str:
    listing = ", ".join(f"GPU {index} ({name}, {capability})" for index, name, capability in gpus)
    return f"the GPUs conflict: no variant has kernels for all of {listing}"


def no_kernels_for(index: int, name: str, capability: object) -> str:
    return f"no variant has kernels for GPU {index} ({name}, compute capability {capability})"


def gpu_builds_need(gpu_isas: Sequence[str], usable: Sequence[str]) -> str:
    return (
        f"the variants with kernels for these GPUs are built for {', '.join(gpu_isas)}, "
        f"and this CPU can run only {', '.join(usable)}"
    )


def no_cpu_only_variant(usable: Sequence[str]) -> str:
    return f"there is no CPU-only variant for {', '.join(usable)} on the branches the pins leave"


def driver_too_old(shown: str) -> str:
    return f"driver {shown} is too old for every CUDA line that has a variant for this machine"


def state_jetson_cuda(variable: str) -> str:
    return f"state the CUDA version the Jetson's driver reports with --driver-cuda X.Y (env {variable})"


def jetson_driver_would_allow(cuda: str, label: str) -> str:
    return f"a Jetson driver (JetPack) that supports CUDA {cuda} would allow {label}"


def older_driver_would_allow(driver: object, cuda_words: str, label: str, last_branch: int | None) -> str:
    """A driver older than the one given (a GPU newer branches dropped): within the last branch that drives it."""
    within = f"of branch R{last_branch} or older, " if last_branch is not None else ""
    return f"a driver {within}>= {driver} ({cuda_words}), would allow {label}"


def driver_would_allow(driver: object, cuda_words: str, label: str) -> str:
    return f"a driver >= {driver} ({cuda_words}) would allow {label}"


def branch_driver_would_allow(branch: object, cuda_words: str, label: str) -> str:
    return f"an R{branch} driver ({cuda_words}) would allow {label}"


def later_driver_allows(driver: object, cuda_words: str, label: str) -> str:
    return f"from {driver} ({cuda_words}), {label}"


def no_gpu_would_give(label: str) -> str:
    return f"--no-gpu would give {label} (CPU only: the GPU would go unused)"


def driver_gives_set(driver: object, torch: str, projects: Sequence[str], label: str) -> str:
    return f"a driver >= {driver} gives PyTorch {torch} with {', '.join(projects)} ({label})"


def newer_than_catalog(capability: object, newest: object) -> str:
    return (
        f"compute capability {capability} is newer than every GPU architecture of this catalog (newest {newest}): "
        "a newer pickvariant, or a site catalog that has it (PICKVARIANT_CATALOG), may offer a variant"
    )


def renamed_capability(description: str, before: object, after: object) -> str:
    return f"{description} reports {before} under CUDA 12 drivers and {after} under CUDA 13"


def renamed_needs_driver(renamed: str, driver_words: str, arch: str) -> str:
    return f"{renamed}: {driver_words} makes the {arch} variants usable"


def renamed_check_capability(renamed: str, driver: object, cuda: str, capability: object) -> str:
    return f"{renamed}, and driver {driver} already runs CUDA {cuda}: check the stated compute capability (--gpu {capability})"


def jetson_driver_for(cuda: str) -> str:
    return f"a Jetson driver (JetPack) that supports CUDA {cuda}"


def driver_for(driver: object, cuda_words: str) -> str:
    return f"a driver >= {driver} ({cuda_words})"


def trusted_by_user(package: str, repo: str) -> str:
    """A build of a repository whose recipes the user trusted whole (`catalog sync --trust-recipes`)."""
    return f"{package}: classified by its name, not proven: you trusted {repo}"
