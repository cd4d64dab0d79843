"""A source of prebuilt builds' decision (pipeline "builds", whichever source publishes them): facts, its catalog
and a request's pins in, one frozen PrebuiltDecision out.

The order, each step among what the step before left (rules/prebuilt_stages.py judges each build):
platform and Python -> the CUDA lines the driver runs -> every targeted GPU covered -> the newest torch -> its newest
CUDA line -> with --with, the first such wheel whose release has every companion paired. The CPU's instruction set
chooses nothing (ATen dispatches at run time): the dispatch level it will get is said. Hardware facts (GPU
architectures, Tegra, driver support, instruction sets) are the same ones every source is judged against.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant._base.versions import version_key
from pickvariant.machine.environment import PythonEnvironment
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules import compat, stages, wording
from pickvariant.rules.decision import Decision, Kind, PrebuiltDecision, Rejection
from pickvariant.rules.installed import installed_finding
from pickvariant.rules.prebuilt_stages import alternatives, check_pins, coverage, judge, newest_first
from pickvariant.rules.wording import prebuilt as said
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.prebuilt import OTHER_STACKS, PLATFORMS, PairedRelease, PrebuiltCatalog
from pickvariant.sources.runs_on import Build

# ROCm and XPU builds are kept in the catalog, not judged: named only to a machine with such a GPU (machine/othergpu.py),
# where they tell what PyTorch publishes for it.
_OTHER_VENDOR_PREFIXES = {vendor: prefix for vendor, (prefix, _) in OTHER_STACKS.items()}
_PYTHON_PIN = re.compile(r"3\.[0-9]{1,2}")
# The rejections a person is nearest to fixing, first: what the short answer names when nothing fits.
_NEAREST_KINDS = (Kind.NO_SET, Kind.DRIVER, Kind.NOT_BUILT, Kind.NO_KERNELS, Kind.PINNED_OUT)


def pick_prebuilt(
    facts: HostFacts,
    hardware: Hardware,
    wheels: PrebuiltCatalog,
    options: Request,
    environment: PythonEnvironment | None,
    index_root: str,
    pypi_first: bool = False,
    with_hints: bool = True,
) -> PrebuiltDecision:
    """The wheel for this machine. `pypi_first` (no wheel index was named): PyPI's own build of a release comes
    before its other builds that serve, and is installed from PyPI with no index URL. `with_hints`: where none
    runs, decide again with what would help (a hint's own decision is made without)."""

    def again(driver: DriverFacts) -> PrebuiltDecision:
        changed = replace(facts, driver=driver)
        return pick_prebuilt(changed, hardware, wheels, options, environment, index_root, pypi_first, with_hints=False)

    facts, driver_said = compat.driver_as_judged(facts)
    platform = PLATFORMS.get((facts.os, facts.arch))
    builds = wheels.for_platform(platform) if platform else ()
    if not builds:
        platforms = sorted({build.platform for build in wheels.builds})
        return Decision(
            platform=platform, reasons=(said.no_platform_wheels(facts.os, facts.arch, platforms, wheels.publisher),)
        )
    assert platform is not None
    platform_said = said.platform_has_wheels(facts.os, facts.arch, platform, wheels.publisher)
    other_gpu = _other_gpu_said(wheels, platform, index_root)
    seen = stages.machine(facts, options, hardware, (platform_said, said.mps_wheel()), other_gpu)
    if seen.hints:  # NVML could not say whether there are GPUs: no wheel can be chosen
        return Decision(platform=platform, reasons=seen.reasons, hints=seen.hints)
    check_pins(options, builds, wheels)
    gpus = seen.gpus
    tag, version, python_said = _python(options, environment)
    verdicts = {build: judge(build, facts, hardware, options, gpus, tag) for build in builds}
    candidates = newest_first((build for build, verdict in verdicts.items() if verdict is None), pypi_first)
    chosen, pairs, passed_over = _with_companions(candidates, wheels, options.with_projects, pypi_first)
    machine = (*seen.reasons, *((wording.DRIVER_ASSUMED,) if gpus and facts.driver_assumed else ()))
    decision: PrebuiltDecision = Decision(
        platform=platform,
        python=version,
        python_tag=tag,
        targets=gpus,
        candidates=tuple(candidates),
        dispatch=compat.dispatch_level(hardware, facts) if facts.cpu.source != "--platform" else None,
        rejected=alternatives(builds, verdicts, candidates, chosen, passed_over),
        # The platform's sentence and each GPU's: facts the short answer shows as such, as the recipes' (rules/pick.py);
        # what the answer does with the machine (no NVIDIA GPU, an AMD or Intel GPU, hidden GPUs) is said there too.
        machine_said=1 + len(gpus),
    )
    decision = _with_installed(decision, environment, builds, hardware, chosen, facts)
    first: tuple[str, ...] = (*machine, *driver_said, *python_said, *said.refreshed(wheels.refreshed))
    if chosen is None:
        return _nothing_fits(
            decision, facts, hardware, wheels, first, verdicts, passed_over, again if with_hints else None
        )
    root = None if pypi_first and chosen.default_index else index_root  # None: PyPI's own build, from PyPI
    return _chosen(decision, facts, hardware, wheels, options, first, chosen, pairs, root)


def _python(options: Request, environment: PythonEnvironment | None) -> tuple[str | None, str | None, tuple[str, ...]]:
    """The CPython tag wheels must carry, its version, and what said so: a pin, else the environment's interpreter,
    else none (a stated machine, answered for any Python)."""
    if options.python:
        if not _PYTHON_PIN.fullmatch(options.python):
            raise BadInput(f"{options.python_given_as} {options.python!r:.40}: not a Python version; write it as 3.12")
        tag = "cp" + options.python.replace(".", "")
        return tag, options.python, (said.python_target(options.python, tag, f"named by {options.python_given_as}"),)
    if environment is not None:
        where = f"of {environment.interpreter} ({environment.given_as})"
        return environment.tag, environment.minor, (said.python_target(environment.version, environment.tag, where),)
    return None, None, ()


def _other_gpu_said(wheels: PrebuiltCatalog, platform: str, index_root: str) -> Callable[[str, str], str]:
    """What the answer says of an AMD or Intel GPU: the newest builds of its stack this platform's catalog names
    (left out, not judged), where it names any, and the index the newest is installed from."""

    def said_of(described: str, vendor: str) -> str:
        prefix = _OTHER_VENDOR_PREFIXES[vendor]
        rows = [row for row in wheels.left_out_for(platform) if row.variant.startswith(prefix)]
        if not rows:
            return wording.other_gpu(described, vendor, None)
        newest = max((row.torch for row in rows), key=version_key)
        variants = list(dict.fromkeys(row.variant for row in rows if row.torch == newest))
        # The newest stack of that release: rocm7.2 over rocm7.1 (xpu has no number).
        index = max(variants, key=lambda variant: version_key(variant.removeprefix(prefix) or "0"))
        published = f"torch {newest} " + " and ".join(variants)
        return wording.other_gpu(described, vendor, published, f"{index_root}/{index}")

    return said_of


def _with_companions(
    candidates: list[Build], wheels: PrebuiltCatalog, projects: tuple[str, ...], from_pypi: bool
) -> tuple[Build | None, tuple[PairedRelease, ...], dict[Build, tuple[str, ...]]]:
    """The first candidate whose torch release has every companion asked for paired, and those passed over (with
    the projects each lacked). A pairing true of PyPI's builds only counts for PyPI's build installed from PyPI."""
    passed_over: dict[Build, tuple[str, ...]] = {}
    for build in candidates:
        pairs = {project: wheels.companion(build.torch, project) for project in projects}
        pairs = {
            project: pair if pair is None or not pair.pypi_only or (from_pypi and build.default_index) else None
            for project, pair in pairs.items()
        }
        missing = tuple(project for project, pair in pairs.items() if pair is None)
        if not missing:
            return build, tuple(pair for pair in pairs.values() if pair is not None), passed_over
        passed_over[build] = missing
    return None, (), passed_over


def _with_installed(
    decision: PrebuiltDecision,
    environment: PythonEnvironment | None,
    builds: tuple[Build, ...],
    hardware: Hardware,
    chosen: Build | None,
    facts: HostFacts,
) -> PrebuiltDecision:
    if environment is None:
        return decision
    version, fits, sentence = installed_finding(environment, builds, decision.targets, hardware, chosen, facts)
    return replace(decision, installed=version, installed_fits=fits, installed_said=sentence)


def _chosen(
    decision: PrebuiltDecision,
    facts: HostFacts,
    hardware: Hardware,
    wheels: PrebuiltCatalog,
    options: Request,
    found: tuple[str, ...],
    chosen: Build,
    pairs: tuple[PairedRelease, ...],
    index_root: str | None,
) -> PrebuiltDecision:
    index_url = None if index_root is None else f"{index_root}/{chosen.index}"
    pinned = bool(options.torch or options.cuda)
    machine_floor = compat.machine_floor(chosen.cuda_min_driver, decision.targets, hardware)
    tegra = any(hardware.is_tegra(gpu.compute_capability) for gpu in decision.targets)
    if facts.os == "windows" or tegra:  # Linux's dGPU floors number neither Windows nor JetPack drivers
        machine_floor = None
    floor = None if machine_floor is None else said.driver_floor(machine_floor)
    needed = said.driver_needed(floor, chosen.cuda, tegra) if chosen.cuda else None
    decision = replace(decision, min_driver=None if machine_floor is None else str(machine_floor), driver_needed=needed)
    reasons = [*found, said.chosen(chosen.label, index_url, chosen.cuda, needed, pinned)]
    if decision.python_tag is None:
        newest = next((tag for tag in reversed(chosen.python) if not tag.endswith("t")), chosen.python[-1])
        reasons.append(said.python_unstated(newest))
        decision = replace(decision, python_tag=newest, python=f"{newest[2]}.{newest[3:].rstrip('t')}")
    reasons += _coverage_reasons(chosen, decision.targets, hardware)
    reasons += stages.unserved(chosen.label, chosen, facts, decision.targets, hardware)
    if chosen.default_index and index_url is not None:
        reasons.append(said.pypi_same(chosen.torch, chosen.platform))
    reasons.append(said.dispatch(decision.dispatch, facts.arch, facts.cpu.source != "--platform"))
    reasons += [said.companion_paired(p, chosen.torch, index_url is None, wheels.sources) for p in pairs]
    left_out = _left_out_newer(wheels, chosen.platform, chosen.torch, facts)
    reasons += [said.left_out_newer(left_out)] if left_out else []
    decision = replace(decision, left_out=tuple(said.left_out_row(*row) for row in left_out))
    if decision.installed_said:
        kept = decision.installed_fits == "yes" and decision.installed != chosen.label
        reasons.append(said.installed_kept(decision.installed_said) if kept else decision.installed_said)
    return replace(
        decision,
        build=chosen,
        companions=pairs,
        index_url=index_url,
        from_pypi=index_url is None,
        reasons=tuple(reasons),
    )


def _coverage_reasons(build: Build, gpus: tuple[GpuFacts, ...], hardware: Hardware) -> list[str]:
    found = []
    for gpu in dict.fromkeys(gpus):
        how = coverage(build, gpu.compute_capability, hardware)
        assert how is not None  # judge admitted the build
        kind, capability = how
        sentence = said.sass_covers if kind == "sass" else said.ptx_covers
        found.append(sentence(gpu.index, gpu.compute_capability, capability))
        if kind == "sass" and hardware.is_tegra(gpu.compute_capability) and not hardware.is_tegra(capability):
            found[-1] += said.unified(build.cuda or "")
    return found


def _left_out_newer(
    wheels: PrebuiltCatalog, platform: str, torch: str | None, facts: HostFacts
) -> list[tuple[str, str, str]]:
    """The builds of this platform at or after `torch` (every one, where none was chosen) left out of the catalog,
    newest first: (torch, variant, why). ROCm and XPU builds are named only where such a GPU is present, and there
    of every release: the build chosen does not serve that GPU, whatever its release."""
    present = {gpu.vendor for gpu in facts.other_gpus}
    hidden = tuple(prefix for vendor, prefix in _OTHER_VENDOR_PREFIXES.items() if vendor not in present)
    shown = tuple(prefix for vendor, prefix in _OTHER_VENDOR_PREFIXES.items() if vendor in present)
    rows = [
        (row.torch, row.variant, row.why)
        for row in wheels.left_out_for(platform)
        if not row.variant.startswith(hidden)
        and (torch is None or version_key(row.torch) >= version_key(torch) or row.variant.startswith(shown))
    ]
    return sorted(rows, key=lambda row: version_key(row[0]), reverse=True)


def _nothing_fits(
    decision: PrebuiltDecision,
    facts: HostFacts,
    hardware: Hardware,
    wheels: PrebuiltCatalog,
    found: tuple[str, ...],
    verdicts: dict[Build, Rejection | None],
    passed_over: dict[Build, tuple[str, ...]],
    again: Callable[[DriverFacts], PrebuiltDecision] | None,
) -> PrebuiltDecision:
    from pickvariant.rules.prebuilt_hints import hints_for_nothing

    reasons = [*found, *compat.undriven_gpus(facts.driver, decision.targets, hardware)]
    left_out = _left_out_newer(wheels, decision.platform or "", None, facts)
    reasons += [said.left_out_newer(left_out)] if left_out else []
    reasons += _older_than_the_catalog(facts, verdicts)
    decision = replace(decision, left_out=tuple(said.left_out_row(*row) for row in left_out))
    if decision.installed_said:
        reasons.append(decision.installed_said)
    hints = () if again is None else hints_for_nothing(decision, hardware, verdicts, passed_over, facts.driver, again)
    nearest = _nearest(decision.rejected, verdicts)
    if nearest is not None:  # said last: what the one-line error (exit 3) names, with the hints
        reasons.append(said.nothing_fits(wording.choice(nearest), wording.why(nearest)))
    return replace(decision, reasons=tuple(dict.fromkeys(reasons)), hints=hints)


def _older_than_the_catalog(facts: HostFacts, verdicts: dict[Build, Rejection | None]) -> list[str]:
    """Where the driver is older than every CUDA line the catalog holds: the releases before its first (built for
    older CUDA lines) are outside it, not judged, and this is said rather than left unsaid."""
    floors = [build.cuda_min_driver for build in verdicts if build.cuda_min_driver is not None]
    driver = facts.driver.version if facts.driver is not None else None
    if driver is None or not floors or not driver < min(floors):
        return []
    first = min((build.torch for build in verdicts), key=version_key)
    return [said.older_than_the_catalog(str(driver), first, str(min(floors)))]


def _nearest(rejected: Iterable[Rejection], verdicts: dict[Build, Rejection | None]) -> Rejection | None:
    """The index a person is nearest to: by the kind of what refused it (_NEAREST_KINDS), and among those a driver
    refused, the one needing the oldest driver (the smallest update; issue 53), newest first among equals."""
    floors = {
        id(r): b.cuda_min_driver.parts for b, r in verdicts.items() if r is not None and b.cuda_min_driver is not None
    }
    for kind in _NEAREST_KINDS:
        found = [r for r in rejected if r.kind == kind and r.subject[0] == "wheel_variant"]
        if found and kind == Kind.DRIVER:
            return min(found, key=lambda r: floors.get(id(r), (10**9,)))
        if found:
            return found[0]
    return None
