"""`pickvariant recipe`: a variant's recipe (fetched from its build repository and checked, or generated), a branch's
with --all, and with --with each companion's generated on the variant's own, beside it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.files import own_cache
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request, projects_from
from pickvariant.rules.decision import SetRefusal
from pickvariant.rules.pairing import generated_set
from pickvariant.rules.wording import set_refusal
from pickvariant.sources.build import Catalog, Companion, Variant
from pickvariant.sources.flox.recipes.render import branch_variants, render, render_companion


def companion_recipes(
    catalog: Catalog, variant: Variant, given: Sequence[str], output: Path | None, all_variants: bool
) -> list[tuple[Variant | Companion, str]]:
    """The generated companions' recipes for `variant`, in the order the projects were given; BadInput where one
    cannot be generated on it, or where they would have nowhere beside the variant's recipe to go."""
    if all_variants:
        raise BadInput("--with generates the companions of one PACKAGE; --all renders a branch's PyTorch recipes")
    if output is None:
        raise BadInput(
            "--with writes the variant's recipe and each companion's beside it: give the directory with -o DIR"
        )
    found = generated_set(catalog, variant, projects_from(given, "--with"))
    if isinstance(found, SetRefusal):
        raise BadInput(f"--with: {set_refusal(found)}")
    return [(companion, render_companion(companion, variant, catalog)) for companion in found]


@keyword_record
class RecipeOptions:
    """What `recipe` takes: a PACKAGE (or --all of a branch), where it comes from, where it goes."""

    package: str | None = None
    all_variants: bool = False
    branch: str | None = None
    cuda: str | None = None
    output: Path | None = None
    generate: bool = False
    repo: str | None = None
    with_projects: tuple[str, ...] = ()


def _recommended(options: RecipeOptions, catalog: Catalog) -> tuple[str, str]:
    """(package, branch) of this machine's recommendation with the companions asked for; NoVariant where none fits."""
    from pickvariant import api

    request = Request(with_projects=projects_from(options.with_projects, "--with"), branch=options.branch, build=True)
    choice = api.recommend_request(request, catalog=catalog)
    if choice.build is None:
        raise choice.no_variant_error()
    return choice.build.package, choice.build.branch


@keyword_record
class Recipes:
    """The recipes to print or write, in order, and what to say of them on stderr first."""

    recipes: tuple[tuple[Variant | Companion, str], ...]
    notes: tuple[str, ...] = ()


def recipes(options: RecipeOptions, catalog: Catalog) -> Recipes:
    """The recipes `recipe` prints or writes; BadInput for a combination of options that names nothing.

    --with and no PACKAGE: this machine's recommendation with those companions, as `detect --with` gives it."""
    if options.package is None and not options.all_variants and options.with_projects:
        package, branch = _recommended(options, catalog)
        chosen = recipes(replace(options, package=package, branch=branch), catalog)
        said = f"no PACKAGE: this machine's recommendation with {', '.join(options.with_projects)}, as detect gives it"
        return Recipes(recipes=chosen.recipes, notes=(f"{said}: {package} (branch {branch})", *chosen.notes))
    if options.all_variants == (options.package is not None):
        raise BadInput("give either a PACKAGE or --all (or --with, for this machine's recommendation)")
    if options.cuda is not None and not options.all_variants:
        raise BadInput("--cuda chooses a CUDA line of the branch for --all; a PACKAGE names its own")
    notes: list[str] = []
    if options.all_variants:
        if options.repo is not None:
            raise BadInput("--all generates a branch's recipes from the templates; --repo fetches one PACKAGE")
        variants, skipped = branch_variants(catalog, options.branch, options.cuda, options.output)
        notes += skipped
        found: list[tuple[Variant | Companion, str]] = [(variant, render(variant, catalog)) for variant in variants]
    elif options.generate:
        variant = catalog.variant(options.package or "", options.branch)
        found = [(variant, render(variant, catalog))]
    else:
        from pickvariant.sources.flox.recipes.fetch import fetch_checked

        variant = catalog.variant(options.package or "", options.branch)
        fetched = fetch_checked(variant, catalog, options.repo, own_cache(os.environ), os.environ)
        notes.append(
            f"{variant.package}: {variant.path} of {fetched.branch} at {fetched.commit[:12]} from {fetched.repo}"
            f"{' (cached)' if fetched.from_cache else ''}; checked against the catalog"
        )
        notes += [f"note: {note}" for note in fetched.notes]
        found = [(variant, fetched.text)]
    if options.with_projects:
        first = found[0][0]
        assert isinstance(first, Variant)
        found += companion_recipes(catalog, first, options.with_projects, options.output, options.all_variants)
    return Recipes(recipes=tuple(found), notes=tuple(notes))
