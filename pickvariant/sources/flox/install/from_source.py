"""Installing by building: the variant's recipe (fetched from its build repository, or generated) and, for a set
built from source, each companion's recipe generated on it, in one build directory; then the results installed
with a matching Python."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from pickvariant import __version__
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.files import cache_dir, check_writable, own_cache
from pickvariant._base.proc import Command
from pickvariant.install.options import InstallOptions
from pickvariant.sources.build import Catalog, Companion, Variant
from pickvariant.sources.flox.install import existing, floxcontract
from pickvariant.sources.flox.install.install_plan import (
    InstallPlan,
    check_directory,
    environment_commands,
    login_check,
)
from pickvariant.sources.flox.recipes.fetch import fetch_checked
from pickvariant.sources.flox.recipes.render import recipe_path, render, render_companion


def build_install_plan(
    variant: Variant,
    catalog: Catalog,
    options: InstallOptions,
    env: Mapping[str, str],
    companions: tuple[Companion, ...],
) -> InstallPlan:
    """Build the variant from its recipe (and each generated companion from its own, beside it: one torch) in one
    build directory, then install the results with a matching Python."""
    target_dir = options.directory.resolve()
    cwd = target_dir if target_dir.is_dir() else Path.cwd()
    directory = _build_directory(variant, options, env)
    text, source, notes = _recipe_text(variant, catalog, options, env)
    recipe = recipe_path(directory / ".flox" / "pkgs", variant)
    extra = tuple((recipe_path(recipe.parent, c), render_companion(c, variant, catalog)) for c in companions)
    if recipe.parent.exists() and text is not None:
        # Refused before anything runs: a recipe of the user's, or a .flox/pkgs that leads elsewhere.
        for path, content in ((recipe, text), *extra):
            check_writable(path, content, options.force, root=directory)
    result_link = floxcontract.contract()["files"]["result_link"]
    result = directory / result_link.format(name=variant.package)
    companion_results = tuple(directory / result_link.format(name=c.package) for c in companions)
    commands = [login_check(cwd, options.token_file), *_prepare_directory(directory)]
    recipe_after = len(commands)
    commands += _build_commands(directory, (recipe, *(path for path, _ in extra)), (variant, *companions))
    install, more = _install_results(variant, target_dir, directory, cwd, [result, *companion_results])
    commands += install
    notes += more
    notes.append(_publish_note(variant, catalog))
    notes += [
        f"{c.package}: generated on {variant.package}'s recipe, beside it in {recipe.parent} (one torch, built once)"
        for c in companions
    ]
    return InstallPlan(
        variant=variant,
        method="build",
        directory=target_dir,
        commands=tuple(commands),
        recipe_file=recipe,
        recipe_text=text,
        recipe_after=recipe_after,
        warnings=(_build_cost(catalog),),
        result=result,
        notes=tuple(notes),
        recipe_source=source,
        build_dir=directory,
        creates_environment=not floxcontract.has_environment(target_dir) and target_dir != directory,
        companions=companions,
        companion_recipes=extra,
        companion_results=companion_results,
    )


def _install_results(
    variant: Variant, target_dir: Path, directory: Path, cwd: Path, results: list[Path]
) -> tuple[list[Command], list[str]]:
    """The build results and a matching Python installed: into the build environment itself, or into --dir."""
    what = "the build results" if len(results) > 1 else "the build result"
    python = floxcontract.python_package(variant.python)
    paths = [str(result) for result in results]
    if target_dir == directory:
        install = Command(
            ("flox", "install", "-d", str(target_dir), *paths, python),
            cwd,
            f"install {what} and Python {variant.python}",
        )
        return [install], []
    return environment_commands(
        target_dir, cwd, [*paths, python], f"install {what} and Python {variant.python} into {target_dir}"
    )


def _build_directory(variant: Variant, options: InstallOptions, env: Mapping[str, str]) -> Path:
    """Where the build runs (--build-dir, or the cache's), refused where flox build would refuse it."""
    directory = options.build_dir.resolve() if options.build_dir else cache_dir(env) / "build" / variant.package
    check_directory(directory, "--build-dir")
    locked = existing.systems(directory)
    if locked is not None and variant.platform not in locked:
        # flox build refuses an environment whose options.systems lack this system (buildenv.rs LockfileIncompatible).
        raise BadInput(
            f"--build-dir {directory}: its Flox environment is for {', '.join(locked)}, not {variant.platform}, and flox "
            f"build refuses it: add {variant.platform} to its options.systems (`flox edit -d {shlex.quote(str(directory))}`), "
            "or choose another --build-dir"
        )
    return directory


def _recipe_text(
    variant: Variant, catalog: Catalog, options: InstallOptions, env: Mapping[str, str]
) -> tuple[str | None, dict[str, str] | None, list[str]]:
    """The recipe to build (generated, or fetched and checked), where it came from, and what to note about it.

    A dry run that cannot fetch says what it could not check and goes on: the text is None then."""
    if options.generate:
        source = {
            "generated": f"pickvariant {__version__} from the catalog synced from {catalog.source.repo} at {catalog.source.commit}"
        }
        return render(variant, catalog), source, []
    try:
        fetched = fetch_checked(variant, catalog, options.repo, own_cache(env), env)
    except OperationFailed as error:
        if not options.dry_run:
            raise
        note = (
            f"the recipe could not be fetched now, so nothing of it was checked ({error}); "
            "the install fetches it and checks it against the catalog before it builds"
        )
        return None, None, [note]
    cached = " (cached)" if fetched.from_cache else ""
    note = f"recipe {fetched.path} of {fetched.branch} at {fetched.commit[:12]} from {fetched.repo}{cached}, checked against the catalog"
    return fetched.text, fetched.provenance(), [note, *fetched.notes]


def _prepare_directory(directory: Path) -> list[Command]:
    """A git repository (flox build reads tracked files only) with a Flox environment, where either is missing."""
    commands = []
    if not (directory / ".git").exists():
        commands.append(
            Command(
                ("git", "init", "-q", str(directory)),
                directory,
                "make the build directory a git repository (flox build reads tracked files only)",
            )
        )
    if not floxcontract.has_environment(directory):
        commands.append(
            Command(
                ("flox", "init", "-d", str(directory), "--no-auto-setup"), directory, "create the build environment"
            )
        )
    return commands


def _build_commands(
    directory: Path, recipes: tuple[Path, ...], builds: tuple[Variant | Companion, ...]
) -> list[Command]:
    """Track the recipes, then build every package of the set in one flox build."""
    names = [build.package for build in builds]
    tracked = "the recipes" if len(recipes) > 1 else "the recipe"
    return [
        Command(
            ("git", "add", "--", *(str(path.relative_to(directory)) for path in recipes)),
            directory,
            f"track {tracked} in git (staged is enough for flox build)",
        ),
        Command(("flox", "build", "-d", str(directory), *names), directory, f"build {', '.join(names)}"),
    ]


def _build_cost(catalog: Catalog) -> str:
    hours, disk, memory = catalog.build_hours, catalog.build_disk_gb, catalog.build_memory_gb
    return f"building PyTorch from source takes {hours} hours, about {disk:g} GB of disk and {memory:g} GB+ of RAM"


def _publish_note(variant: Variant, catalog: Catalog) -> str:
    # Pasted into a shell: the repository's address and name come from a catalog or a clone's config, so each
    # word is quoted as the shell needs it.
    clone = catalog.source.repo
    steps = (
        ["git", "clone", "-b", variant.branch, clone],
        ["cd", clone.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")],
        ["flox", "publish", "-o", "ORG", variant.package],
    )
    return (
        "to publish it for other machines: flox publish refuses this build directory (it needs a git repository with a remote, "
        "the revision pushed and a clean tree); publish from a clone of the build repository or your fork: "
        f"`{' && '.join(shlex.join(step) for step in steps)}`, then install elsewhere with --org ORG"
    )
