"""What a recipe declares it builds for: its compiler flags and GPU targets, read from its value positions.

A recipe reaches this only once its trust is settled (trusted.py): it is the trusted upstream's own, its skeleton is
one of the upstream's, or the user trusts its repository. So nothing here proves anything about the text: the
values the skeleton's holes hold are taken for what the upstream recipe they match means by them (`cpuFlags` the
compiler flags, `gpuArchSM`, `gpuTargets`, `cudaCapabilities`, `smCapability` the GPU targets), and build-vllm's
shared table (`cpuISA = (import ./lib/cpu-isa.nix).avx2`) gives the flags of the entry the recipe names.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickvariant._base.records import keyword_record
from pickvariant.sources.flox import skeleton as holes
from pickvariant.sources.flox.nixtext import NixText, NotNix, parse, parse_tree
from pickvariant.sources.flox.skeleton import Skeleton, skeleton_of


@keyword_record
class Reading:
    """A recipe read once: its declared bindings (nixtext) and its skeleton, from one syntax tree."""

    text: str
    nix: NixText
    skeleton: Skeleton


def read(text: str, skeleton: Skeleton | None = None) -> Reading:
    """The recipe read; NotNix when Nix could not read it as it stands. `skeleton`: where the caller has it already."""
    root = parse_tree(text)
    return Reading(text=text, nix=parse(text, root), skeleton=skeleton or skeleton_of(text, root))


@keyword_record
class Declared:
    """The compiler flags (in order, each once) and the GPU targets (as written, with the setting that gives each)."""

    flags: tuple[str, ...]
    targets: tuple[tuple[str, str], ...]
    flag_lines: tuple[tuple[str, int], ...] = ()  # (flag, the line that declares it), the first for each

    def line_of(self, flag: str) -> int | None:
        return next((line for found, line in self.flag_lines if found == flag), None)


def declared(recipe: NixText, skeleton: Skeleton, lib_files: Mapping[str, str] = {}) -> Declared | str:
    """The recipe's declared flags and targets, or why they cannot be read (a second flag list, a table not given)."""
    unread = _unread(recipe, skeleton)
    if unread:
        return unread
    flag_holes = skeleton.values(holes.FLAGS)
    flags: list[tuple[str, int]] = [(flag, hole.line) for hole in flag_holes for flag in hole.value]
    if len(flag_holes) > 1 and len({hole.value for hole in flag_holes}) > 1:
        return f"it declares several cpuFlags lists (lines {', '.join(str(h.line) for h in flag_holes)})"
    if not flag_holes:
        entries = recipe.binding_entries("cpuISA")
        if entries:
            table = _table_flags(entries, lib_files)
            if isinstance(table, str):
                return table
            flags = [(flag, 0) for flag in table]
    targets = tuple((value, hole.name) for hole in skeleton.values(holes.TARGETS) for value in hole.value)
    unique = dict.fromkeys(flag for flag, _ in flags)
    return Declared(
        flags=tuple(unique),
        targets=targets,
        flag_lines=tuple((flag, next(line for found, line in flags if found == flag)) for flag in unique),
    )


def _unread(recipe: NixText, skeleton: Skeleton) -> str | None:
    """Why a value position the recipe binds is not one that can be read (a list joined with `++`, a computed
    string): its values are then not declared, and nothing is guessed. A target list may name the bindings that
    declare its targets (`gpuTargets = [ gpuArchSM ]`)."""
    bound = {name for name, _ in recipe.bindings}
    read = {hole.name for hole in skeleton.holes}
    for position in holes.VALUES:
        if position.name not in bound or position.name in read or position.kind not in (holes.FLAGS, holes.TARGETS):
            continue
        if position.shape == "list" and recipe.list_binding(position.name) is not None:
            continue  # items that are names of declared targets: those are read where they are bound
        shape = "list of " if position.shape == "list" else ""
        return f"{position.name} is not a literal {shape}{position.kind}, so what it holds is not declared"
    return None


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
