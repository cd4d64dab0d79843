"""The stages of a catalog of prebuilt builds (pipeline "prebuilt": PyTorch's wheels, or any source registered
with one): each build judged against the machine, and the alternatives the choice passed over.

A build is judged in the order a person would check it: the pins (--torch, --cuda), the Python tag, then what the one
predicate every source's builds are held to finds (rules/compat.py): a CUDA build where no GPU is to be served or a
CPU build where GPUs are, every targeted GPU's kernels (SASS, else PTX through the driver's JIT), the driver. The
first finding is the build's rejection, typed; the words are rules/wording/'s, in one table with every source's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from pickvariant._base.errors import BadInput
from pickvariant._base.request import Request
from pickvariant._base.versions import cpython_tag, release_matches, version_key
from pickvariant.machine.environment import PythonEnvironment
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import GpuFacts
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import compat, pins, ranking, wording
from pickvariant.rules.decision import Kind, Rejection, rejection
from pickvariant.rules.wording import prebuilt as said
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.nouns import Nouns
from pickvariant.sources.prebuilt import PrebuiltCatalog
from pickvariant.sources.runs_on import Build


def check_pins(options: Request, builds: Sequence[Build], catalog: PrebuiltCatalog) -> None:
    """The pins a source of prebuilt builds cannot take, or that match no build of this platform (`builds`; the
    catalog's builds of all platforms say whether a release is outside the catalog or only not built here):
    BadInput naming the flag, in the words of the catalog's publisher."""
    publisher, every = catalog.publisher, catalog.builds
    if options.branch:
        raise BadInput(f"--branch names a branch of the build repository; {publisher}'s wheels have none (pin --torch)")
    if options.build:
        raise BadInput(f"--build builds a set from recipes; {publisher}'s wheels are installed as published")
    paired = tuple(dict.fromkeys(project for pairs in catalog.companions.values() for project in pairs))
    for project in options.with_projects:
        if project not in paired:
            pairs = f"{' and '.join(paired)} with torch, not {project}" if paired else "no companion with torch"
            raise BadInput(f"--with {project}: {publisher}'s indexes pair {pairs}")
    if options.torch and not any(release_matches(options.torch, b.torch, "--torch") for b in builds):
        raise BadInput(_torch_pin_refused(options.torch, builds, every or builds))
    if options.cuda and not any(b.cuda and release_matches(options.cuda, b.cuda, "--cuda") for b in builds):
        lines = sorted({b.cuda for b in builds if b.cuda}, key=version_key)
        raise BadInput(f"--cuda {options.cuda}: no wheel of it for this platform (CUDA lines: {', '.join(lines)})")


def _torch_pin_refused(pin: str, builds: Sequence[Build], every: Sequence[Build]) -> str:
    """Why --torch matches no build here: a release outside what the catalog judges (older than its first, newer
    than its newest), or one it judges for other platforms only. Never "no wheel of it": PyTorch may well have one."""
    releases = sorted({b.torch for b in builds}, key=version_key)
    judged = sorted({b.torch for b in every}, key=version_key)
    if any(release_matches(pin, release, "--torch") for release in judged):
        return (
            f"--torch {pin}: no wheel of it for this platform is in the catalog (releases here: {', '.join(releases)})"
        )
    newer = version_key(pin) > version_key(judged[-1])
    if newer:
        where = f"the newest release the wheel catalog judges is {judged[-1]}"
    elif version_key(pin) < version_key(judged[0]):
        where = f"the wheel catalog starts at {judged[0]}"
    else:
        where = "the wheel catalog holds no such release between those it judges"
    refresh = "; `pickvariant catalog wheels --refresh` reads newer releases from their wheels" if newer else ""
    return (
        f"--torch {pin}: not judged: {where}, so whether its wheels run here is not known to pickvariant (releases "
        f"judged here: {', '.join(releases)}){refresh}"
    )


def judge(
    build: Build,
    facts: HostFacts,
    hardware: Hardware,
    options: Request,
    gpus: tuple[GpuFacts, ...],
    python_tag: str | None,
    others: tuple[OtherGpu, ...] = (),
) -> Rejection | None:
    """The first reason `build` cannot be the answer here, typed; None where it runs. Past the pins and the Python
    tag, what runs here is the one predicate's (rules/compat.py) finding."""
    subject, example = build.index, build.label
    if options.torch and pins.torch_pinned_out(options.torch, build.torch):
        return rejection(
            Kind.PINNED_OUT, "wheel_variant", subject, cause="wheel_torch", example=example, pin=options.torch
        )
    if options.cuda and pins.cuda_pinned_out(options.cuda, build.cuda):
        shipped = f"CUDA {build.cuda}"
        return rejection(
            Kind.PINNED_OUT,
            "wheel_variant",
            subject,
            cause="wheel_cuda",
            example=example,
            shipped=shipped,
            pin=options.cuda,
        )
    if python_tag is not None and python_tag not in build.python:
        tags = ", ".join(build.python)
        return rejection(
            Kind.NOT_BUILT, "wheel_variant", subject, cause="python_tag", example=example, tag=python_tag, tags=tags
        )
    found = compat.first_refusal(build, facts, hardware, gpus, others)
    return None if found is None else _refused(build, found, others)


def _refused(build: Build, found: compat.Refusal, others: tuple[OtherGpu, ...]) -> Rejection:
    subject, example = build.index, build.label
    if found.what == compat.NO_GPU:
        cause = f"no_gpu_{build.family}" if build.family != "cuda" else "no_gpu_served" if others else "no_gpu"
        return rejection(Kind.NOT_BUILT, "wheel_variant", subject, cause=cause, example=example)
    if found.what == compat.GPUS_UNUSED:
        return rejection(Kind.NOT_BUILT, "wheel_variant", subject, cause="gpus_unused", example=example)
    if found.what == compat.UNJUDGED:
        return rejection(Kind.NOT_BUILT, "wheel_variant", subject, cause="unjudged", example=example)
    if found.what == compat.KERNELS and found.other is not None:
        return rejection(
            Kind.NO_KERNELS, "wheel_variant", subject, cause="wheel_other", example=example, refusal=found.detail[0]
        )
    if found.what == compat.KERNELS:
        assert found.gpu is not None
        return rejection(
            Kind.NO_KERNELS,
            "wheel_variant",
            subject,
            cause="wheel",
            example=example,
            sass=", ".join(str(c) for c in build.sass),
            ptx=", ".join(str(c) for c in build.ptx),
            ptx_known="yes" if build.ptx_known else "no",
            gpu=str(found.gpu.index),
            capability=str(found.gpu.compute_capability),
        )
    # A wheel is judged among its own platform's and requires no instruction set: the driver is what is left.
    assert found.what == compat.DRIVER, found.what
    return rejection(Kind.DRIVER, "wheel_variant", subject, cause="wheel", example=example, refusal=found.detail[0])


def newest_first(builds: Iterable[Build], pypi_first: bool = False) -> list[Build]:
    """The one ranking (rules/ranking.py): newest torch first, then the newest CUDA line, CPU builds last; with
    `pypi_first`, PyPI's own build of each release before its other builds (the simplest command that serves: no
    index URL)."""
    return ranking.ranked(builds, ranking.Order(default_index_first=pypi_first))


def alternatives(
    builds: Sequence[Build],
    verdicts: Mapping[Build, Rejection | None],
    candidates: Sequence[Build],
    chosen: Build | None,
    passed_over: Mapping[Build, tuple[str, ...]],
    short_of_python: Mapping[Build, str] | None,
    nouns: Nouns,
) -> tuple[Rejection, ...]:
    """Why each other index variant and each other torch release lost (to `chosen`, or to nothing fitting);
    `short_of_python`: the builds passed over only because a companion has no wheel for the Python stated; `nouns`:
    the catalog's, in which a release's refusals are said."""
    short = short_of_python or {}
    ordered = newest_first(builds)
    rejected = [
        _variant_lost(variant, ordered, verdicts, candidates, chosen, passed_over, short)
        for variant in dict.fromkeys(build.index for build in ordered)
        if chosen is None or variant != chosen.index
    ]
    rejected += [
        _release_lost(release, ordered, verdicts, candidates, passed_over, short, nouns)
        for release in dict.fromkeys(build.torch for build in ordered)
        if chosen is None or release != chosen.torch
    ]
    return tuple(rejected)


def _variant_lost(
    variant: str,
    ordered: Sequence[Build],
    verdicts: Mapping[Build, Rejection | None],
    candidates: Sequence[Build],
    chosen: Build | None,
    passed_over: Mapping[Build, tuple[str, ...]],
    short: Mapping[Build, str],
) -> Rejection:
    best = next((build for build in candidates if build.index == variant), None)
    if best is not None and (best in passed_over or chosen is None):
        return _no_set(("wheel_variant", variant), best, passed_over.get(best, ()), short.get(best))
    if best is not None and chosen is not None:
        if best.torch != chosen.torch:
            return rejection(
                Kind.RANKED_LOWER, "wheel_variant", variant, cause="wheel_torch", example=best.label, torch=best.torch
            )
        if best.gpu_code is not None and chosen.gpu_code is not None:
            return rejection(
                Kind.RANKED_LOWER,
                "wheel_variant",
                variant,
                cause="wheel_stack",
                example=best.label,
                stack=best.gpu_code.said,
                preferred=chosen.gpu_code.said,
            )
        return rejection(
            Kind.RANKED_LOWER,
            "wheel_variant",
            variant,
            cause="wheel_cuda",
            example=best.label,
            cuda=best.cuda or "none (CPU)",
            preferred=chosen.cuda or "none",
        )
    own = [build for build in ordered if build.index == variant]
    # Its newest build the pins leave speaks for it; where the pins leave none, its newest.
    speaking = next((b for b in own if (v := verdicts[b]) is not None and v.kind != Kind.PINNED_OUT), own[0])
    refusal = verdicts[speaking]
    assert refusal is not None
    return refusal


def _release_lost(
    release: str,
    ordered: Sequence[Build],
    verdicts: Mapping[Build, Rejection | None],
    candidates: Sequence[Build],
    passed_over: Mapping[Build, tuple[str, ...]],
    short: Mapping[Build, str],
    nouns: Nouns,
) -> Rejection:
    best = next((build for build in candidates if build.torch == release), None)
    if best is not None and best in passed_over:
        return _no_set(("torch_release", release), best, passed_over[best], short.get(best))
    if best is not None:
        return rejection(
            Kind.RANKED_LOWER, "torch_release", release, cause="wheel_torch", example=best.label, torch=release
        )
    refusals = "; ".join(
        wording.why(verdict, nouns) for b in ordered if b.torch == release and (verdict := verdicts[b])
    )
    return rejection(Kind.NOT_BUILT, "torch_release", release, cause="release", refusals=refusals)


def _no_set(subject: tuple[str, str], best: Build, missing: tuple[str, ...], python_tag: str | None) -> Rejection:
    """The set refused on the build torch alone would get: no pairing published, or (`python_tag`) the pairing has
    no wheel for the Python stated."""
    if python_tag is not None:
        return rejection(
            Kind.NO_SET,
            subject[0],
            subject[1],
            cause="wheel_python",
            example=best.label,
            projects=missing,
            torch=best.torch,
            tag=python_tag,
        )
    return rejection(
        Kind.NO_SET, subject[0], subject[1], cause="wheel", example=best.label, projects=missing, torch=best.torch
    )


_PYTHON_PIN = re.compile(r"3\.[0-9]{1,2}t?")  # 3.13t: a free-threaded CPython (cp313t)


def python_target(
    options: Request, environment: PythonEnvironment | None
) -> tuple[str | None, str | None, tuple[str, ...]]:
    """The CPython tag wheels must carry, its version, and what said so: a pin, else the environment's interpreter,
    else none (a stated machine, answered for any Python)."""
    if options.python:
        if not _PYTHON_PIN.fullmatch(options.python):
            raise BadInput(
                f"{options.python_given_as} {options.python!r:.40}: not a Python version; write it as 3.12, or 3.13t "
                "for a free-threaded one"
            )
        tag = cpython_tag(options.python)
        return tag, options.python, (said.python_target(options.python, tag, f"named by {options.python_given_as}"),)
    if environment is not None:
        where = f"of {environment.interpreter} ({environment.given_as})"
        return environment.tag, environment.minor, (said.python_target(environment.version, environment.tag, where),)
    return None, None, ()
