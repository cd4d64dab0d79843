"""A catalog of prebuilt builds' walk (rules/pick.py's Walk; whichever source publishes them): facts, its catalog
and a request's pins in, through the one pick, one frozen PrebuiltDecision out.

The order, each step among what the step before left (rules/prebuilt_stages.py judges each build):
platform and Python -> the CUDA lines the driver runs -> every targeted GPU covered -> the newest torch -> its newest
CUDA line -> with --with, the first such wheel whose release has every companion paired. The CPU's instruction set
chooses nothing (ATen dispatches at run time): the dispatch level it will get is said. Hardware facts (GPU
architectures, Tegra, driver support, instruction sets) are the same ones every source is judged against.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request
from pickvariant._base.versions import version_key
from pickvariant.machine.environment import PythonEnvironment
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.machine.othergpu import OtherGpu
from pickvariant.rules import compat, families, stages, wording
from pickvariant.rules.decision import Decision, PrebuiltDecision, PrebuiltDetail, Rejection
from pickvariant.rules.installed import installed_finding
from pickvariant.rules.pick import pick
from pickvariant.rules.prebuilt_companions import (
    lacking_python,
    limited_by_companions,
    set_python,
    short_of_python,
    with_companions,
)
from pickvariant.rules.prebuilt_nearest import nearest_refused, older_than_the_catalog
from pickvariant.rules.prebuilt_stages import alternatives, check_pins, judge, newest_first, python_target
from pickvariant.rules.wording import families as families_said
from pickvariant.rules.wording import prebuilt as said
from pickvariant.sources.hardware import Hardware
from pickvariant.sources.nouns import Nouns
from pickvariant.sources.prebuilt import OTHER_STACKS, PairedRelease, PrebuiltCatalog
from pickvariant.sources.runs_on import Build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pickvariant.rules.pick import Again
    from pickvariant.rules.stages import Machine

# ROCm and XPU builds are kept in the catalog, not judged: named only to a machine with such a GPU (machine/othergpu.py),
# where they tell what PyTorch publishes for it.
_OTHER_VENDOR_PREFIXES = {vendor: prefix for vendor, (prefix, _) in OTHER_STACKS.items()}
# The rejections a person is nearest to fixing, first: what the short answer names when nothing fits.


@keyword_record
class Walked:
    """What the walk of a catalog of prebuilt builds found: the platform's builds, the GPUs to serve, the Python tag
    a build must carry, each build's first rejection (None: it runs here), those that run best first, and the
    sentences so far."""

    platform: str
    builds: tuple[Build, ...]
    gpus: tuple[GpuFacts, ...]
    python: str | None
    python_tag: str | None
    verdicts: dict[Build, Rejection | None]
    candidates: tuple[Build, ...]
    reasons: tuple[str, ...]
    others: tuple[OtherGpu, ...] = ()  # the AMD and Intel GPUs to serve (rules/families.py)


# The companion stage's finding: the releases paired with the build chosen, and the builds passed over for lack of a
# pairing, with the projects each lacked.
if TYPE_CHECKING:
    Paired = tuple[tuple[PairedRelease, ...], dict[Build, tuple[str, ...]]]


class PrebuiltWalk:
    """rules/pick.py's Walk over a catalog of prebuilt builds, for a machine's platform (`platform`: the catalog's
    name for it, None where it has none). `pypi_first` (no index named): PyPI's own build of a release comes before
    its other builds that serve, and is installed from PyPI with no index URL."""

    def __init__(
        self,
        hardware: Hardware,
        wheels: PrebuiltCatalog,
        environment: PythonEnvironment | None,
        index_root: str,
        pypi_first: bool,
        platform: str | None,
    ) -> None:
        self.hardware, self.wheels, self.environment = hardware, wheels, environment
        self.index_root, self.pypi_first = index_root, pypi_first
        self.platform_name = platform
        self.builds = wheels.for_platform(platform) if platform else ()

    def platform(self, facts: HostFacts, options: Request) -> PrebuiltDecision | tuple[str, str]:
        platform, builds, wheels = self.platform_name, self.builds, self.wheels
        if not builds:
            platforms = sorted({build.platform for build in wheels.builds})
            said_none = said.no_platform_wheels(facts.os, facts.arch, platforms, wheels.publisher, wheels.nouns)
            return Decision(detail=PrebuiltDetail(platform=platform), reasons=(said_none,))
        assert platform is not None
        has = said.platform_has_wheels(facts.os, facts.arch, platform, wheels.publisher, wheels.nouns)
        return has, said.mps_wheel(wheels.nouns)

    @functools.cached_property  # the families of GPU code its builds carry: read where an AMD or Intel GPU asks
    def _families(self) -> frozenset[str]:
        return frozenset(build.family for build in self.builds)

    def serves(self, gpu: OtherGpu) -> bool:
        return families.serves(gpu, self._families)

    def other_gpu(self, gpu: OtherGpu) -> str:
        """An AMD or Intel GPU: judged against this platform's builds of its stack where there are any (one it cannot
        serve is said so), else the newest builds of its stack the catalog names (left out, not judged), and the
        index the newest is installed from."""
        described, vendor = gpu.described, gpu.vendor
        if self.serves(gpu):
            return families_said.judged_on(described, OTHER_STACKS[vendor][1])
        if vendor == "intel" and "xpu" in self._families:  # XPU builds here, but not for that device
            return families_said.not_named(described)
        platform = self.platform_name or ""
        prefix = _OTHER_VENDOR_PREFIXES[vendor]
        rows = [row for row in self.wheels.left_out_for(platform) if row.variant.startswith(prefix)]
        if not rows:
            return wording.other_gpu(described, vendor, None, self.wheels.nouns)
        newest = max((row.torch for row in rows), key=version_key)
        variants = list(dict.fromkeys(row.variant for row in rows if row.torch == newest))
        # The newest stack of that release: rocm7.2 over rocm7.1 (xpu has no number).
        index = max(variants, key=lambda variant: version_key(variant.removeprefix(prefix) or "0"))
        published = f"torch {newest} " + " and ".join(variants)
        index_url = self.wheels.url(self.index_root, index)
        return wording.other_gpu(described, vendor, published, self.wheels.nouns, index_url)

    def stopped(self, seen: Machine) -> PrebuiltDecision:
        return Decision(detail=PrebuiltDetail(platform=self.platform_name), reasons=seen.reasons, hints=seen.hints)

    def walk(self, facts: HostFacts, options: Request, seen: Machine, driver_said: tuple[str, ...]) -> Walked:
        platform, builds = self.platform_name, families.for_machine(self.builds, seen.others)
        assert platform is not None
        check_pins(options, builds, self.wheels)
        gpus = seen.gpus
        tag, version, python_said = python_target(options, self.environment)
        verdicts = {build: judge(build, facts, self.hardware, options, gpus, tag, seen.others) for build in builds}
        candidates = newest_first((build for build, verdict in verdicts.items() if verdict is None), self.pypi_first)
        assumed = (wording.DRIVER_ASSUMED,) if gpus and facts.driver_assumed else ()
        reasons = (*seen.reasons, *assumed, *driver_said, *python_said, *said.refreshed(self.wheels.refreshed))
        return Walked(
            platform=platform,
            builds=builds,
            gpus=gpus,
            python=version,
            python_tag=tag,
            verdicts=verdicts,
            candidates=tuple(candidates),
            reasons=reasons,
            others=seen.others,
        )

    def companions(self, facts: HostFacts, options: Request, walked: Walked) -> tuple[Build | None, Paired]:
        chosen, pairs, passed_over = with_companions(
            walked.candidates, self.wheels, options.with_projects, self.pypi_first, walked.python_tag
        )
        return chosen, (pairs, passed_over)

    def nothing(
        self, facts: HostFacts, options: Request, walked: Walked, found: Paired, again: Again | None
    ) -> PrebuiltDecision:
        decision = self._decision(facts, walked, None, found[1])

        def with_driver(driver: DriverFacts) -> PrebuiltDecision:
            assert again is not None
            decided: PrebuiltDecision = again(replace(facts, driver=driver))
            return decided

        def unpinned() -> tuple[str, PrebuiltDecision] | None:
            """The pins --torch and --cuda named, and the decision without them; None where none was given."""
            pins = [
                f"{flag} {value}" for flag, value in (("--torch", options.torch), ("--cuda", options.cuda)) if value
            ]
            if again is None or not pins:
                return None
            decided: PrebuiltDecision = again(facts, replace(options, torch=None, cuda=None))
            return " and ".join(pins), decided

        hardware, wheels, verdicts = self.hardware, self.wheels, walked.verdicts
        told = None if again is None else with_driver
        decision = _nothing_fits(decision, facts, hardware, wheels, walked.reasons, verdicts, found[1], told)
        lacking = lacking_python(found[1], wheels, walked.python_tag)
        without = families.without_code(walked.builds, walked.others)
        decision = replace(decision, reasons=(*decision.reasons, *lacking, *without))
        dropped = unpinned()
        if dropped is not None and dropped[1].build is not None:  # the pin is what left none: said first
            hint = said.without_pins(dropped[0], dropped[1].build.label)
            decision = replace(decision, hints=(hint, *decision.hints))
        return decision

    def chosen(
        self, facts: HostFacts, options: Request, walked: Walked, build: Build, found: Paired, again: Again | None
    ) -> PrebuiltDecision:
        decision = self._decision(facts, walked, build, found[1])
        root = None if self.pypi_first and build.default_index else self.index_root  # None: PyPI's, from PyPI
        found_so_far = (*walked.reasons, *families.chosen_reasons(build, walked.others))
        decision = _chosen(decision, facts, self.hardware, self.wheels, options, found_so_far, build, found[0], root)
        decision = limited_by_companions(decision, build, found[1], self.wheels.nouns)
        if build.gpu_code is not None and found[0]:  # the pairing is PyPI's; the ROCm or XPU index's own unread
            names = tuple(f"{pair.project} {pair.version}" for pair in found[0])
            decision = replace(
                decision, reasons=(*decision.reasons, families_said.companions_inferred(names, build.index))
            )
        lacking = lacking_python(found[1], self.wheels, walked.python_tag)
        return replace(
            decision,
            reasons=(
                *decision.reasons,
                *lacking,
                *families.per_vendor(facts, walked.gpus, walked.others, build, again),
            ),
        )

    def _decision(
        self, facts: HostFacts, walked: Walked, chosen: Build | None, passed_over: dict[Build, tuple[str, ...]]
    ) -> PrebuiltDecision:
        """What every answer holds, a build chosen or none: the platform, the Python, the GPUs, the candidates, why
        each other build lost, the torch already in the environment judged."""
        hardware, candidates = self.hardware, walked.candidates
        dispatch = compat.dispatch_level(hardware, facts) if facts.cpu.source != "--platform" else None
        installed = _installed(
            self.environment, (self.builds, walked.others, self.wheels.nouns), hardware, chosen, facts, walked.gpus
        )
        decision: PrebuiltDecision = Decision(
            detail=PrebuiltDetail(
                platform=walked.platform,
                python=walked.python,
                python_tag=walked.python_tag,
                dispatch=dispatch,
                **installed,
            ),
            targets=walked.gpus,
            candidates=candidates,
            rejected=alternatives(
                walked.builds,
                walked.verdicts,
                candidates,
                chosen,
                passed_over,
                short_of_python(passed_over, self.wheels, walked.python_tag),
                self.wheels.nouns,
            ),
        )
        return decision


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
    """The build of `wheels` for this machine, through the one pick (rules/pick.py). `with_hints`: where none runs,
    decide again with what would help (a hint's own decision is made without)."""
    platform = wheels.platforms.get(
        (facts.os, facts.arch)
    )  # a hint's deciding again changes the driver, not the platform
    walk = PrebuiltWalk(hardware, wheels, environment, index_root, pypi_first, platform)
    decision: PrebuiltDecision = pick(facts, walk, options, with_hints)
    return decision


def _installed(
    environment: PythonEnvironment | None,
    judged_by: tuple[tuple[Build, ...], tuple[OtherGpu, ...], Nouns],
    hardware: Hardware,
    chosen: Build | None,
    facts: HostFacts,
    gpus: tuple[GpuFacts, ...],
) -> dict[str, Any]:
    """The torch already in the environment judged, as PrebuiltDetail's fields (none where no environment is read)."""
    if environment is None:
        return {}
    builds, others, nouns = judged_by  # every build of the platform (a ROCm torch is one on any machine), the GPUs
    version, fits, sentence = installed_finding(environment, builds, gpus, hardware, chosen, facts, others, nouns)
    return {"installed": version, "installed_fits": fits, "installed_said": sentence}


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
    index_url = None if index_root is None else wheels.url(index_root, chosen.index)
    pinned = bool(options.torch or (options.cuda and chosen.cuda))
    machine_floor = compat.machine_floor(chosen.cuda_min_driver, decision.targets, hardware)
    tegra = any(hardware.is_tegra(gpu.compute_capability) for gpu in decision.targets)
    if facts.os == "windows" or tegra:  # Linux's dGPU floors number neither Windows nor JetPack drivers
        machine_floor = None
    floor = None if machine_floor is None else said.driver_floor(machine_floor)
    needed = said.driver_needed(floor, chosen.cuda, tegra) if chosen.cuda else None
    detail = decision.detail  # what the walk found; what the build chosen adds to it is set once, below
    changes: dict[str, Any] = {"min_driver": None if machine_floor is None else str(machine_floor)}
    changes |= {"driver_needed": needed, "index_url": index_url, "from_pypi": index_url is None}
    stack = None if chosen.gpu_code is None else chosen.gpu_code.said
    reasons = [*found, said.chosen(chosen.label, index_url, chosen.cuda, needed, pinned, wheels.nouns, stack)]
    if detail.python_tag is None:
        newest = set_python(chosen, pairs)
        reasons.append(said.python_unstated(newest, tuple(f"{p.project} {p.version}" for p in pairs)))
        changes |= {"python_tag": newest, "python": f"{newest[2]}.{newest[3:].rstrip('t')}"}
    reasons += [wording.cuda_pin_unused(options.cuda)] if options.cuda and chosen.cuda is None else []
    reasons += _coverage_reasons(chosen, decision.targets, hardware)
    reasons += stages.unserved(chosen.label, chosen, facts, decision.targets, hardware)
    if chosen.default_index and index_url is not None:
        reasons.append(said.pypi_same(chosen.torch, chosen.platform))
    reasons.append(said.dispatch(detail.dispatch, facts.arch, wheels.nouns, facts.cpu.source != "--platform"))
    reasons += [said.companion_paired(p, chosen.torch, index_url is None, wheels.sources, wheels.nouns) for p in pairs]
    left_out = _left_out_newer(wheels, chosen.platform, chosen.torch, facts)
    reasons += [said.left_out_newer(left_out, wheels.nouns)] if left_out else []
    changes["left_out"] = tuple(said.left_out_row(*row) for row in left_out)
    if detail.installed_said:
        kept = detail.installed_fits == "yes" and detail.installed != chosen.label
        reasons.append(said.installed_kept(detail.installed_said) if kept else detail.installed_said)
    chosen_detail = replace(detail, **changes)
    return replace(decision, detail=chosen_detail, build=chosen, companions=pairs, reasons=tuple(reasons))


def _coverage_reasons(build: Build, gpus: tuple[GpuFacts, ...], hardware: Hardware) -> list[str]:
    if build.family != "cuda":
        return []  # a ROCm or XPU build's are rules/families.py's; the NVIDIA GPUs it leaves, families.per_vendor's
    found = []
    for gpu in dict.fromkeys(gpus):
        how = compat.kernels_run(build, gpu.compute_capability, hardware)  # the one kernel rule
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
    left_out = _left_out_newer(wheels, decision.detail.platform or "", None, facts)
    reasons += [said.left_out_newer(left_out, wheels.nouns)] if left_out else []
    reasons += older_than_the_catalog(facts, verdicts, wheels.nouns)
    rows = tuple(said.left_out_row(*row) for row in left_out)
    decision = replace(decision, detail=replace(decision.detail, left_out=rows))
    if decision.detail.installed_said:
        reasons.append(decision.detail.installed_said)
    hints: tuple[str, ...] = ()
    if again is not None:
        hints = hints_for_nothing(decision, hardware, verdicts, passed_over, facts.driver, again, wheels.nouns)
    nearest = nearest_refused(decision.rejected, verdicts)
    if nearest is not None:  # said last: what the one-line error (exit 3) names, with the hints
        nouns = wheels.nouns
        reasons.append(said.nothing_fits(wording.choice(nearest, nouns), wording.why(nearest, nouns), nouns))
    return replace(decision, reasons=tuple(dict.fromkeys(reasons)), hints=hints)
