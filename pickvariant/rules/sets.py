"""The one set rule: one PyTorch build per process.

A set is a PyTorch variant with one companion per project asked for (torchvision, torchaudio, vLLM), each on
the variant's PyTorch. Whether the set can live in one Flox environment with one PyTorch is decided here,
once; detect and plan only offer sets that pass, install installs exactly `installed`, plan builds exactly it.

What Flox does (flox/flox at 6536dac, buildenv/builder.pl and cli/tests/edit.bats): installed packages are
linked file by file, and two that provide one file at one priority fail the environment; a package's
propagated inputs (how a companion carries the torch it was built against) are linked below every installed
package, in dev mode only. So:
- a companion built from the variant's own recipe (it imports it: one derivation) goes beside the variant;
- a companion with a torch of its own build goes alone: its propagated torch is the one Python imports, and
  the variant beside it would win file by file while the companion's extension points at its own libtorch;
- two torches of their own, or one beside the variant's, cannot make one environment with one PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant.rules.decision import SetShape
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Companion, Variant


def builds_on(companion: Companion, variant: Variant) -> bool:
    """The companion imports `variant`'s own recipe on its branch: the torch it builds against is that derivation."""
    return (
        companion.torch_relation in ("identical", "generated")
        and companion.torch_of == variant.package
        and companion.branch == variant.branch
    )


def shape(variant: Variant, companions: Sequence[Companion]) -> SetShape | str:
    """The set's shape, or why no environment can hold it with one PyTorch."""
    identical = [c for c in companions if builds_on(c, variant)]
    own = [c for c in companions if not builds_on(c, variant)]
    if not own:
        return SetShape(
            installed=(variant.package, *(c.package for c in identical)),
            torch_from=variant.package,
            companions_alone=False,
            generated=tuple(c.package for c in identical if c.torch_relation == "generated"),
        )
    if len(own) == 1 and not identical:
        return SetShape(installed=(own[0].package,), torch_from=own[0].package, companions_alone=True)
    return recipe_wording.two_torches([c.package for c in own], [c.package for c in identical])


def relation(companion: Companion, variant: Variant) -> str:
    """How a companion's torch relates to the PyTorch variant it is paired with, in words."""
    if companion.torch_relation == "generated" and builds_on(companion, variant):
        return recipe_wording.generated_relation(variant.package, companion.generation_cost or "")
    if builds_on(companion, variant):
        return recipe_wording.identical_relation(variant.package)
    return recipe_wording.separate_relation(companion.torch, companion.torch_pin or "", variant.nixpkgs_rev)
