"""Installing torch with its companions into one Flox environment, with exactly one PyTorch in it.

What Flox does (flox/flox at 6536dac, buildenv/builder.pl and cli/tests/edit.bats): packages are linked file
by file; two installed packages that provide the same file at the same priority (default 5) make the
environment fail to build ("'A' conflicts with 'B'. Both packages provide the file …"); a package's
propagated build inputs (how a torchvision package carries the torch it was built against) are linked
only in the default dev activation mode, below every installed package, silently. So:
- a companion built from the very variant's recipe (build-pytorch's in-repo companions) propagates that
  same store path: install the variant and the companions together; Flox links the torch once;
- a companion built against a torch of its own build must not sit beside the variant: the variant would win
  file by file while the companion's compiled extension still points (RPATH) at its own libtorch, two
  PyTorch builds in one process. Install the companion alone: its propagated torch (the same version, Python,
  CUDA line, GPU architecture and ISA, which the decision checked) is the one Python imports;
- two companions with torches of their own bring two torches, of which one environment links only the
  first: no environment holds them with one PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant._base.errors import BadInput, NoVariant
from pickvariant.catalog.model import Companion, Variant


def set_packages(variant: Variant, companions: Sequence[Companion], org: str) -> tuple[list[str], list[str]]:
    """The published packages to install for the set, and why those: (package paths, notes)."""
    identical = [
        c
        for c in companions
        if c.torch_relation == "identical" and c.torch_of == variant.package and c.branch == variant.branch
    ]
    own = [c for c in companions if c not in identical]
    if not own:
        notes = [
            f"{c.package} imports {variant.package}'s own recipe: one torch derivation, which Flox links once"
            for c in identical
        ]
        return [f"{org}/{variant.package}@{variant.torch}", *(f"{org}/{c.package}" for c in identical)], notes
    if len(own) == 1 and not identical:
        (companion,) = own
        return [f"{org}/{companion.package}"], [
            f"{companion.package} brings its own build of PyTorch {companion.torch} (same Python, CUDA line, GPU architecture and ISA as "
            f"{variant.package}) as a propagated input: it is installed alone, so that the torch Python imports is the one its compiled "
            "extension was built against; installing the variant beside it would put two PyTorch builds in one process",
            'Flox links propagated inputs in its default (dev) activation mode only: with options.activate.mode = "run" torch would be missing',
        ]
    mixed = ", ".join(c.package for c in own)
    raise NoVariant(
        f"{mixed} each bring a torch of their own build{' besides ' + ', '.join(c.package for c in identical) if identical else ''}: "
        "one Flox environment links only one of them, and the others' compiled extensions would load against a torch they were "
        "not built with; install each with its torch in an environment of its own (one --with at a time)"
    )


def require_published(org: str | None, build: bool) -> str:
    if org is None or build:
        raise BadInput(
            "--with installs the set as published in a Flox organisation (--org ORG or PICKVARIANT_FLOX_ORG): "
            "pickvariant does not build companions from source"
        )
    return org
