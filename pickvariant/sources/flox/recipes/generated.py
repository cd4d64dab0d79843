"""Companions pickvariant generates on a PyTorch variant's own recipe: torchvision, torchaudio or vLLM from nixpkgs'
expression at the variant's pin, given the variant's torch (the recipe beside it, imported), so a set built from
source holds one torch by construction.

What each project needs is data (data/generated-companions.json, each fact with where it was read); this module
says whether one can be generated for a variant, and what it is: a Companion whose torch_relation is "generated".
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant.sources.build import GENERATED_BY, Companion, Variant, checked_package
from pickvariant.sources.flox.recipes.rows import DATA_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    TorchBy = Literal["override", "package_overrides"]
    GpuKind = Literal["cuda", "none", "mps"]

DATA = Path(DATA_DIR) / "generated-companions.json"
_GPU_KINDS = frozenset({"cuda", "none", "mps"})
_TORCH_BY = frozenset({"override", "package_overrides"})


@keyword_record
class GeneratedProject:
    """How one project's recipe is generated: nixpkgs' attribute, how it is given the torch, which GPU kinds."""

    project: str
    attribute: str
    torch_by: TorchBy  # "override" (its callPackage arguments) or "package_overrides" (the whole Python set)
    arguments: tuple[str, ...]  # the function arguments of nixpkgs' expression (what .override accepts)
    gpus: frozenset[GpuKind]  # "cuda", "none" (CPU-only), "mps"
    cuda_env: Mapping[str, str]
    cost: str
    source: str
    needs_pin_torch: bool  # only on a variant whose torch is its nixpkgs pin's own (no source upgrade)


@functools.cache
def projects() -> Mapping[str, GeneratedProject]:
    """The projects a recipe can be generated for, read once."""
    with DATA.open(encoding="utf-8") as handle:
        data = json.load(handle)
    found = {}
    for name, entry in data["projects"].items():
        gpus = frozenset(entry["gpus"])
        if not gpus <= _GPU_KINDS or entry["torch_by"] not in _TORCH_BY:
            raise BadInput(f"{DATA}: {name}: gpus must be of {sorted(_GPU_KINDS)}, torch_by of {sorted(_TORCH_BY)}")
        found[name] = GeneratedProject(
            project=name,
            attribute=entry["attribute"],
            torch_by=entry["torch_by"],
            arguments=tuple(entry["arguments"]),
            gpus=gpus,
            cuda_env=dict(entry["cuda_env"]),
            cost=entry["cost"],
            source=entry["arguments_source"],
            needs_pin_torch=bool(entry["needs_pin_torch"]),
        )
    return found


def gpu_kind(variant: Variant) -> GpuKind:
    return "mps" if variant.is_mps else "cuda" if variant.cuda else "none"


def package_name(project: str, variant: Variant) -> str:
    """The generated companion's package name: the variant's, with the project in place of `pytorch`."""
    return checked_package(project + variant.package.removeprefix("pytorch"))


def why_not_generated(project: str, variant: Variant, pin_torch: str | None) -> str | None:
    """None when a recipe of `project` can be generated on `variant`, else why not. `pin_torch`: the PyTorch of
    nixpkgs at the variant's pin (hardware.json nixpkgs_torch), None where it is not known."""
    spec = projects().get(project)
    if spec is None:
        return f"pickvariant generates no {project} recipe"
    kind = gpu_kind(variant)
    if kind not in spec.gpus:
        words = {"cuda": "CUDA", "none": "CPU-only", "mps": "Apple MPS"}
        return f"{project} is generated only for {', '.join(words[k] for k in sorted(spec.gpus))} builds, {variant.package} is {words[kind]}"
    if spec.needs_pin_torch and pin_torch != variant.torch:
        return (
            f"{project} is generated only on a variant whose PyTorch is its nixpkgs pin's own, and {variant.package} "
            f"upgrades nixpkgs {variant.nixpkgs_rev[:7]}'s torch to {variant.torch}"
        )
    return None


def generated_companion(project: str, variant: Variant) -> Companion:
    """The companion generated on `variant`: its axes, its torch, its recipe beside the variant's."""
    name = package_name(project, variant)
    return Companion(
        project=project,
        repo=GENERATED_BY,
        branch=variant.branch,
        package=name,
        path=f".flox/pkgs/{name}.nix",
        version=None,
        python=variant.python,
        gpu_arch=variant.gpu_arch,
        cpu_isa=variant.cpu_isa,
        cuda=variant.cuda,
        platform=variant.platform,
        torch=variant.torch,
        torch_pin=variant.nixpkgs_rev,
        torch_relation="generated",
        torch_of=variant.package,
        generation_cost=projects()[project].cost,
    )
