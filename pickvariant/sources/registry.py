"""The sources of builds by name, each a Source chosen once from `--source` (else PICKVARIANT_SOURCE, else flox).

A Source says its kind of builds (its pipeline), which stages walk them and where its catalog comes from:

- pipeline "recipes": a catalog of Flox variants on release branches (sources/build.py's Catalog), walked by
  rules/recipe_walk.py. Its catalog is loaded where the command is (PICKVARIANT_CATALOG, --catalog).
- pipeline "prebuilt": a catalog of prebuilt builds (sources/prebuilt.py's, of sources/runs_on.py's Build: many GPU
  architectures as SASS and PTX, no CPU instruction set, an index to install from), walked by rules/prebuilt_walk.py
  (the stages every such source shares: no module outside sources/ is named after one). `builds` loads it.

Every source is a plug-in of the entry-point group `pickvariant.sources` (pyproject.toml): `NAME = module:SOURCE`.
The two built in (flox, wheels) are declared there as a third party's are, and loaded the same way, from the same
`module:attribute` text (held here too, so that a checkout run without being installed still has them, and so that
detect, which names a built-in source, scans no installed distribution); a name that is not built in is looked up
among the installed distributions' entry points. A plug-in that fails to load is named in one line where it is asked
for, and left out of the names every other command lists. A program that imports pickvariant may also `register()`
one in its own process. This module imports no source: the rules, the commands and the command line reach a source
only through the Source chosen.
"""

from __future__ import annotations

import importlib
import re

from pickvariant._base import settings
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.records import keyword_record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from importlib.metadata import EntryPoint
    from typing import Any, Literal

    from pickvariant.sources.build import Catalog
    from pickvariant.sources.nouns import Nouns
    from pickvariant.sources.prebuilt import PrebuiltCatalog

    Pipeline = Literal["recipes", "prebuilt"]

# The one source of recipes (register() refuses a second), and the built-in source of prebuilt builds that a command
# asking for prebuilt builds without naming a source gets: the only places outside each source's package that name
# either. A plan or a detect document that names no source is the recipes'.
RECIPES = "flox"
PREBUILT = "wheels"
DEFAULT = RECIPES
GROUP = "pickvariant.sources"
# Built-in sources: name -> their entry point's `module:attribute`, as pyproject.toml declares them (a test holds the
# two equal); loaded when that source is asked for.
_BUILT_IN = {RECIPES: "pickvariant.sources.flox.plugin:SOURCE", PREBUILT: "pickvariant.sources.wheels.plugin:SOURCE"}
_REGISTERED: dict[str, Source] = {}
# What each pipeline takes beyond what every source takes, where its source names none of its own (Source.added):
# its installer's options, --platform.
_ADDED: dict[str, tuple[str, ...]] = {
    "recipes": ("--package", "--org", "--build", "--token-file"),
    "prebuilt": (
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
# The parts every source has beside its catalog, each a `module:attribute` loaded when first asked for (as an entry
# point is): its pipeline (pipelines/__init__.py's Pipeline: its answer, document, plan, report) and its
# installation (what `install` runs; commands/installation.py asks for it). A source that names none of a part gets its
# kind's, so a third party's source of prebuilt builds answers and installs through the built-in ones.
_PARTS_OF_KIND: dict[str, dict[str, str]] = {
    "recipes": {
        "pipeline": "pickvariant.pipelines.recipes:PIPELINE",
        "installation": "pickvariant.sources.flox.installation:flox_installation",
    },
    "prebuilt": {
        "pipeline": "pickvariant.pipelines.prebuilt:PIPELINE",
        "installation": "pickvariant.commands.installation:prebuilt_installation",
        "packaging": "pickvariant.install.pip_command:PACKAGING",
    },
}
# A name is printed in commands people paste and written into plans: letters, digits and dashes only.
_NAME = r"[a-z][a-z0-9-]{0,31}"
# A publisher's name and a source's nouns: words a sentence says.
_WORDS = r"[A-Za-z0-9][A-Za-z0-9 .'&-]{0,39}"


@keyword_record
class Source:
    name: str
    # Its kind of builds, and the pipeline (pipelines/) that answers for them: "recipes" (Flox's) or "prebuilt"
    # (published builds, installed as they are).
    pipeline: Pipeline
    # For pipeline "prebuilt": its catalog of builds (read only when asked for).
    builds: Callable[[], PrebuiltCatalog] | None = None
    # For pipeline "recipes": where its catalog is now (its variable, else the packaged one), and that catalog read.
    catalog_path: Callable[[], str] | None = None
    load_recipes: Callable[[str], Catalog] | None = None
    # A source of prebuilt builds says who publishes them and what it calls them, never defaulted ("PyTorch's cu126
    # index", "for which PyTorch publishes linux-x86_64 wheels"; "Acme's cuda126 channel"): said only here; its
    # catalog carries them to the rules (catalog()). register() and the entry points refuse such a source without.
    publisher: str | None = None
    nouns: Nouns | None = None
    # Where a build is installed from, from the catalog's root and the build's index: "{root}/{index}" (an index per
    # variant, as PyTorch's), "{root}" (one channel holding every variant). Text, never code: only those two names.
    layout: str = "{root}/{index}"
    # The options (and detect formats) it adds, where not its kind's (_ADDED).
    added: tuple[str, ...] | None = None
    # Its own parts (role, `module:attribute`), where not its kind's (_PARTS_OF_KIND).
    parts: tuple[tuple[str, str], ...] = ()
    # The commands only it has (the command line's words, `module:attribute` of the function typer runs): Flox's
    # `recipe`, `list` and `catalog sync`, the wheels' `catalog wheels`. The command line registers them from here.
    commands: tuple[tuple[str, str], ...] = ()

    @property
    def built_in(self) -> bool:
        """One of pickvariant's own sources, whose code failing is pickvariant's bug; else a plug-in's, whose code
        failing is named as that plug-in's."""
        return self.name in _BUILT_IN

    def part(self, role: str) -> Any:
        """Its part of that role ("pipeline", "installation", "packaging"), imported when first asked for; a
        plug-in's own packaging part answers through sources/plugin_parts.py's check (its words become commands)."""
        spec = dict(self.parts).get(role) or _PARTS_OF_KIND[self.pipeline][role]
        found = self._imported(spec, f"its {role} part")
        if role != "packaging" or self._pickvariants(spec):
            return found
        from pickvariant.sources.plugin_parts import CheckedPackaging

        return CheckedPackaging(self.name, found)

    def command(self, words: str, spec: str) -> Callable[..., Any]:
        """The function one of its own commands (`words`) runs, from its `module:attribute`, imported."""
        found: Callable[..., Any] = self._imported(spec, f"its command {words!r}")
        return found

    def _pickvariants(self, spec: str) -> bool:
        """Whether `spec` is pickvariant's own code (a built-in source's, a kind's part), whose failure is a bug."""
        return self.built_in or spec in _PARTS_OF_KIND[self.pipeline].values()

    def _imported(self, spec: str, what: str) -> Any:
        """What `spec` names, imported. A plug-in's code that fails to import is one line naming the plug-in (its
        code, not pickvariant's); pickvariant's own fails as a bug does."""
        if self._pickvariants(spec):
            return attribute_of(spec)
        from pickvariant.sources import plugin_parts

        try:
            return attribute_of(spec)
        except Exception as error:  # any error of a third party's import is that plug-in's failure
            raise plugin_parts.failed(self.name, f"{what} ({spec})", error) from None

    @property
    def reads_python(self) -> bool:
        """Whether it installs into a Python environment (it takes --python), which its answer then reads."""
        return "--python" in self.options

    @property
    def flag(self) -> str:
        """How a command line names it: `--source wheels`."""
        return f"--source {self.name}"

    @property
    def options(self) -> tuple[str, ...]:
        """The options (and detect formats) this source adds to the commands that take them: its installer's, and
        --platform for a source of prebuilt builds; its own where it names them. Every other source refuses them
        (refuse_others, and gather_facts for --platform)."""
        return _ADDED[self.pipeline] if self.added is None else self.added

    @property
    def installs(self) -> str:
        """What its install does, as an error beside another source's option says it."""
        if self.pipeline == "recipes":
            return "installs into a Flox environment"
        assert self.nouns is not None
        return f"installs {self.publisher}'s {self.nouns.builds} with {self.nouns.installer}"

    def catalog(self) -> PrebuiltCatalog:
        """Its catalog of builds, naming this source's publisher (whatever the loader wrote there)."""
        if self.builds is None:
            raise BadInput(f"{self.flag}: a source of recipes has no catalog of prebuilt builds")
        from pickvariant._base.records import replace
        from pickvariant.sources.prebuilt import judged_only

        assert self.publisher is not None and self.nouns is not None  # checked where it is registered or loaded
        if self.built_in:
            read = self.builds()
        else:
            from pickvariant.sources.plugin_parts import catalog_of

            read = catalog_of(self.name, self.builds)
        return judged_only(replace(read, publisher=self.publisher, nouns=self.nouns, layout=self.layout))


def attribute_of(spec: str) -> Any:
    """What a `module:attribute` names (a part, a command, an entry point's value), its module imported."""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def register(source: Source) -> None:
    """Make `source` answer `--source NAME` (and PICKVARIANT_SOURCE, plans naming it) in this process."""
    if not re.fullmatch(_NAME, source.name) or source.name in _BUILT_IN:
        raise ValueError(f"source name {source.name!r}: lower-case letters, digits and dashes, not a built-in one")
    unsaid = _unsaid(source)
    if unsaid:
        raise ValueError(f"source {source.name!r}: {unsaid}")
    _REGISTERED[source.name] = source


def _unsaid(source: Source) -> str | None:
    """What a source that is not built in (registered, or a plug-in) lacks or says wrong, or None: its kind, and
    what its sentences need."""
    if source.pipeline != "prebuilt" or not callable(source.builds):
        # The recipes' stages read the Flox catalog (PICKVARIANT_CATALOG), not one a source brings: a second source
        # of recipes would be the Flox source under another name, in every document and plan.
        return (
            f"pipeline {str(source.pipeline)[:40]!r}: a source brings its catalog of builds (pipeline 'prebuilt', "
            "builds: the function that reads it)"
        )
    if not source.publisher or source.nouns is None:
        return "a source of prebuilt builds names its publisher and its nouns (Source.publisher, Source.nouns)"
    from pickvariant._base.records import fields
    from pickvariant.sources.nouns import Nouns

    if not isinstance(source.nouns, Nouns):
        return "Source.nouns: a pickvariant.sources.nouns.Nouns"
    words = {"publisher": source.publisher, **{f"nouns.{k}": getattr(source.nouns, k) for k in fields(Nouns)}}
    for field, word in words.items():
        # Said in every sentence about its builds, on terminals and in plans: words, never a control character.
        if not (isinstance(word, str) and re.fullmatch(_WORDS, word)):
            return f"{field} {str(word)[:40]!r}: letters, digits, spaces and .'&- only, at most 40"
    if source.layout not in ("{root}/{index}", "{root}"):
        return f"layout {source.layout!r:.40}: one of '{{root}}/{{index}}', '{{root}}'"
    return _misshapen(source)


def _misshapen(source: Source) -> str | None:
    """What the command line reads of a source, of the wrong shape: its parts and commands (text, text) pairs, the
    options it adds text (one of another shape would stop every command where they are registered)."""
    for field in ("parts", "commands"):
        pairs = getattr(source, field)
        if not isinstance(pairs, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(text, str) for text in pair) for pair in pairs
        ):
            return f"Source.{field}: a tuple of (text, text) pairs"
    added = source.added
    if added is not None and not (isinstance(added, tuple) and all(isinstance(option, str) for option in added)):
        return "Source.added: a tuple of option names"
    return None


def is_command(words: str) -> bool:
    """Words a source's command may be: a command (`list`), or one under `catalog` (`catalog sync`)."""
    return re.fullmatch(r"(catalog )?[a-z][a-z0-9-]{0,31}", words) is not None


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def _installed() -> dict[str, EntryPoint]:
    """The entry points of the group that installed distributions declare, by name (the built-in names excepted:
    a distribution cannot take those over)."""
    from importlib.metadata import entry_points

    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=GROUP):
        if point.name not in _BUILT_IN and re.fullmatch(_NAME, point.name) and point.name not in found:
            found[point.name] = point
    return found


def names() -> tuple[str, ...]:
    """Every source a command may name: the built-in ones first, then the installed plug-ins' (those that load),
    then those registered, in order."""
    plugins = []
    for name in _installed():
        try:
            named(name)
        except OperationFailed:
            continue  # named where it is asked for; every other command answers without it
        plugins.append(name)
    return (*_BUILT_IN, *plugins, *(name for name in _REGISTERED if name not in plugins))


def of_recipes() -> Source:
    """The one source of recipes (register() refuses a second): the one whose catalog the recipes' pipeline reads."""
    return named(RECIPES)


def of_prebuilt(name: str | None) -> Source:
    """The source of prebuilt builds `name` names, else the built-in one: what a library call for prebuilt builds
    that names no source answers from."""
    return named(name or PREBUILT)


def named(name: str, given: str = "--source") -> Source:
    """The source called `name`, or BadInput naming `given` (the flag, variable or file that said it); a plug-in
    that fails to load, OperationFailed naming it and why."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in _BUILT_IN:
        source: Source = attribute_of(_BUILT_IN[name])
        return source
    point = _installed().get(name)
    if point is None:
        raise BadInput(f"{given} {name!r:.40}", hint=f"choose one of {', '.join(names())}")
    return _loaded(name, point)


def _loaded(name: str, point: EntryPoint) -> Source:
    """An installed plug-in's Source: whatever its code raises while it loads, or a value that is no Source, is one
    line naming it and where it comes from (a plug-in is someone else's code: its failure ends nothing else)."""
    from pickvariant._base.text import visible  # only here: detect's path imports no more than it needs

    value = visible(point.value[:200])
    try:
        loaded = point.load()
    except Exception as error:  # any error of a third party's import is that plug-in's failure
        raise OperationFailed(
            f"source plug-in {name!r} ({value}) failed to load: {type(error).__name__}: {visible(str(error)[:200])}"
        ) from None
    if not isinstance(loaded, Source) or loaded.name != name:
        raise OperationFailed(f"source plug-in {name!r} ({value}) is not a pickvariant Source named {name!r}")
    unsaid = _unsaid(loaded)
    if unsaid:
        raise OperationFailed(f"source plug-in {name!r} ({value}): {visible(unsaid)}")
    return loaded


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
        if not any(flag in added for added in _ADDED.values()):
            continue  # an option every source takes (detect's --format json): no source need be looked for
        takers = [other.flag for other in map(named, names()) if flag in other.options]
        if takers:
            raise BadInput(f"{flag}: only with {' or '.join(takers)}", hint=f"{source.flag} {source.installs}")
