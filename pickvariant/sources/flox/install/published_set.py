"""Installing a set (torch with its companions) as published into one Flox environment: the packages the
decision's set shape names (rules/sets.py decides it, once), each pinned where its version is known."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pickvariant._base.errors import BadInput
from pickvariant.rules.decision import SetShape
from pickvariant.sources.build import Companion, Variant


def set_packages(
    variant: Variant, companions: Sequence[Companion], shape: SetShape, org: str
) -> tuple[list[str], list[str]]:
    """The published packages to install for the set, in the shape the decision gave it: (package paths, notes)."""
    by_name = {c.package: c for c in companions}
    # Each pinned to the version the decision chose where the catalog knows it (the variant's PyTorch, a vLLM
    # release): a name several branches publish would otherwise resolve to the newest of them.
    packages = [f"{org}/{name}{_pin(name, variant, by_name)}" for name in shape.installed]
    if not shape.companions_alone:
        notes = [
            f"{name} imports {variant.package}'s own recipe: one torch derivation, which Flox links once"
            for name in shape.installed[1:]
        ]
        return packages, notes
    (alone,) = (by_name[name] for name in shape.installed)
    return packages, [
        f"{alone.package} brings its own build of PyTorch {alone.torch} (same Python, CUDA line, GPU architecture and ISA as "
        f"{variant.package}) as a propagated input: it is installed alone, so that the torch Python imports is the one its compiled "
        "extension was built against; installing the variant beside it would put two PyTorch builds in one process",
        'Flox links propagated inputs in its default (dev) activation mode only: with options.activate.mode = "run" torch would be missing',
    ]


def _pin(name: str, variant: Variant, companions: Mapping[str, Companion]) -> str:
    if name == variant.package:
        return f"@{variant.torch}"
    version = companions[name].version
    return f"@{version}" if version else ""


def require_published(org: str | None, build: bool) -> str:
    if org is None or build:
        raise BadInput(
            "a published set installs from a Flox organisation (--org ORG or PICKVARIANT_FLOX_ORG); to build the set "
            "from source, each companion generated on the variant's recipe, decide it with --build"
        )
    return org
