"""Prove a recipe's instruction set and GPU architectures from the whole recipe, or say why it cannot be.

Two passes over the recipe (and over the repository files it imports, where the caller lets it):
1. Its syntax against the allowlist (data/recipe-allowlist.json: what the build repositories'
   templates contain): every construct, every name it binds, every argument it takes and every
   attribute it selects. Anything else (`NIX_CFLAGS_COMPILE`, `env`, `localSystem`, `withCFlags`, a
   `with`, an `if`) leaves the recipe out, naming the line. `meta` and `passthru` never reach the build
   and are not read.
2. Its evaluation (nixeval.py), names resolved as Nix resolves them: every setting handed to nixpkgs
   that can set the CPU instruction set or the GPU architectures is read with its evaluated value:
   the build scripts' `export CFLAGS/CXXFLAGS` (the compiler flags), `gpuTargets`, `cudaCapabilities`,
   `TORCH_CUDA_ARCH_LIST`, CMake's architecture defines (the GPU targets); any other line of a build
   script or CMake define is refused (buildscript.py).
The result is what the build gets, whatever names the recipe uses; the caller compares it with the name.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pickvariant._base.records import keyword_record
from pickvariant.sources.flox import buildscript, patches
from pickvariant.sources.flox.nixeval import RECIPE, AttrSet, Evaluation, NixList, Opaque, Text, Thunk, Unprovable
from pickvariant.sources.flox.nixtext import NotNix, parse_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

ALLOWLIST = Path(__file__).parent / "data" / "recipe-allowlist.json"


@keyword_record
class RecipeProof:
    """What the build gets: the compiler flags of its build scripts, and every GPU target it sets."""

    flags: tuple[str, ...]  # in the order the scripts give them, each once
    targets: tuple[tuple[str, str], ...]  # (target as written, the setting that gave it)
    flag_lines: tuple[tuple[str, int], ...] = ()  # (flag, the recipe's line that gives it), the first for each

    def line_of(self, flag: str) -> int | None:
        return next((line for found, line in self.flag_lines if found == flag), None)


class NotProven(Exception):
    """The recipe's instruction set or GPU architectures cannot be proven: one sentence, naming the line."""


@dataclass(frozen=True)
class Allowlist:
    """data/recipe-allowlist.json, read once."""

    constructs: frozenset[str]
    inert: frozenset[str]  # bindings whose values never reach the build (meta, passthru)
    bindings: tuple[str, ...]  # patterns, each matched whole
    arguments: tuple[str, ...]
    selected: tuple[str, ...]
    hooks: frozenset[str]
    target_settings: frozenset[str]
    rules: buildscript.Rules
    patches: patches.PatchRules


@functools.cache
def allowlist() -> Allowlist:
    data = json.loads(ALLOWLIST.read_text(encoding="utf-8"))
    exports, defines = data["exports"], data["cmake_defines"]
    return Allowlist(
        constructs=frozenset(data["constructs"]),
        inert=frozenset(data["inert_bindings"]),
        bindings=tuple(data["bindings"]),
        arguments=tuple(data["arguments"]),
        selected=tuple(data["selected"]),
        hooks=frozenset(data["script_hooks"]),
        target_settings=frozenset(data["gpu_target_settings"]),
        rules=buildscript.Rules(
            inert_exports=tuple(re.compile(p) for p in exports["inert"]),
            flag_exports=frozenset(exports["compiler_flags"]),
            include_exports=frozenset(exports["include_only"]),
            target_exports=frozenset(exports["gpu_targets"]),
            echo_targets=frozenset(data["echo_targets"]),
            inert_defines=tuple(re.compile(p) for p in defines["inert"]),
            include_defines=frozenset(defines["include_only"]),
            target_defines=frozenset(defines["gpu_targets"]),
            false_defines=tuple(re.compile(p) for p in defines["false_only"]),
        ),
        patches=patches.PatchRules(
            refused=tuple(re.compile(p) for p in data["patches"]["refused_in_added_lines"]),
            fetched_hashes=dict(data["patches"]["fetched_hashes"]),
        ),
    )


def _names(entries: Iterable[str], extra: Iterable[str] = ()) -> re.Pattern[str]:
    return re.compile("|".join([*entries, *(re.escape(name) for name in extra)]))


def prove(
    text: str,
    files: Mapping[str, str | None] = {},
    table_names: Iterable[str] = (),
    patch_files: Mapping[str, str] = {},
) -> RecipeProof:
    """The recipe's proof; NotProven with the line and what was found.

    `files`: the repository files the recipe may import, by path from .flox/pkgs/ (build-vllm's `lib/*.nix`), None
    for one proven on its own (a sibling PyTorch recipe);
    `table_names`: names those files may bind besides the allowlist's (the instruction sets of cpu-isa.nix);
    `patch_files`: the branch's patch files by the same paths, read where the recipe applies one (patches.py)."""
    texts = {RECIPE: text, **{file: source for file, source in files.items() if source is not None}}
    for file, source in texts.items():
        try:
            root = parse_tree(source)
        except NotNix as error:
            raise NotProven(f"{_where(file, 0)}: it cannot be read as Nix reads it: {error}") from None
        _check_syntax(root, file, tuple(table_names))
    reader = _Reader(text, patch_files)
    evaluation = reader.evaluation = Evaluation(files, reader.take)
    try:
        evaluation.run(text)
    except Unprovable as error:
        raise NotProven(f"{error}: its instruction set and GPU architectures cannot be proven") from None
    except buildscript.Refused as refused:
        raise NotProven(reader.refusal(refused)) from None
    except RecursionError:
        raise NotProven("it nests too deeply to be evaluated") from None
    found = reader.found
    return RecipeProof(
        flags=tuple(dict.fromkeys(found.flags)),
        targets=tuple(found.targets),
        flag_lines=tuple(
            (flag, reader.line_of(text, line))
            for flag, (text, line) in zip(found.flags, reader.flag_sources, strict=True)
        ),
    )


def _where(file: str, line: int) -> str:
    where = f"line {line}" if line else "the recipe"
    return where if file == RECIPE else f"{where} of {file}"


def _check_syntax(root: Node, file: str, table_names: tuple[str, ...]) -> None:
    """Every construct and name of the file on the allowlist; meta and passthru are not read."""
    allow = allowlist()
    constructs, inert = allow.constructs, allow.inert
    bindings = _names(allow.bindings, (*table_names, *inert))
    arguments, selected = _names(allow.arguments), _names(allow.selected)
    pending = [root]
    while pending:
        node = pending.pop()
        if node.is_named and node.type not in constructs:
            raise NotProven(f"{_where(file, _line(node))}: a Nix construct ({node.type}) pickvariant does not read")
        if node.type == "binding":
            names = _path_names(node.child_by_field_name("attrpath"))
            _allowed(names, bindings, file, node, "binds")
            if names and names[0] in inert:
                continue  # never reaches the build
        elif node.type == "inherited_attrs":
            _allowed(_path_names(node), bindings, file, node, "binds")
        elif node.type == "formal":
            _allowed(_path_names(node, "name"), arguments, file, node, "takes the argument")
        elif node.type == "select_expression":
            names = _path_names(node.child_by_field_name("attrpath"))
            _allowed([n for n in names if not bindings.fullmatch(n)], selected, file, node, "uses")
        pending.extend(reversed(node.children))


def _path_names(node: Node | None, field: str = "attr") -> list[str]:
    if node is None:
        return []
    return [(child.text or b"").decode("utf-8", "replace") for child in node.children_by_field_name(field)]


def _allowed(names: list[str], pattern: re.Pattern[str], file: str, node: Node, verb: str) -> None:
    for name in names:
        if not pattern.fullmatch(name):
            raise NotProven(
                f"{_where(file, _line(node))} {verb} {_shown(name)}: pickvariant does not read it, "
                "so the instruction set cannot be proven"
            )


def _line(node: Node) -> int:
    return int(node.start_point[0]) + 1


def _shown(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_.'-]{1,80}", name) else repr(name[:80])


class _Reader:
    """Takes each setting nixeval offers that this module reads; the rest are inspected further."""

    def __init__(self, text: str, patch_files: Mapping[str, str]) -> None:
        self.patch_files = patch_files
        self.lines = text.split("\n")
        self.found = buildscript.Found()
        self.allow = allowlist()
        self.line = 0
        self.flag_sources: list[tuple[str, int]] = []  # (script line, its hook's line) of each flag found
        self.evaluation: Evaluation | None = None

    def take(self, name: str, thunk: Thunk, owner: AttrSet) -> bool:
        self.line = _line(thunk.node) if thunk.node is not None else owner.line
        if name in self.allow.inert:
            return True
        if name in self.allow.hooks:
            before = len(self.found.flags)
            buildscript.read_script(self._text(thunk, name), name, self.allow.rules, self.found)
            self.flag_sources.extend((text, self.line) for text in self.found.flag_lines[before:])
        elif name in self.allow.target_settings:
            self.found.targets.extend((target, name) for target in self._strings(thunk, name))
        elif name == "cmakeFlags":
            for define in self._strings(thunk, name):
                buildscript.read_define(define, self.allow.rules, self.found)
        elif name == "patches":
            patches.judge(thunk, self._force, self.allow.patches, self.patch_files)
        elif name == "ninjaFlags":
            if not all(re.fullmatch(r"-j\d+", flag) for flag in self._strings(thunk, name)):
                raise Unprovable(RECIPE, thunk.node, "ninjaFlags other than a job count")
        else:
            return False
        return True

    def _text(self, thunk: Thunk, name: str) -> Text:
        value = self._force(thunk)
        if isinstance(value, Opaque):
            value = Text((value,))
        if not isinstance(value, Text):
            raise Unprovable(thunk.file, thunk.node, f"{name} is no string")
        return value

    def _strings(self, thunk: Thunk, name: str) -> list[str]:
        value = self._force(thunk)
        if not isinstance(value, NixList) or any(part.own_hook != name for part in value.spliced):
            raise Unprovable(thunk.file, thunk.node, f"{name} is not a list pickvariant can read whole")
        strings = []
        for item in value.items:
            text = self._force(item)
            literal = text.literal() if isinstance(text, Text) else None
            if literal is None:
                raise Unprovable(item.file, item.node or thunk.node, f"an item of {name} is not a string it can read")
            strings.append(literal)
        return strings

    def _force(self, thunk: Thunk) -> object:
        assert self.evaluation is not None  # set as soon as the evaluation exists
        return self.evaluation.force(thunk)

    def line_of(self, script_line: str, fallback: int) -> int:
        """The recipe's line that holds a build script's line as written, else the line of its hook."""
        return next(
            (number for number, text in enumerate(self.lines, start=1) if script_line and script_line in text),
            fallback,
        )

    def refusal(self, refused: buildscript.Refused) -> str:
        """'line N: …' for a build-script line, found in the recipe's text where it is written there."""
        line = self.line_of(refused.text, self.line)
        shown = refused.text if len(refused.text) <= 100 else refused.text[:97] + "..."
        return (
            f"{_where(RECIPE, line)} {refused.what} ({_printable(shown)}): "
            "its instruction set and GPU architectures cannot be proven"
        )


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text).replace("\0", "${…}")
