"""What a recipe declares it builds for: its compiler flags and GPU targets, read from the bindings that declare them.

A recipe reaches this only once its trust is settled (trusted.py): it is the trusted upstream's own, it is one of the
upstream's in all but its values, or the user trusts its repository. So nothing here proves anything about the text:
the values are taken for what the upstream means by them (`cpuFlags` the compiler flags; `gpuArchSM`, `gpuArchNum`,
`smCapability`, `gpuTargets`, `cudaCapabilities` the GPU targets), and build-vllm's shared table
(`cpuISA = (import ./lib/cpu-isa.nix).avx2`) gives the flags of the entry the recipe names. A binding of one of
those names that is no literal (a list joined with `++`, a call) declares nothing: the recipe is left out, said.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickvariant._base.records import keyword_record
from pickvariant.sources.flox.recipes.nixtext import NixText, NotNix, parse, parse_tree
from pickvariant.sources.flox.recipes.skeleton import Skeleton

FLAG_LIST = "cpuFlags"
TARGET_STRINGS = ("gpuArchSM", "gpuArchNum", "smCapability")
TARGET_LISTS = ("gpuTargets", "cudaCapabilities")


@keyword_record
class Reading:
    """A recipe read once: its declared bindings (nixtext), and its skeleton where it was held against the
    upstream's (trusted.py; None for a recipe of the upstream itself, or of a repository the user trusts)."""

    text: str
    nix: NixText
    skeleton: Skeleton | None = None


def read(text: str, skeleton: Skeleton | None = None) -> Reading:
    """The recipe read; NotNix when Nix could not read it as it stands."""
    return Reading(text=text, nix=parse(text, parse_tree(text)), skeleton=skeleton)


@keyword_record
class Declared:
    """The compiler flags (in order, each once) and the GPU targets (as written, with the setting that gives each)."""

    flags: tuple[str, ...]
    targets: tuple[tuple[str, str], ...]
    flag_line: int | None = None  # the line of the flag list

    def line_of(self, flag: str) -> int | None:
        return self.flag_line if flag in self.flags else None


def declared(recipe: NixText, lib_files: Mapping[str, str] = {}) -> Declared | str:
    """The recipe's declared flags and targets, or why they cannot be read (not a literal, a table not given)."""
    bound = {name for name, _ in recipe.bindings}
    flags: list[str] = []
    if FLAG_LIST in bound:
        lists = recipe.list_binding(FLAG_LIST)
        if lists is None:
            return f"{FLAG_LIST} is not a literal list of compiler flags, so what it holds is not declared"
        if len({tuple(items) for items in lists}) > 1:
            return f"it declares several {FLAG_LIST} lists"
        flags = lists[0]
    else:
        entries = recipe.binding_entries("cpuISA")
        if entries:
            table = _table_flags(entries, lib_files)
            if isinstance(table, str):
                return table
            flags = table
    targets: list[tuple[str, str]] = []
    for name in TARGET_STRINGS:
        values = recipe.string_binding(name) if name in bound else []
        if values is None:
            return f"{name} is not a literal GPU target, so what it holds is not declared"
        targets += [(value, name) for value in values]
    for name in TARGET_LISTS:
        lists = recipe.list_binding(name) if name in bound else []
        if lists is None:
            return f"{name} is not a literal list of GPU targets (or of the names that declare them)"
        targets += [(value, name) for items in lists for value in items]
    line = recipe.line_of(FLAG_LIST) if FLAG_LIST in bound else None
    return Declared(flags=tuple(dict.fromkeys(flags)), targets=tuple(targets), flag_line=line)


def _table_flags(entries: list[tuple[str, str]], lib_files: Mapping[str, str]) -> list[str] | str:
    """The flags of the table entry `cpuISA` names (build-vllm's lib/cpu-isa.nix), or why they cannot be read."""
    if len(set(entries)) != 1:
        return "cpuISA is bound to several table entries"
    file, entry = entries[0]
    path = file.removeprefix("./")
    text = lib_files.get(path)
    if text is None:
        return f"its flags come from {file}, which pickvariant was not given with it"
    try:
        table = parse(text).lists_in("flags")
    except NotNix as error:
        return f"{file} cannot be read as Nix reads it: {error}"
    if entry not in table:
        return f"{file} has no entry {entry} with a literal list of flags"
    return table[entry]
