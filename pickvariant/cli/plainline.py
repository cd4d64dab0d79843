"""detect's plain JSON line (`detect --format json …`, options given plainly) parsed without typer, from the
declarations in cli/options.py: what cli/entry.py answers itself; anything else goes to the typer CLI, which owns
usage errors and help."""

from __future__ import annotations

from pickvariant.cli.options import DETECT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from pickvariant.sources.registry import Source

_BY_FLAG = {option.flag: (name, option) for name, option in DETECT.items()}
_DIGITS = frozenset("0123456789")


def plain_source(values: Mapping[str, Any], env: Mapping[str, str]) -> Source | None:
    """The source a plain detect line asks (--source, else PICKVARIANT_SOURCE, else flox), which entry's fast path
    answers as the typer CLI would; None where the typer CLI should say what is wrong (no source of that name, another
    source's option, a plug-in that fails to load)."""
    from pickvariant._base.errors import PickVariantError
    from pickvariant.cli.options import detect_source

    try:
        return detect_source(values, env, str(values["format"]))
    except PickVariantError:
        return None


def parse_plain_detect(args: list[str], formats: tuple[str, ...] = ("json",)) -> dict[str, object] | None:
    """detect's option values (by parameter name) for `detect --format json …` (or another of `formats`) given
    plainly, else None.

    None for anything the typer CLI should judge: an unknown or repeated option, a value that looks like
    an option, a choice or index it would refuse, --help, a positional argument."""
    if not args or args[0] != "detect":
        return None
    values: dict[str, object] = {name: option.default for name, option in DETECT.items()}
    seen: set[str] = set()
    position = 1
    while position < len(args):
        flag, equals, value = args[position].partition("=")
        position += 1
        if flag not in _BY_FLAG:
            return None
        name, option = _BY_FLAG[flag]
        if name in seen and not option.repeatable:
            return None
        seen.add(name)
        if not option.takes_value:
            if equals:
                return None
            values[name] = True
            continue
        if not equals:
            if position >= len(args):
                return None
            value, position = args[position], position + 1
        if value.startswith("-") or (option.choices and value not in option.choices):
            return None
        if option.kind == "int":
            if not 0 < len(value) <= 9 or not _DIGITS.issuperset(value):
                return None
            values[name] = int(value)
        elif option.repeatable:
            values[name] = [*(values[name] or ()), value]  # type: ignore[misc]  # a repeatable option's value is a list
        else:
            values[name] = value
    if values["compact"] and "format" not in seen:
        values["format"] = "json"  # --compact implies JSON, as in the typer CLI
    if values["compact"] and values["format"] != "json":
        return None  # --compact with another --format: typer refuses it
    return values if values["format"] in formats else None
