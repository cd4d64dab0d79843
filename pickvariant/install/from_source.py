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
from pickvariant.catalog.model import Catalog, Companion, Variant
from pickvariant.install import existing, floxcontract
from pickvariant.install.plan import InstallOptions, Plan, check_directory, environment_commands, login_check
from pickvariant.recipes.fetch import fetch_checked
from pickvariant.recipes.render import recipe_path, render, render_companion


def build_plan(
    variant: Variant,
    catalog: Catalog,
    options: InstallOptions,
    env: Mapping[str, str],
    companions: tuple[Companion, ...],
) -> Plan:
    """Build the variant from its recipe (and each generated companion from its own, beside it: one torch) in one
    build directory, then install the results with a matching Python."""
    target_dir = options.directory.resolve()
    build_dir = options.build_dir.resolve() if options.build_dir else None
    cwd = target_dir if target_dir.is_dir() else Path.cwd()
    python = floxcontract.python_package(variant.python)
    directory = build_dir or cache_dir(env) / "build" / variant.package
    check_directory(directory, "--build-dir")
    locked = existing.systems(directory)
    if locked is not None and variant.platform not in locked:
        # flox build refuses an environment whose options.systems lack this system (buildenv.rs LockfileIncompatible).
        raise BadInput(
            f"--build-dir {directory}: its Flox environment is for {', '.join(locked)}, not {variant.platform}, and flox "
            f"build refuses it: add {variant.platform} to its options.systems (`flox edit -d {shlex.quote(str(directory))}`), "
            "or choose another --build-dir"
        )
    notes: list[str] = []
    if options.generate:
        text = render(variant, catalog)
        source: dict[str, str] | None = {
            "generated": f"pickvariant {__version__} from the catalog synced from {catalog.source.repo} at {catalog.source.commit}"
        }
    else:
        try:
            fetched = fetch_checked(variant, catalog, options.repo, own_cache(env), env)
        except OperationFailed as error:
            if not options.dry_run:
                raise
            # A dry run offline (or with the repository unreachable) says what it could not check, and goes on.
            text, source = None, None
            notes.append(
                f"the recipe could not be fetched now, so nothing of it was checked ({error}); "
                "the install fetches it and checks it against the catalog before it builds"
            )
        else:
            text, source = fetched.text, fetched.provenance()
            notes += [
                f"recipe {fetched.path} of {fetched.branch} at {fetched.commit[:12]} from {fetched.repo}{' (cached)' if fetched.from_cache else ''}, checked against the catalog"
            ]
            notes += list(fetched.notes)
    recipe = recipe_path(directory / ".flox" / "pkgs", variant)
    extra = tuple((recipe_path(recipe.parent, c), render_companion(c, variant, catalog)) for c in companions)
    if recipe.parent.exists() and text is not None:
        # Refused before anything runs: a recipe of the user's, or a .flox/pkgs that leads elsewhere.
        for path, content in ((recipe, text), *extra):
            check_writable(path, content, options.force, root=directory)
    result_link = floxcontract.contract()["files"]["result_link"]
    result = directory / result_link.format(name=variant.package)
    companion_results = tuple(directory / result_link.format(name=c.package) for c in companions)
    names = [variant.package, *(c.package for c in companions)]
    commands = [login_check(cwd, options.token_file)]
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
    recipe_after = len(commands)
    commands.append(
        Command(
            ("git", "add", "--", *(str(path.relative_to(directory)) for path in (recipe, *(p for p, _ in extra)))),
            directory,
            "track the recipes in git (staged is enough for flox build)"
            if extra
            else "track the recipe in git (staged is enough for flox build)",
        )
    )
    commands.append(Command(("flox", "build", "-d", str(directory), *names), directory, f"build {', '.join(names)}"))
    creates = not floxcontract.has_environment(target_dir) and target_dir != directory
    results = [str(result), *(str(r) for r in companion_results)]
    what = "the build results" if extra else "the build result"
    if target_dir == directory:
        commands.append(
            Command(
                ("flox", "install", "-d", str(target_dir), *results, python),
                cwd,
                f"install {what} and Python {variant.python}",
            )
        )
    else:
        install, more = environment_commands(
            target_dir,
            cwd,
            [*results, python],
            f"install {what} and Python {variant.python} into {target_dir}",
        )
        commands += install
        notes += more
    hours, disk, memory = catalog.build_hours, catalog.build_disk_gb, catalog.build_memory_gb
    warning = f"building PyTorch from source takes {hours} hours, about {disk:g} GB of disk and {memory:g} GB+ of RAM"
    # Pasted into a shell: the repository's address and name come from a catalog or a clone's config, so each
    # word is quoted as the shell needs it.
    clone = catalog.source.repo
    steps = (
        ["git", "clone", "-b", variant.branch, clone],
        ["cd", clone.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")],
        ["flox", "publish", "-o", "ORG", variant.package],
    )
    notes.append(
        "to publish it for other machines: flox publish refuses this build directory (it needs a git repository with a remote, "
        "the revision pushed and a clean tree); publish from a clone of the build repository or your fork: "
        f"`{' && '.join(shlex.join(step) for step in steps)}`, then install elsewhere with --org ORG"
    )
    if companions:
        notes += [
            f"{c.package}: generated on {variant.package}'s recipe, beside it in {recipe.parent} (one torch, built once)"
            for c in companions
        ]
    return Plan(
        variant=variant,
        method="build",
        directory=target_dir,
        commands=tuple(commands),
        recipe_file=recipe,
        recipe_text=text,
        recipe_after=recipe_after,
        warnings=(warning,),
        result=result,
        notes=tuple(notes),
        recipe_source=source,
        build_dir=directory,
        creates_environment=creates,
        companions=companions,
        companion_recipes=extra,
        companion_results=companion_results,
    )
