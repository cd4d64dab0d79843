"""The selection rules: a pure function from facts, catalog and a request's pins to a decision.

Nothing here looks at the machine. Every step records why; every alternative that
was turned down records why not (rules/explain.py words them). Whether one variant can
run here is asked of compat.why_not alone; this module only ranks what it admits:

1. the newest PyTorch;
2. within it, the newest CUDA line the driver can run that has a fitting variant;
3. the preferred Python (`--python-version` restricts; otherwise 3.13 > 3.12 > 3.11);
4. the highest GPU architecture whose kernels run on every targeted GPU;
5. the CPU instruction set the workload ranks first among those the CPU can run.

Branches aligned with another project (vLLM) are considered only when named with --branch.
"""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant._base.versions import ComputeCapability, release_matches, version_key
from pickvariant.catalog.model import MPS, Branch, Catalog, Companion, Variant
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts, cuda_visible_count
from pickvariant.rules import explain
from pickvariant.rules.compat import (
    TEGRA_DRIVER_RULE,
    driver_rejection,
    judged_by_cuda_version,
    minor_version_note,
    missing_flags,
    runs_on_all,
    why_not,
)
from pickvariant.rules.decision import Decision, Kind, Rejection, dedupe

_NO_GPU = ComputeCapability(0, 0)


def _newest_first(release: str) -> tuple[int, ...]:
    """A release's sort key negated, so that sorted() puts the newest first."""
    return tuple(-part for part in version_key(release))


def decide(facts: HostFacts, catalog: Catalog, options: Request = Request(), with_hints: bool = True) -> Decision:
    """The variant for these facts, with reasons, rejections and (with_hints) what would help when there is none."""
    return _decide(facts, catalog, options, with_hints)


def _decide(facts: HostFacts, catalog: Catalog, options: Request, with_hints: bool) -> Decision:
    if options.workload not in catalog.workloads:
        raise BadInput(f"unknown workload {options.workload!r}; choose one of {', '.join(catalog.workloads)}")
    reasons: list[str] = []
    rejected: list[Rejection] = []

    # 1. Platform: the Nix system this machine runs, and whether anything is built for it.
    system = catalog.nix_system(facts.os, facts.arch)
    built_for = list(catalog.built_for)
    if system is None or system not in built_for:
        return Decision(None, None, (explain.unsupported_platform(facts, built_for),), (), ())
    reasons.append(f"platform {facts.os}/{facts.arch} ({system}) has builds")
    darwin = facts.os == "darwin"

    if facts.gpu_inconclusive and not darwin:
        return Decision(
            None,
            None,
            (
                *tuple(reasons),
                "GPU detection was inconclusive, so no variant can be shown to have kernels for this machine's GPUs",
            ),
            (),
            ("describe the GPUs with --gpu CC (and --driver VERSION), or pass --no-gpu for a CPU-only build",),
        )

    # 2. Which GPUs the variant must run on.
    targets = () if darwin else _targets(facts, options)
    if darwin:
        reasons.append("Apple Silicon: the MPS build runs on the Apple GPU through Metal")
        if facts.gpus:
            reasons.append("the stated NVIDIA GPUs change nothing on macOS: no build there uses CUDA")
    for gpu in targets:
        kind = "integrated Tegra" if catalog.is_tegra(gpu.compute_capability) else "desktop"
        reasons.append(f"GPU {gpu.index}: {gpu.name}, compute capability {gpu.compute_capability} ({kind})")
    if not targets and not darwin:
        reasons.append("no GPU: choosing among CPU-only builds")
    hidden = _hidden_by_cuda_visible_devices(facts) if not darwin else None
    if hidden:
        reasons.append(hidden)

    # 3. Branches by the pins, then CUDA lines by the pins and the driver.
    branches, turned_down = catalog.derive(
        ("pinned branches", options.branch, options.torch, options.python, "vllm" in options.with_projects),
        lambda: _pinned_branches(catalog, options),
    )
    rejected.extend(turned_down)
    # Without GPUs to serve only builds without CUDA are looked at: no line needs judging (a --cuda pin is still checked).
    lines = (
        _admissible_lines(facts, catalog, options, branches, targets, rejected, reasons)
        if targets or options.cuda
        else set()
    )

    # 4. CPU instruction sets.
    workload = catalog.workloads[options.workload]
    usable_isas: set[str] = set()
    for isa in catalog.isas.values():
        if isa.platform != facts.arch or darwin:
            continue
        missing = missing_flags(isa.requires, facts.cpu.flags)
        if missing:
            rejected.append(
                Rejection(
                    f"CPU instruction set {isa.name}",
                    f"this CPU lacks {', '.join(missing)}: the build would crash with an illegal instruction",
                    Kind.CPU_LACKS_FLAGS,
                )
            )
        else:
            usable_isas.add(isa.name)

    # 5. Whole variants: a variant counts only if every part of it fits (compat.why_not has the last word).
    isa_rank = catalog.derive(
        ("isa rank", workload.name), lambda: {name: rank for rank, name in enumerate(workload.isa_preference)}
    )
    static_ranks: dict[tuple[str, str], tuple[tuple[object, ...], tuple[str, str]]] = catalog.derive(
        "static ranks", dict
    )

    def rank(variant: Variant) -> tuple[object, ...]:
        key = (variant.branch, variant.package)
        static = static_ranks.get(key)
        if static is None:  # filled as variants are first ranked: a cold start ranks a handful, not the catalog
            static = static_ranks[key] = _static_rank(catalog, variant)
        before, after = static
        return (before, isa_rank.get(variant.cpu_isa or "", 0), after)

    # The GPU architectures whose kernels run on every target: a set, so each variant costs one lookup.
    runnable_archs = {name for name in catalog.gpu_archs if runs_on_all(catalog, name, targets)} if targets else set()

    # A first cut by platform, GPU architecture, instruction set and admissible line; why_not then
    # judges each survivor, so the cut may only ever let too much through, never too little.
    # With GPUs to serve, a CPU-only build is never a candidate (why_not: it would leave them unused).
    looked_at: tuple[str | None, ...] = (MPS,) if darwin else tuple(sorted(runnable_archs)) if targets else (None,)

    candidates = sorted(
        (
            v
            for branch in branches
            for arch in looked_at
            for v in branch.variants_for(system, arch)
            if (v.cpu_isa is None or v.cpu_isa in usable_isas)
            and (v.cuda is None or (branch.name, v.cuda) in lines)
            and not why_not(v, facts, catalog, targets)
        ),
        key=rank,
    )
    if targets:
        explain.explain_gpu_archs(catalog, targets, rejected, candidates[0].gpu_arch if candidates else None)

    if not candidates:
        return explain.no_variant(
            facts, catalog, options, targets, branches, usable_isas, tuple(reasons), rejected, with_hints, _decide
        )

    chosen = candidates[0]
    companions: tuple[Companion, ...] = ()
    if options.with_projects:
        from pickvariant.rules import pairing  # only a decision with companions reads them

        pick = pairing.pick_set(catalog, candidates, options.with_projects, facts, targets)
        passed_over = {(v.branch, v.package): why for v, why in pick.passed_over}
        rejected.extend(pick.rejected)
        hints = _set_driver_hints(facts, catalog, options, pick.variant, chosen) if with_hints else []
        if pick.variant is None:
            lacking = ", ".join(pick.missing) or ", ".join(options.with_projects)
            axes = [
                f"PyTorch {chosen.torch}",
                f"Python {chosen.python}",
                f"CUDA {chosen.cuda or 'none'}",
                chosen.gpu_arch or "CPU only",
                chosen.cpu_isa,
            ]
            # A variant with every recipe whose set would still hold two PyTorch builds: the cause that stands.
            two = next(((v, said) for v, said in pick.passed_over if said.startswith("with ")), None)
            if two is None:
                why = (
                    f"no {lacking} recipe is built on the PyTorch of any variant that runs here "
                    f"(the best, {chosen.label}: {', '.join(a for a in axes if a)})"
                )
            else:
                why = f"no set gives one PyTorch here (the best, {two[0].label}: {two[1]})"
            hints.append(f"without --with, PyTorch alone is {chosen.label}")
            return Decision(
                None, None, (*tuple(reasons), why), tuple(dedupe(rejected)), tuple(dict.fromkeys(hints)), targets
            )
        if pick.variant is not chosen:
            reasons.append(
                f"PyTorch alone would be {chosen.label} (PyTorch {chosen.torch}, CUDA {chosen.cuda or 'none'}): "
                f"{passed_over.get((chosen.branch, chosen.package), 'it has no set')}, so the set takes the next that has one"
            )
        chosen, companions, set_shape = pick.variant, pick.companions, pick.shape
        reasons.extend(pick.reasons)
        set_hints = tuple(hints)
    else:
        set_hints, set_shape, passed_over = (), None, {}
    branch = catalog.branch(chosen.branch)
    line = catalog.cuda_line(chosen)
    reasons.append(explain.branch_reason(chosen, branch, line, options))
    explain.explain_other_branches(
        catalog, chosen, branches, candidates, targets, usable_isas, facts, rejected, options.with_projects, passed_over
    )
    if chosen.is_mps:
        reasons.append(f"GPU: Apple MPS (needs macOS {catalog.min_macos} or newer)")
    elif chosen.gpu_arch:
        arch = catalog.gpu_archs[chosen.gpu_arch]
        exact = all(gpu.compute_capability == arch.compute_capability for gpu in targets)
        if exact:
            reasons.append(
                f"GPU architecture {arch.name}: exact match for compute capability {arch.compute_capability} ({arch.description})"
            )
        else:
            reasons.append(
                f"GPU architecture {arch.name}: the highest architecture with a variant whose kernels run on "
                + ", ".join(f"GPU {gpu.index} ({gpu.compute_capability})" for gpu in targets)
            )
        if not chosen.cudnn and "USE_CUDNN" in arch.build_env:
            reasons.append(
                f"built without cuDNN (cuDNN 9.11+ has no kernels for {arch.name}): convolutions use PyTorch's own CUDA kernels"
            )
    if chosen.cpu_isa is not None:
        isa = catalog.isas[chosen.cpu_isa]
        ranked_usable = [name for name in workload.isa_preference if name in usable_isas]
        reasons.append(
            f"CPU instruction set {isa.name}: every required flag is present ({' '.join(isa.requires)}); "
            f"workload {workload.name} ranks {' > '.join(ranked_usable)}"
        )
        for other in ranked_usable:
            if other == chosen.cpu_isa:
                continue
            same = [
                v
                for v in candidates
                if v.cpu_isa == other
                and v.branch == chosen.branch
                and v.gpu_arch == chosen.gpu_arch
                and v.cuda == chosen.cuda
            ]
            if same and (same[0].branch, same[0].package) in passed_over:  # the set could not be on it
                rejected.append(Rejection(same[0].package, passed_over[(same[0].branch, same[0].package)], Kind.NO_SET))
            elif same:
                rejected.append(
                    Rejection(
                        same[0].package,
                        f"fits this machine, but workload {workload.name} prefers {chosen.cpu_isa}",
                        Kind.RANKED_LOWER,
                    )
                )
            else:
                rejected.append(
                    Rejection(
                        f"CPU instruction set {other}",
                        f"fits this CPU, but {chosen.branch} has no {chosen.gpu_arch or 'CPU-only'} variant of it"
                        + (f" on CUDA {chosen.cuda}" if chosen.cuda else ""),
                        Kind.NOT_BUILT,
                    )
                )
    return Decision(
        chosen,
        branch,
        tuple(reasons),
        tuple(dedupe(rejected)),
        set_hints,
        targets,
        line,
        tuple(candidates),
        companions,
        set_shape,
    )


def _set_driver_hints(
    facts: HostFacts, catalog: Catalog, options: Request, got: Variant | None, alone: Variant
) -> list[str]:
    """What a driver upgrade would give the set: "a driver >= X gives PyTorch 2.10.0 with torchvision" (decided again, not guessed)."""
    if (
        facts.driver is None
        or facts.driver_assumed
        or facts.driver.version is None
        or (got is not None and got.torch == alone.torch)
    ):
        return []
    lines = sorted(
        {
            (line.min_driver, line.cuda)
            for branch in catalog.branches
            for line in branch.cuda_lines
            if facts.driver.version < line.min_driver
        },
        key=lambda pair: (pair[0].parts, version_key(pair[1])),
    )
    for min_driver, cuda in lines:
        upgraded = _decide(replace(facts, driver=DriverFacts(min_driver, cuda)), catalog, options, False)
        if upgraded.variant is not None and (
            got is None or version_key(upgraded.variant.torch) > version_key(got.torch)
        ):
            return [
                f"a driver >= {min_driver} gives PyTorch {upgraded.variant.torch} with {', '.join(options.with_projects)} ({upgraded.variant.label})"
            ]
    return []


def _static_rank(catalog: Catalog, variant: Variant) -> tuple[tuple[object, ...], tuple[str, str]]:
    """A variant's rank but for the workload's instruction set order: what comes before it, and after.

    Before: the newest PyTorch, the newest CUDA line, the preferred Python, the highest GPU architecture.
    After: branch and package names, so that the order is total and the answer cannot depend on
    the order variants were looked at."""
    preference = catalog.python_preference
    arch = catalog.gpu_archs.get(variant.gpu_arch) if variant.gpu_arch else None
    capability = arch.compute_capability if arch else _NO_GPU
    before = (
        _newest_first(variant.torch),
        _newest_first(variant.cuda) if variant.cuda else (),
        preference.index(variant.python) if variant.python in preference else len(preference),
        -capability.major,
        -capability.minor,
    )
    return before, (variant.branch, variant.package)


def _admissible_lines(
    facts: HostFacts,
    catalog: Catalog,
    options: Request,
    branches: Sequence[Branch],
    targets: tuple[GpuFacts, ...],
    rejected: list[Rejection],
    reasons: list[str],
) -> set[tuple[str, str]]:
    admissible: set[tuple[str, str]] = set()
    too_old: dict[str, str] = {}
    can_run: set[str] = set()
    for branch in branches:
        for line in branch.cuda_lines:
            if options.cuda and not release_matches(options.cuda, line.cuda, "--cuda"):
                continue
            why = driver_rejection(facts.driver, line, targets, catalog)
            if why:
                too_old[line.cuda] = why
            else:
                admissible.add((branch.name, line.cuda))
                can_run.add(line.cuda)
    for cuda in sorted(too_old, key=version_key, reverse=True):
        rejected.append(Rejection(f"CUDA {cuda} (every branch)", too_old[cuda], Kind.DRIVER))
    if options.cuda:  # a pin that matches nothing is bad input, GPUs or not
        built = sorted({line.cuda for b in branches for line in b.cuda_lines}, key=version_key)
        if not any(release_matches(options.cuda, cuda, "--cuda") for cuda in built):
            raise BadInput(
                f"--cuda {options.cuda}: no branch left by the pins builds it (CUDA lines: {', '.join(built)})"
            )
    if targets and facts.driver_assumed:
        reasons.append("driver: none given, assumed new enough for every CUDA line")
    elif targets and facts.driver is not None:
        label = f"driver {facts.driver.version or 'of unknown version'}" + (
            f" (CUDA {facts.driver.cuda})" if facts.driver.cuda else ""
        )
        rule = f" ({TEGRA_DRIVER_RULE})" if judged_by_cuda_version(targets, facts.driver, catalog) else ""
        if can_run:
            minor = None if rule else minor_version_note(catalog, sorted(can_run), facts.driver.version)
            reasons.append(
                f"{label} can run CUDA {', '.join(sorted(can_run, key=version_key))}{rule}"
                + (f" ({minor})" if minor else "")
            )
        else:
            reasons.append(
                f"{label} can run none of the CUDA lines {'the pins leave' if options.cuda or options.torch or options.branch or options.python else 'of the catalog'}{rule}"
            )
    return admissible


def _targets(facts: HostFacts, options: Request) -> tuple[GpuFacts, ...]:
    if options.gpu_index is None:
        return facts.gpus
    for gpu in facts.gpus:
        if gpu.index == options.gpu_index:
            return (gpu,)
    present = ", ".join(str(gpu.index) for gpu in facts.gpus) or "none"
    raise BadInput(f"--gpu-index {options.gpu_index}: no such GPU (GPU indices present: {present})")


def _hidden_by_cuda_visible_devices(facts: HostFacts) -> str | None:
    # A build that covers every GPU stays right when a job is given other GPUs later,
    # so the variable is explained, not obeyed.
    value = facts.cuda_visible_devices
    if value is None or not facts.gpus:
        return None
    visible = cuda_visible_count(value, len(facts.gpus))
    if visible >= len(facts.gpus):
        return None
    if len(facts.gpus) == 1:
        return f"CUDA_VISIBLE_DEVICES={value!r} hides the GPU from CUDA programs; the choice still covers it, so it stays right when the variable changes"
    return (
        f"CUDA_VISIBLE_DEVICES={value!r} lets CUDA programs see {visible} of the {len(facts.gpus)} GPUs; "
        "the choice still covers all of them, so it stays right when the variable changes (--gpu-index N decides for one GPU)"
    )


def _pinned_branches(catalog: Catalog, options: Request) -> tuple[tuple[Branch, ...], tuple[Rejection, ...]]:
    """The branches the pins (--branch, --torch, --python-version) leave, and why each other one is out."""
    rejected: list[Rejection] = []
    if options.branch is not None:
        named = catalog.branch(options.branch)
        for branch in catalog.branches:
            if branch.name != named.name:
                rejected.append(Rejection(f"branch {branch.name}", f"--branch {named.name} was named", Kind.PINNED_OUT))
        candidates = [named]
    else:
        candidates = []
        for branch in catalog.branches:
            if branch.aligned_with and not (
                branch.aligned_with.startswith("vllm ") and "vllm" in options.with_projects
            ):
                rejected.append(
                    Rejection(
                        f"branch {branch.name}",
                        f"aligned with {branch.aligned_with}: chosen only when named with --branch (or --with vllm)",
                        Kind.ALIGNED,
                    )
                )
            else:
                candidates.append(branch)
    branches = []
    for branch in candidates:
        if options.torch and not release_matches(options.torch, branch.torch, "--torch"):
            rejected.append(
                Rejection(
                    f"branch {branch.name}",
                    f"ships PyTorch {branch.torch}, not the pinned --torch {options.torch}",
                    Kind.PINNED_OUT,
                )
            )
        elif options.python and not release_matches(options.python, branch.python, options.python_given_as):
            rejected.append(
                Rejection(
                    f"branch {branch.name}",
                    f"builds Python {branch.python}, not the requested {options.python}",
                    Kind.PINNED_OUT,
                )
            )
        else:
            branches.append(branch)
    if not branches:
        known = "; ".join(
            f"{b.name}: PyTorch {b.torch}, Python {b.python}"
            for b in catalog.branches
            if b.aligned_with is None or options.branch
        )
        pins = ", ".join(
            f"{flag} {value}"
            for flag, value in (
                ("--branch", options.branch),
                ("--torch", options.torch),
                (options.python_given_as, options.python),
            )
            if value
        )
        raise BadInput(f"no branch matches {pins}; the catalog has {known}")
    return tuple(branches), tuple(rejected)
