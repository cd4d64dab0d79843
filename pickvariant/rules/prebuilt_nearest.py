"""Where no prebuilt build fits: the index a person is nearest to, said in the one-line error (exit 3), and whether
the driver is older than every CUDA line the catalog holds."""

from __future__ import annotations

from collections.abc import Iterable

from pickvariant._base.versions import version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.rules.decision import Kind, Rejection
from pickvariant.rules.wording import prebuilt as said
from pickvariant.sources.nouns import Nouns
from pickvariant.sources.runs_on import Build

_NEAREST_KINDS = (Kind.NO_SET, Kind.DRIVER, Kind.NOT_BUILT, Kind.NO_KERNELS, Kind.PINNED_OUT)


def older_than_the_catalog(facts: HostFacts, verdicts: dict[Build, Rejection | None], nouns: Nouns) -> list[str]:
    """Where the driver is older than every CUDA line the catalog holds: the releases before its first (built for
    older CUDA lines) are outside it, not judged, and this is said rather than left unsaid."""
    floors = [build.cuda_min_driver for build in verdicts if build.cuda_min_driver is not None]
    driver = facts.driver.version if facts.driver is not None else None
    if driver is None or not floors or not driver < min(floors):
        return []
    first = min((build.torch for build in verdicts), key=version_key)
    return [said.older_than_the_catalog(str(driver), first, str(min(floors)), nouns)]


def nearest_refused(rejected: Iterable[Rejection], verdicts: dict[Build, Rejection | None]) -> Rejection | None:
    """The index a person is nearest to: by the kind of what refused it (_NEAREST_KINDS), and among those a driver
    refused, the one needing the oldest driver (the smallest update; issue 53), newest first among equals."""
    floors = {
        id(r): b.cuda_min_driver.parts for b, r in verdicts.items() if r is not None and b.cuda_min_driver is not None
    }
    ordered = [r for r in rejected if r.subject[0] == "wheel_variant"]
    # A build for a GPU this machine does not have is nearest only where nothing is nearer than a kernel refusal.
    absent = [
        r for r in ordered if r.kind == Kind.NOT_BUILT and str(dict(r.facts).get("cause", "")).startswith("no_gpu")
    ]
    # An AMD or Intel GPU no build has code for: said before a CPU build that would leave it unused.
    other = [r for r in ordered if r.kind == Kind.NO_KERNELS and dict(r.facts).get("cause") == "wheel_other"]
    for kind in _NEAREST_KINDS:
        if kind == Kind.NOT_BUILT and other:
            return other[0]
        if kind == Kind.PINNED_OUT and absent:
            return absent[0]
        found = [r for r in ordered if r.kind == kind and r not in absent]
        if found and kind == Kind.DRIVER:
            return min(found, key=lambda r: floors.get(id(r), (10**9,)))
        if found:
            return found[0]
    return absent[0] if absent else None
