"""What would help the recipes' answer: a driver, a GPU flag, a pin dropped. A hint that promises a variant decides
again with the change it proposes (`again`: the one pick, rules/pick.py, without hints), so it never promises what
the rules would not choose."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant._base import settings
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant._base.versions import version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.rules.compat import (
    driver_rejection,
    for_cuda,
    has_tegra,
    judged_by_cuda_version,
    last_branch,
    machine_floor,
    tegra_cuda_unknown,
)
from pickvariant.rules.decision import RecipeDecision
from pickvariant.rules.nothing import NothingFits
from pickvariant.rules.upgrades import driver_upgrades
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.hardware import CudaLine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.rules.pick import Again
    from pickvariant.rules.stages import Walked


def for_set(
    facts: HostFacts, catalog: Catalog, options: Request, decision: RecipeDecision, alone: Variant, again: Again
) -> tuple[str, ...]:
    """With companions: what a driver upgrade would give the set ("a driver >= X gives PyTorch 2.10.0 with
    torchvision"), decided again, not guessed (`alone`: the variant PyTorch alone would get)."""
    got = decision.build
    driver = facts.driver
    if driver is None or facts.driver_assumed or driver.version is None:
        return ()
    if got is not None and got.torch == alone.torch:
        return ()
    lines = sorted(
        {
            (line.min_driver, line.cuda)
            for branch in catalog.branches
            for line in branch.cuda_lines
            if driver.version < line.min_driver
        },
        key=lambda pair: (pair[0].parts, version_key(pair[1])),
    )
    for min_driver, cuda in lines:
        upgraded = again(replace(facts, driver=DriverFacts(min_driver, cuda))).build
        if upgraded is not None and (got is None or version_key(upgraded.torch) > version_key(got.torch)):
            return (recipe_wording.driver_gives_set(min_driver, upgraded.torch, options.with_projects, upgraded.label),)
    return ()


def for_nothing(
    facts: HostFacts, catalog: Catalog, options: Request, walked: Walked, nothing: NothingFits, again: Again
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """No variant: (a finding only deciding again can make, the hints), from what the stages found (`nothing`)."""
    if facts.os == "darwin":
        pinned = options.torch or options.python or options.branch
        return (), ((recipe_wording.DROP_PINS_MAC,) if pinned else ())
    gpus = walked.gpus
    found: list[str] = []
    hints: list[str] = []
    if not walked.usable_isas and not facts.cpu.flags:
        hints.append(recipe_wording.NO_FLAGS_KNOWN)
    if gpus:
        if nothing.gpus_conflict:
            hints.append(recipe_wording.TARGET_ONE_GPU)
        for gpu in nothing.gpus_without_kernels:
            hints += newer_gpu_hints(facts, catalog, gpu)
        if nothing.jetson_cuda_unknown:
            hints.append(recipe_wording.state_jetson_cuda(settings.DRIVER_CUDA))
        upgrade = driver_upgrade(facts, catalog, walked, again)
        if upgrade is not None:
            found_line, upgrade_hint = upgrade
            if not nothing.undriven:
                found.append(found_line)
            hints.append(upgrade_hint)
        if nothing.cpu_only:
            preference = catalog.workloads[options.workload].isa_preference
            best = min(
                nothing.cpu_only,
                key=lambda v: (tuple(-p for p in version_key(v.torch)), preference.index(v.cpu_isa or "")),
            )
            hints.append(recipe_wording.no_gpu_would_give(best.label))
    if options.torch or options.cuda or options.python or options.branch:
        hints.append(recipe_wording.DROP_PINS)
    return tuple(found), tuple(dict.fromkeys(hints))


def newer_gpu_hints(facts: HostFacts, catalog: Catalog, gpu: GpuFacts) -> list[str]:
    """A GPU newer than the catalog, or one that CUDA 12 drivers report under its older number."""
    hints = []
    newest = max(arch.compute_capability for arch in catalog.gpu_archs.values())
    if gpu.compute_capability > newest:
        hints.append(recipe_wording.newer_than_catalog(gpu.compute_capability, newest))
    for arch in catalog.gpu_archs.values():
        if arch.reported_before_cuda_13 != gpu.compute_capability:
            continue
        builds = [catalog.cuda_line(v) for v in catalog.variants if v.gpu_arch == arch.name]
        # Lines of one minimum driver (13.0 and 13.1) are ordered by release too: a set's order is the hash seed's.
        lines = sorted(
            {line for line in builds if line is not None},
            key=lambda line: (line.min_driver.parts, version_key(line.cuda)),
        )
        if not lines:
            continue
        line = lines[0]
        renamed = recipe_wording.renamed_capability(arch.description, gpu.compute_capability, arch.compute_capability)
        as_renamed = (replace(gpu, compute_capability=arch.compute_capability),)
        if facts.driver_assumed or facts.driver is None or driver_rejection(facts.driver, line, as_renamed, catalog):
            driver = (
                recipe_wording.jetson_driver_for(line.cuda)
                if arch.tegra
                else recipe_wording.driver_for(line.min_driver, for_cuda(catalog, line.cuda, line.min_driver))
            )
            hints.append(recipe_wording.renamed_needs_driver(renamed, driver, arch.name))
        else:
            # The user already has that driver: telling them to get it would send them in circles.
            shown = facts.driver.version or facts.driver.cuda
            hints.append(recipe_wording.renamed_check_capability(renamed, shown, line.cuda, arch.compute_capability))
    return hints


def driver_upgrade(facts: HostFacts, catalog: Catalog, walked: Walked, again: Again) -> tuple[str, str] | None:
    """The smallest driver change that gives a variant, worded: (the finding that the driver is too old, the hint
    naming the driver and the variant the rules would then pick).

    A GPU the driver cannot drive moves the smallest driver up to the first that drives it (or, for a GPU
    newer branches dropped, down to a branch that still does)."""
    driver, gpus = facts.driver, walked.gpus
    if driver is None or facts.driver_assumed or tegra_cuda_unknown(gpus, driver, catalog):
        return None
    too_old = [
        (line.min_driver, line.cuda)
        for b in walked.branches
        for line in b.cuda_lines
        if driver_rejection(driver, line, gpus, catalog)
    ]
    for upgraded in driver_upgrades(driver, too_old, gpus, catalog):  # the one search, a prebuilt build's too
        decision = again(replace(facts, driver=upgraded))
        line = decision.detail.line
        if line is not None and upgraded.version is None and not has_tegra(gpus, catalog):
            # Raised by CUDA version (a Linux driver stated by it alone): a Flox build runs on Linux, whose drivers
            # the floors number, so the hint names the floor of the line found, decided again with that number.
            upgraded = DriverFacts(machine_floor(line.min_driver, gpus, catalog), upgraded.cuda)
            decision = again(replace(facts, driver=upgraded))
        if decision.build is not None and decision.detail.line is not None:
            shown = driver.version if driver.version else f"for CUDA {driver.cuda}"
            hint = _upgrade_hint(facts, catalog, gpus, decision.detail.line, decision.build, upgraded)
            return recipe_wording.driver_too_old(str(shown)), hint + _later_in_branch(
                facts, catalog, upgraded, decision.build, again
            )
    return None


def _later_in_branch(facts: HostFacts, catalog: Catalog, upgraded: DriverFacts, first: Variant, again: Again) -> str:
    """Where the hint names a branch (any R580 driver), what later releases of that branch give instead, each decided
    again: the branch's first driver may run fewer CUDA lines than most of its drivers do."""
    floor = upgraded.version
    if floor is None or len(floor.parts) != 1:
        return ""
    said, last = [], first
    for minimum in sorted({line.min_driver for b in catalog.branches for line in b.cuda_lines}, key=lambda v: v.parts):
        if minimum.parts[0] != floor.parts[0] or not floor < minimum:
            continue
        decision = again(replace(facts, driver=DriverFacts(minimum, upgraded.cuda)))
        if decision.build is not None and decision.detail.line is not None and decision.build != last:
            cuda_words = for_cuda(catalog, decision.detail.line.cuda, minimum)
            said.append(recipe_wording.later_driver_allows(minimum, cuda_words, decision.build.label))
            last = decision.build
    return "".join(f"; {part}" for part in said)


def _upgrade_hint(
    facts: HostFacts,
    catalog: Catalog,
    gpus: Sequence[GpuFacts],
    line: CudaLine,
    variant: Variant,
    driver: DriverFacts,
) -> str:
    given = facts.driver
    if judged_by_cuda_version(gpus, given, catalog):
        return recipe_wording.jetson_driver_would_allow(line.cuda, variant.label)
    if given and given.version and driver.version and driver.version < given.version:
        cuda_words = for_cuda(catalog, line.cuda, driver.version)
        return recipe_wording.older_driver_would_allow(
            driver.version, cuda_words, variant.label, last_branch(gpus, catalog)
        )
    if driver.version is not None and len(driver.version.parts) == 1:  # a branch: any of its releases
        return recipe_wording.branch_driver_would_allow(
            driver.version, for_cuda(catalog, line.cuda, None), variant.label
        )
    return recipe_wording.driver_would_allow(
        driver.version, for_cuda(catalog, line.cuda, driver.version), variant.label
    )
