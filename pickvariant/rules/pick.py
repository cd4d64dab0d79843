"""The one pick: every source's builds through the same stages, in one order, to one Decision.

1. the driver as the rules judge it (a Windows driver by the CUDA version it reports: compat.driver_as_judged);
2. the platform: builds for it, or the one sentence saying none;
3. the machine (rules/stages.machine, every source's): the GPUs to serve, what every answer says of them, and the
   stop where NVML could not say whether there are GPUs;
4. the walk of the catalog's builds: the pins, what the driver, the CPU and the GPUs admit (each build judged by the
   one predicate, compat.refusals), the survivors best first (the one order, rules/ranking.py), and why each other
   build lost;
5. the companions (--with): the first survivor whose release pairs every one asked for;
6. the build chosen with why, or what left none; then what would help, each hint deciding again through this same
   pick with the change it proposes (`again`), so that it never promises what the rules would not choose.

How a catalog's builds are walked and explained is its shape's, behind one interface (a Walk): the recipes' grid of
release branches, CUDA lines, instruction sets and GPU architectures (rules/recipe_walk.py), and a catalog of prebuilt
builds' flat list, each build judged whole (rules/prebuilt_walk.py). The stages, their order and the hints' deciding
again are this module's, for both.
"""

from __future__ import annotations

from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant.machine.facts import HostFacts
from pickvariant.rules import compat, stages

TYPE_CHECKING = False  # typing stays off detect's path
if TYPE_CHECKING:
    from typing import Any, Protocol

    from pickvariant.machine.othergpu import OtherGpu
    from pickvariant.rules.decision import Decision
    from pickvariant.rules.stages import Machine
    from pickvariant.sources.hardware import Hardware

    class Again(Protocol):
        """Decide again with changed facts, and (a pin dropped) changed options: the one pick, without hints."""

        def __call__(self, changed: HostFacts, unpinned: Request | None = None) -> Decision[Any, Any, Any]: ...

    class Walk(Protocol):
        """A catalog shape's part of each stage: its sentences, its builds judged and ranked, its explanations."""

        @property
        def hardware(self) -> Hardware:
            """The hardware facts its builds are judged against."""

        def platform(self, facts: HostFacts, options: Request) -> Decision[Any, Any, Any] | tuple[str, str]:
            """Its sentences for the platform it has builds for and for Apple's MPS, or the answer where it has none."""

        def other_gpu(self, gpu: OtherGpu) -> str:
            """What the answer says of an AMD or Intel GPU (the machine stage's words are every source's)."""

        def serves(self, gpu: OtherGpu) -> bool:
            """Whether its builds are judged on that AMD or Intel GPU (rules/families.py): one must serve it."""

        def stopped(self, seen: Machine) -> Decision[Any, Any, Any]:
            """The answer where NVML could not say whether there are GPUs: what the machine stage found, its hint."""

        def walk(self, facts: HostFacts, options: Request, seen: Machine, driver_said: tuple[str, ...]) -> Any:
            """Its builds judged against the machine and the pins: the survivors best first, and what was found."""

        def companions(self, facts: HostFacts, options: Request, walked: Any) -> tuple[Any, Any]:
            """The build the companions asked for are paired on (None: none), and what the companion stage found."""

        def nothing(
            self, facts: HostFacts, options: Request, walked: Any, found: Any, again: Again | None
        ) -> Decision[Any, Any, Any]:
            """No build: what left none, and (with `again`) what would help."""

        def chosen(
            self, facts: HostFacts, options: Request, walked: Any, build: Any, found: Any, again: Again | None
        ) -> Decision[Any, Any, Any]:
            """The build chosen: why, why each other lost, and (with `again`) what a newer driver would give."""


def pick(facts: HostFacts, walk: Walk, options: Request, with_hints: bool = True) -> Decision[Any, Any, Any]:
    """The decision for these facts among `walk`'s builds; `with_hints`: with what would help (a hint's own decision
    is made without)."""
    facts, driver_said = compat.driver_as_judged(facts)
    platform = walk.platform(facts, options)
    if not isinstance(platform, tuple):
        return platform
    seen = stages.machine(facts, options, walk.hardware, platform, walk.other_gpu, walk.serves)
    if seen.hints:  # NVML could not say whether there are GPUs: no build can be chosen
        return walk.stopped(seen)
    walked = walk.walk(facts, options, seen, driver_said)
    build, found = walk.companions(facts, options, walked)

    def again(changed: HostFacts, unpinned: Request | None = None) -> Decision[Any, Any, Any]:
        return pick(changed, walk, options if unpinned is None else unpinned, with_hints=False)

    hints = again if with_hints else None
    if build is None:
        decision = walk.nothing(facts, options, walked, found, hints)
    else:
        decision = walk.chosen(facts, options, walked, build, found, hints)
    # The platform's sentence and each GPU's come first in every answer: facts the short answer shows as such.
    return replace(decision, machine_said=1 + len(seen.gpus))
