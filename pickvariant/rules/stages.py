"""The decision's stages, each a plain function from what the stage before left to its survivors and its rejections.

platform -> GPUs and driver -> branches -> CUDA lines -> instruction sets -> variants -> GPU architectures ->
companions (rules/pairing.py) -> the alternatives the ranking passed over (rules/alternatives.py). A stage returns
what it found; none appends to a list another owns, and none words a rejection (rules/wording/ does).
rules/recipe_walk.py runs them in order, through the one pick (rules/pick.py), which runs the machine stage for every
source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pickvariant._base.errors import BadInput
from pickvariant._base.memo import per_object
from pickvariant._base.records import keyword_record, record
from pickvariant._base.request import Request
from pickvariant._base.versions import cpython_tag, release_matches, version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts, cuda_visible_count
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import ranking, wording
from pickvariant.rules.compat import (
    TEGRA_DRIVER_RULE,
    build_of_variant,
    driver_rejection,
    judged_by_cuda_version,
    kernels_run,
    minor_version_note,
    missing_flags,
    runs_on_all,
    tegra_cuda_unknown,
    undriven_gpus,
    why_not,
)
from pickvariant.rules.decision import Kind, Rejection, rejection
from pickvariant.rules.pins import cuda_pinned_out, torch_pinned_out
from pickvariant.sources.build import MPS, Branch, Catalog, Variant
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.runs_on import Build


def targets(facts: HostFacts, options: Request) -> tuple[GpuFacts, ...]:
    """The GPUs the variant must run on: every one, or the one --gpu-index names."""
    if options.gpu_index is None:
        return facts.gpus
    for gpu in facts.gpus:
        if gpu.index == options.gpu_index:
            return (gpu,)
    present = ", ".join(str(gpu.index) for gpu in facts.gpus) or "none"
    raise BadInput(f"--gpu-index {options.gpu_index}: no such GPU (GPU indices present: {present})")


@record
class Machine:
    """The platform and GPU stage, every source's: the GPUs a build must serve and what the stage found. `hints`,
    where NVML could not say whether there are GPUs: the answer stops there, as no build can be chosen (a guess
    either way is a build that crashes or one that leaves the GPUs unused)."""

    gpus: tuple[GpuFacts, ...]
    reasons: tuple[str, ...]
    hints: tuple[str, ...] = ()
    # The AMD and Intel GPUs a build must serve: those the source has builds for (rules/families.py).
    others: tuple[OtherGpu, ...] = ()


def machine(
    facts: HostFacts,
    options: Request,
    hardware: Hardware,
    said: tuple[str, str],
    other_gpu: Callable[[OtherGpu], str],
    serves: Callable[[OtherGpu], bool] = lambda gpu: False,
) -> Machine:
    """The platform and GPU stage of every source, in one order: the platform, Apple's MPS or the GPUs to serve
    (every one, or the one --gpu-index names), what every answer says of them. `said`: the source's own sentences for
    the platform it has builds for and for MPS; `other_gpu`, for an AMD or Intel GPU (hardware_reasons)."""
    platform, mps = said
    if facts.os == "darwin":
        return Machine(gpus=(), reasons=(platform, mps, *hardware_reasons(facts, hardware, (), other_gpu)))
    if facts.gpu_inconclusive:
        return Machine(gpus=(), reasons=(platform, wording.GPU_INCONCLUSIVE), hints=(wording.GPU_INCONCLUSIVE_HINT,))
    gpus = targets(facts, options)
    others = tuple(gpu for gpu in facts.other_gpus if serves(gpu))
    reasons = (platform, *hardware_reasons(facts, hardware, gpus, other_gpu, bool(others)))
    return Machine(gpus=gpus, reasons=reasons, others=others)


def hardware_reasons(
    facts: HostFacts,
    hardware: Hardware,
    gpus: tuple[GpuFacts, ...],
    other_gpu: Callable[[OtherGpu], str],
    others_served: bool = False,
) -> tuple[str, ...]:
    """What every source says of this machine's GPUs, in the same words: each GPU to be served, none, the GPUs
    CUDA_VISIBLE_DEVICES hides; on macOS, that stated NVIDIA GPUs change nothing. What an AMD or Intel GPU gets is the
    source's to say (`other_gpu`: a catalog of recipes has no build for one; a source of prebuilt builds judges its
    ROCm or XPU builds on it, or has none); `others_served`: a build must serve one."""
    if facts.os == "darwin":
        return (
            *((wording.NVIDIA_ON_MACOS,) if facts.gpus else ()),
            *((wording.OTHER_GPUS_ON_MACOS,) if facts.other_gpus else ()),
        )
    found = [
        wording.gpu_reason(gpu.index, gpu.name, gpu.compute_capability, hardware.is_tegra(gpu.compute_capability))
        for gpu in gpus
    ]
    if not gpus and not others_served:
        found.append(wording.NO_NVIDIA_GPU if facts.other_gpus else wording.NO_GPU)
    found += [other_gpu(gpu) for gpu in facts.other_gpus]
    # A build that covers every GPU stays right when a job is given other GPUs later,
    # so the variable is explained, not obeyed.
    value = facts.cuda_visible_devices
    if value is not None and facts.gpus:
        visible = cuda_visible_count(value, len(facts.gpus))
        if visible < len(facts.gpus):
            found.append(wording.hidden_gpus(value, visible, len(facts.gpus)))
    return tuple(found)


def unserved(
    name: str, build: Build, facts: HostFacts, targets: tuple[GpuFacts, ...], hardware: Hardware
) -> tuple[str, ...]:
    """The machine's GPUs an answer was not chosen for (--gpu-index), for every source in the same words: whether
    `build`'s kernels run there (the one kernel rule), and how to keep a process off those they do not."""
    others = [gpu for gpu in facts.gpus if gpu not in targets] if targets else []
    if not others:
        return ()
    runs = {gpu: kernels_run(build, gpu.compute_capability, hardware) is not None for gpu in others}
    return (
        wording.unserved_gpus(
            name,
            [(gpu.index, gpu.compute_capability) for gpu in others if not runs[gpu]],
            [(gpu.index, gpu.compute_capability) for gpu in others if runs[gpu]],
            ",".join(str(gpu.index) for gpu in targets),
        ),
    )


@keyword_record
class Walked:
    """What the grid's stages found: the GPUs to serve, the sentences so far, the branches and instruction sets
    left, every variant that runs here best first, and why the others are out. The hints read it rather than work
    it out again."""

    gpus: tuple[GpuFacts, ...]
    reasons: tuple[str, ...]
    branches: tuple[Branch, ...]
    usable_isas: frozenset[str]
    candidates: tuple[Variant, ...]
    rejected: tuple[Rejection, ...]


def branches(catalog: Catalog, options: Request) -> tuple[tuple[Branch, ...], tuple[Rejection, ...]]:
    """The branches the pins (--branch, --torch, --python-version) leave, and why each other one is out."""
    pins = (options.branch, options.torch, options.python, options.python_given_as, "vllm" in options.with_projects)
    return _pinned_branches(catalog, *pins)


@per_object
def _pinned_branches(
    catalog: Catalog, pinned: str | None, torch: str | None, python: str | None, python_flag: str, vllm: bool
) -> tuple[tuple[Branch, ...], tuple[Rejection, ...]]:
    """Worked out once per catalog and pins: decide asks it of every machine of a cluster."""
    rejected: list[Rejection] = []
    if pinned is not None:
        named = catalog.branch(pinned)
        rejected += [
            rejection(Kind.PINNED_OUT, "branch", b.name, cause="branch", named=named.name)
            for b in catalog.branches
            if b.name != named.name
        ]
        considered = [named]
    else:
        considered = []
        for branch in catalog.branches:
            if branch.aligned_with and not (branch.aligned_with.startswith("vllm ") and vllm):
                rejected.append(rejection(Kind.ALIGNED, "branch", branch.name, aligned_with=branch.aligned_with))
            else:
                considered.append(branch)
    left = []
    for branch in considered:
        if torch and torch_pinned_out(torch, branch.torch):
            rejected.append(
                rejection(Kind.PINNED_OUT, "branch", branch.name, cause="torch", shipped=branch.torch, pin=torch)
            )
        elif python and not release_matches(python, branch.python, python_flag):
            rejected.append(
                rejection(Kind.PINNED_OUT, "branch", branch.name, cause="python", shipped=branch.python, pin=python)
            )
        else:
            left.append(branch)
    if not left:
        known = "; ".join(
            f"{b.name}: PyTorch {b.torch}, Python {b.python}"
            for b in catalog.branches
            if b.aligned_with is None or pinned
        )
        given = (("--branch", pinned), ("--torch", torch), (python_flag, python))
        pins = ", ".join(f"{flag} {value}" for flag, value in given if value)
        raise BadInput(f"no branch matches {pins}; the catalog has {known}")
    return tuple(left), tuple(rejected)


@record
class Lines:
    """The CUDA line stage: the (branch, CUDA line) pairs the driver can run, and what it found."""

    admissible: frozenset[tuple[str, str]]
    rejected: tuple[Rejection, ...]
    reason: str | None


def cuda_lines(
    facts: HostFacts, catalog: Catalog, options: Request, left: Sequence[Branch], gpus: tuple[GpuFacts, ...]
) -> Lines:
    """Which CUDA lines of the branches left the pins and the driver admit. Without GPUs to serve only builds
    without CUDA are looked at, so no line needs judging (a --cuda pin is still checked)."""
    if not gpus and not options.cuda:
        return Lines(frozenset(), (), None)
    admissible: set[tuple[str, str]] = set()
    too_old: dict[str, str] = {}
    for branch in left:
        for line in branch.cuda_lines:
            if options.cuda and cuda_pinned_out(options.cuda, line.cuda):
                continue
            why = driver_rejection(facts.driver, line, gpus, catalog)
            if why:
                too_old[line.cuda] = why
            else:
                admissible.add((branch.name, line.cuda))
    if options.cuda:  # a pin that matches nothing is bad input, GPUs or not
        built = sorted({line.cuda for b in left for line in b.cuda_lines}, key=version_key)
        if not any(release_matches(options.cuda, cuda, "--cuda") for cuda in built):
            raise BadInput(
                f"--cuda {options.cuda}: no branch left by the pins builds it (CUDA lines: {', '.join(built)})"
            )
    rejected = tuple(
        rejection(Kind.DRIVER, "cuda_line", cuda, refusal=too_old[cuda])
        for cuda in sorted(too_old, key=version_key, reverse=True)
    )
    can_run = sorted({cuda for _, cuda in admissible}, key=version_key)
    return Lines(frozenset(admissible), rejected, _driver_reason(facts, catalog, options, gpus, can_run))


def _driver_reason(
    facts: HostFacts, catalog: Catalog, options: Request, gpus: tuple[GpuFacts, ...], can_run: list[str]
) -> str | None:
    if gpus and facts.driver_assumed:
        return wording.DRIVER_ASSUMED
    if not gpus or facts.driver is None:
        return None
    label = f"driver {facts.driver.version or 'of unknown version'}" + (
        f" (CUDA {facts.driver.cuda})" if facts.driver.cuda else ""
    )
    rule = f" ({TEGRA_DRIVER_RULE})" if judged_by_cuda_version(gpus, facts.driver, catalog) else ""
    if can_run:
        minor = None if rule else minor_version_note(catalog, can_run, facts.driver.version)
        return wording.driver_can_run(label, can_run, rule, minor)
    undriven = undriven_gpus(facts.driver, gpus, catalog)
    if undriven:  # it runs no line because it drives no such GPU: the lines are not what stops it
        return "; ".join(undriven)
    if tegra_cuda_unknown(gpus, facts.driver, catalog):
        return wording.jetson_lines_unknown(label)
    pinned = bool(options.cuda or options.torch or options.branch or options.python)
    return wording.driver_runs_none(label, pinned, rule)


def isas(facts: HostFacts, catalog: Catalog) -> tuple[frozenset[str], tuple[Rejection, ...]]:
    """The instruction sets this CPU can run, and those it cannot with the flags it lacks."""
    usable: set[str] = set()
    rejected: list[Rejection] = []
    if facts.os == "darwin":
        return frozenset(), ()
    for isa in catalog.isas.values():
        if isa.platform != facts.arch:
            continue
        missing = missing_flags(isa.requires, facts.cpu.flags)
        if missing:
            rejected.append(rejection(Kind.CPU_LACKS_FLAGS, "cpu_isa", isa.name, missing=tuple(missing)))
        else:
            usable.add(isa.name)
    return frozenset(usable), tuple(rejected)


def variants(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    left: Sequence[Branch],
    lines: Lines,
    usable: frozenset[str],
    gpus: tuple[GpuFacts, ...],
) -> tuple[Variant, ...]:
    """Every variant that runs here, best first (compat.why_not has the last word on each)."""
    system = catalog.nix_system(facts.os, facts.arch)
    assert system is not None
    keys = _rank_keys(catalog)
    order = _order(catalog, options.workload)

    def rank(variant: Variant) -> tuple[object, ...]:
        where = (options.workload, variant.branch, variant.package)
        found = keys.get(where)
        if found is None:  # filled as variants are first ranked: a cold start ranks a handful, not the catalog
            found = keys[where] = ranking.key(build_of_variant(catalog, variant), order)
        return found

    # A first cut by platform, GPU architecture, instruction set and admissible line; why_not then judges each
    # survivor, so the cut may only ever let too much through, never too little. With GPUs to serve, a CPU-only
    # build is never a candidate (why_not: it would leave them unused).
    # The newest line the driver admits: CUDA 13.2's unification only ever admits more with a newer toolkit.
    newest = max((cuda for _, cuda in lines.admissible), key=version_key, default=None)
    darwin = facts.os == "darwin"
    runnable = {name for name in catalog.gpu_archs if runs_on_all(catalog, name, gpus, newest)} if gpus else set()
    looked_at: tuple[str | None, ...] = (MPS,) if darwin else tuple(sorted(runnable)) if gpus else (None,)
    found = (
        v
        for branch in left
        for arch in looked_at
        for v in branch.variants_for(system, arch)
        if (v.cpu_isa is None or v.cpu_isa in usable)
        and (v.cuda is None or (branch.name, v.cuda) in lines.admissible)
        and not why_not(v, facts, catalog, gpus)
    )
    return tuple(sorted(found, key=rank))


@per_object
def _order(catalog: Catalog, workload: str) -> ranking.Order:
    """What the one ranking (rules/ranking.py) prefers for this catalog and workload: its Pythons, the workload's
    instruction sets."""
    pythons = tuple(cpython_tag(python) for python in catalog.python_preference)
    isas = {name: rank for rank, name in enumerate(catalog.workloads[workload].isa_preference)}
    return ranking.Order(pythons=pythons, isas=isas)


@per_object
def _rank_keys(catalog: Catalog) -> dict[tuple[str, str, str], tuple[object, ...]]:
    """Each variant's place in the ranking by (workload, branch, package), as decisions first rank it: a cluster's
    machines rank the same variants again."""
    return {}


def ranked_isas(catalog: Catalog, options: Request, usable: Iterable[str]) -> list[str]:
    """The usable instruction sets in the workload's order."""
    wanted = set(usable)
    return [name for name in catalog.workloads[options.workload].isa_preference if name in wanted]
