"""A fetched recipe checked against the catalog row it is served for, before anything uses it.

Served from the catalog's own repository at the commit it recorded, these are the bytes the catalog classified.
From another repository (a fork, a mirror), the recipe must be the catalog's own in all but its values (trusted.py:
the same skeleton) and bring in no file of its own, since a recipe fetched alone comes without them. Either way it is
then classified with the catalog's hardware facts, and every field the row records must come out the same.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from pickvariant._base.errors import OperationFailed
from pickvariant._base.records import keyword_record, replace
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.flox.recipes.classify import RecipeClassifier
from pickvariant.sources.flox.recipes.declared import Reading, read
from pickvariant.sources.flox.recipes.nixtext import NotNix
from pickvariant.sources.flox.recipes.skeleton import skeleton_of
from pickvariant.sources.flox.recipes.trusted import TrustedRecipe, difference

NIX_PARSE_TIMEOUT_S = 60
# Fields of a catalog row that a fetched recipe must agree with, as sync derives them from it.
CHECKED_FIELDS = ("gpu_arch", "cpu_isa", "cuda", "platform", "torch", "python", "nixpkgs_rev", "cudnn")


@keyword_record
class FetchedRecipe:
    text: str
    repo: str
    branch: str
    commit: str
    path: str
    from_cache: bool
    notes: tuple[str, ...] = ()

    def with_note(self, note: str) -> FetchedRecipe:
        return replace(self, notes=(*self.notes, note))

    def provenance(self) -> dict[str, str]:
        return {"repo": self.repo, "branch": self.branch, "commit": self.commit, "path": self.path}


def _pname_matches(pname: str, variant: Variant) -> bool:
    # The build repository's 2.10 recipes spell the PyTorch version into pname
    # (pytorch210-python313-…) while the file, which names the Flox package, does not.
    major, minor = variant.torch.split(".")[:2]
    return pname in (variant.package, variant.package.replace("pytorch-", f"pytorch{major}{minor}-", 1))


def check_recipe(
    fetched: FetchedRecipe, variant: Variant, catalog: Catalog, reference: FetchedRecipe | None = None
) -> tuple[str, ...]:
    """Notes when the fetched recipe is the catalog's variant; OperationFailed naming the field that differs.

    Served from the catalog's own repository at the commit it recorded (`reference` None), these are the bytes the
    catalog classified. From another, it must be `reference` (that recipe) in all but values, and bring in no file of
    its own: a recipe fetched alone comes without them. Then it is classified by the catalog's own hardware facts,
    the ones its rows were derived with."""
    where = f"{fetched.repo} {fetched.branch}:{fetched.path} at {fetched.commit[:12]}"
    notes = list(fetched.notes)
    notes.append(_nix_parse(fetched.text, where))
    try:
        reading = read(fetched.text)
    except NotNix as error:
        raise OperationFailed(f"the recipe {where} cannot be read as Nix reads it: {error}") from None
    if reference is not None:
        _held_against(reading, reference, where)
    pnames = reading.nix.string_binding("pname") or []
    if len(set(pnames)) != 1 or not _pname_matches(pnames[0], variant):
        shown = ", ".join(sorted(set(pnames))) or "none"
        raise OperationFailed(
            f"the recipe {where} does not match the catalog: its pname is {shown}, the catalog's package {variant.package}"
        )
    classifier = RecipeClassifier(catalog.hardware)
    row, why, _ = classifier.classify(variant.branch, variant.path, variant.package, reading)
    if row is None:
        raise OperationFailed(f"the recipe {where} does not match the catalog: {why}")
    differing = [
        f"its {name} is {row[name]!r}, the catalog's {getattr(variant, name)!r}"
        for name in CHECKED_FIELDS
        if row[name] != getattr(variant, name)
    ]
    if differing:
        raise OperationFailed(f"the recipe {where} does not match the catalog: {'; '.join(differing)}")
    return tuple(note for note in notes if note)


def _held_against(reading: Reading, reference: FetchedRecipe, where: str) -> None:
    """OperationFailed unless the served recipe is the catalog's own in all but its values, bringing in no file."""
    try:
        own, served = skeleton_of(reference.text), skeleton_of(reading.text)
    except NotNix as error:
        raise OperationFailed(
            f"the recipe {where} or the catalog's own cannot be read as Nix reads it: {error}"
        ) from None
    if served.tokens != own.tokens:
        upstream = TrustedRecipe(
            path=reference.path,
            package=reference.path.rsplit("/", 1)[-1].removesuffix(".nix"),
            blob="",
            where=f"{reference.repo} {reference.branch} at {reference.commit[:12]}",
            reader=0,
        )
        raise OperationFailed(f"the recipe {where} does not match the catalog: {difference(served, own, upstream)}")
    if reading.nix.paths:
        literal, line = reading.nix.paths[0]
        raise OperationFailed(
            f"the recipe {where} does not match the catalog: line {line} brings in {literal[:80]}, which a recipe "
            "fetched alone comes without, so it cannot be held against the upstream's"
        )


def _nix_parse(text: str, where: str) -> str:
    """'' when nix-instantiate parsed it, a note when there is none to ask; OperationFailed when it does not parse."""
    nix = shutil.which("nix-instantiate")
    if nix is None:
        return "not parsed: nix-instantiate is not installed (Flox and Nix bring it)"
    with tempfile.TemporaryDirectory(prefix="pickvariant-recipe-") as directory:
        file = Path(directory) / "recipe.nix"
        file.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run(
                [nix, "--parse", str(file)], capture_output=True, text=True, timeout=NIX_PARSE_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise OperationFailed(
                f"nix-instantiate --parse of {where} took longer than {NIX_PARSE_TIMEOUT_S} s"
            ) from None
    if result.returncode != 0:
        message = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise OperationFailed(
            f"the recipe {where} is not valid Nix: {message[0] if message else 'nix-instantiate --parse failed'}"
        )
    return ""
