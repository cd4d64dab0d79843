"""The sources of builds by name, each a Source chosen once from `--source` (else PICKVARIANT_SOURCE, else flox).

A Source says which stages walk its builds and where its catalog comes from:

- pipeline "recipes": a catalog of Flox variants on release branches (sources/build.py's Catalog), walked by
  rules/recipe_walk.py. Its catalog is loaded where the command is (PICKVARIANT_CATALOG, --catalog).
- pipeline "builds": a catalog of prebuilt builds (sources/prebuilt.py's, of sources/runs_on.py's Build: many GPU
  architectures as SASS and PTX, no CPU instruction set, an index to install from), walked by rules/prebuilt_walk.py
  (the stages every such source shares: no module outside sources/ is named after one). `builds` loads it.

The two built in (flox, wheels) are named here by module, as a plug-in is: this module imports neither, so the
rules, the commands and the command line reach a source only through the Source chosen. A program that imports
pickvariant adds its own with `register()`; every command then answers `--source NAME` with it.
"""

from __future__ import annotations

import importlib
import re

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Literal

    from pickvariant.sources.build import Catalog
    from pickvariant.sources.prebuilt import PrebuiltCatalog

    Pipeline = Literal["recipes", "builds"]

# The one source of recipes (register() refuses a second), and the built-in source of prebuilt builds that a command
# asking for prebuilt builds without naming a source gets: the only places outside each source's package that name
# either. A plan or a detect document that names no source is the recipes'.
RECIPES = "flox"
PREBUILT = "wheels"
DEFAULT = RECIPES
# Built-in sources: name -> the module whose SOURCE it is (imported when that source is asked for).
_BUILT_IN = {RECIPES: "pickvariant.sources.flox.plugin", PREBUILT: "pickvariant.sources.wheels.plugin"}
_REGISTERED: dict[str, Source] = {}
# What each pipeline takes beyond what every source takes (Source.options): its installer's options, --platform.
_ADDED: dict[str, tuple[str, ...]] = {
    "recipes": ("--package", "--org", "--build", "--token-file"),
    "builds": (
        "--platform",
        "--python",
        "--wheel-index",
        "--installer",
        "--allow-downgrade",
        "--upgrade",
        "--format requirements",
        "--format pyproject",
    ),
}
# A name is printed in commands people paste and written into plans: letters, digits and dashes only.
_NAME = r"[a-z][a-z0-9-]{0,31}"


@keyword_record
class Source:
    name: str
    pipeline: Pipeline
    # For pipeline "builds": its catalog of builds (read only when asked for).
    builds: Callable[[], PrebuiltCatalog] | None = None
    # For pipeline "recipes": where its catalog is now (its variable, else the packaged one), and that catalog read.
    catalog_path: Callable[[], str] | None = None
    load_recipes: Callable[[str], Catalog] | None = None
    # Who publishes its builds, as its sentences name them ("PyTorch's cu126 index", "for which PyTorch publishes
    # linux-x86_64 wheels"): said only here; its catalog carries it to the rules (catalog()).
    publisher: str = "PyTorch"

    @property
    def flag(self) -> str:
        """How a command line names it: `--source wheels`."""
        return f"--source {self.name}"

    @property
    def options(self) -> tuple[str, ...]:
        """The options (and detect formats) this source adds to the commands that take them: its installer's, and
        --platform for a source of prebuilt builds. Every other source refuses them (refuse_others, and gather_facts
        for --platform)."""
        return _ADDED[self.pipeline]

    @property
    def installs(self) -> str:
        """What its install does, as an error beside another source's option says it."""
        if self.pipeline == "recipes":
            return "installs into a Flox environment"
        return f"installs {self.publisher}'s wheels with pip or uv"

    def catalog(self) -> PrebuiltCatalog:
        """Its catalog of builds, naming this source's publisher (whatever the loader wrote there)."""
        if self.builds is None:
            raise BadInput(f"{self.flag}: a source of recipes has no catalog of prebuilt builds")
        from pickvariant._base.records import replace

        return replace(self.builds(), publisher=self.publisher)


def register(source: Source) -> None:
    """Make `source` answer `--source NAME` (and PICKVARIANT_SOURCE, plans naming it) in this process."""
    if not re.fullmatch(_NAME, source.name) or source.name in _BUILT_IN:
        raise ValueError(f"source name {source.name!r}: lower-case letters, digits and dashes, not a built-in one")
    if source.pipeline != "builds" or source.builds is None:
        # The recipes' stages read the Flox catalog (PICKVARIANT_CATALOG), not one a source brings: a second source
        # of recipes would be the Flox source under another name, in every document and plan.
        raise ValueError(
            f"source {source.name!r}: a registered source brings its catalog of builds (pipeline 'builds')"
        )
    _REGISTERED[source.name] = source


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def names() -> tuple[str, ...]:
    """Every source a command may name: the built-in ones first, then those registered, in order."""
    return (*_BUILT_IN, *_REGISTERED)


def named(name: str, given: str = "--source") -> Source:
    """The source called `name`, or BadInput naming `given` (the flag, variable or file that said it)."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in _BUILT_IN:
        raise BadInput(f"{given} {name!r:.40}", hint=f"choose one of {', '.join(names())}")
    source: Source = importlib.import_module(_BUILT_IN[name]).SOURCE
    return source


def chosen(stated: str | None, env: Mapping[str, str], flag: str = "--source") -> Source:
    """The source asked for: the option, else PICKVARIANT_SOURCE, else flox; BadInput naming whichever gave a
    name no source has."""
    given, value = (flag, stated) if stated is not None else (settings.SOURCE, settings.setting(env, settings.SOURCE))
    return named(DEFAULT if value is None else value, given)


def refuse_others(source: Source, given: Mapping[str, object]) -> None:
    """BadInput for the first option in `given` (flag -> value; None or False: not given) that another source adds
    and `source` does not take, naming the sources that take it and what `source` installs."""
    for flag, value in given.items():
        if value is None or value is False or flag in source.options:
            continue
        takers = [other.flag for other in map(named, names()) if flag in other.options]
        if takers:
            raise BadInput(f"{flag}: only with {' or '.join(takers)}", hint=f"{source.flag} {source.installs}")
