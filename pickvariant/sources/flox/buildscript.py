"""What a recipe's build scripts and CMake defines give the compiler: read as bash reads them, against an allowlist.

A hook (`preConfigure = (old.preConfigure or "") + ''…''`) is evaluated first (nixeval.py), its `${…}`
filled in. The script is then parsed with a real bash grammar (tree-sitter-bash, bashscript.py), after every
character bash and the grammar could read differently is refused. Each statement of the tree must be one of
the shapes the build repositories' templates use: an `export` of a known variable with a literal value,
`echo` (printing, or writing one of the files the templates write), `mkdir -p`, `ln -s`, or a CMake module
written with a quoted heredoc. `CFLAGS`/`CXXFLAGS` give the compiler flags; `TORCH_CUDA_ARCH_LIST` the GPU
targets; `CUDAFLAGS` may carry include directories only. A comment is what the grammar says is a comment.
Anything else is refused with what it does: a shell can compute anything, so pickvariant reads only what it knows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pickvariant.sources.flox import bashscript
from pickvariant.sources.flox.bashscript import OPAQUE, Refused, Script
from pickvariant.sources.flox.nixeval import Opaque, Text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["Found", "Refused", "Rules", "read_define", "read_script"]

_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+-]*")
_INCLUDE = re.compile(r"-I[A-Za-z0-9_./+-]+")
_PATH = re.compile(r"[A-Za-z0-9_./+-]+")
_SIMPLE_VALUE = re.compile(r"[A-Za-z0-9._+-]*")
_DEFINE_VALUE = re.compile(r'(?P<q>"?)[A-Za-z0-9._+-]*(?P=q)(\s+#.*)?')
_CMAKE_MODULE = re.compile(r"[A-Za-z0-9_./-]+\.cmake")
_CMAKE_LINE = re.compile(
    r"if\(NOT [A-Za-z_]+\)|endif\(\)|include\([A-Za-z_]+\)"
    r'|list\(FILTER CMAKE_MODULE_PATH EXCLUDE REGEX "[A-Za-z/]+"\)'
    r'|set\((?:CMAKE_MODULE_PATH|_[a-z_]+) "\$\{(?:CMAKE_MODULE_PATH|_[a-z_]+)\}"\)'
)
_DEFINE = re.compile(r"-D(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::[A-Z]+)?=(?P<value>.*)")


@dataclass(frozen=True)
class Rules:
    """The allowlist's build-script part (recipe-allowlist.json)."""

    inert_exports: tuple[re.Pattern[str], ...]
    flag_exports: frozenset[str]
    include_exports: frozenset[str]
    target_exports: frozenset[str]
    echo_targets: frozenset[str]
    inert_defines: tuple[re.Pattern[str], ...]
    include_defines: frozenset[str]
    target_defines: frozenset[str]
    false_defines: tuple[re.Pattern[str], ...]  # settings that only take instructions away (CXX_AVX2_FOUND=FALSE)


@dataclass
class Found:
    """What the build scripts give: compiler flags and GPU targets, each with the text that gave it."""

    flags: list[str] = field(default_factory=list)
    flag_lines: list[str] = field(default_factory=list)  # the script line that gave each flag, in turn
    targets: list[tuple[str, str]] = field(default_factory=list)  # (target as written, where)


def read_script(text: Text, hook: str, rules: Rules, found: Found) -> None:
    """Every statement of one hook, checked and read into `found`; Refused at the first it does not read."""
    script = bashscript.parse(_source(text, hook))
    for statement in script.statements():
        _Statement(script, statement, rules).read(found)


def _source(text: Text, hook: str) -> str:
    pieces: list[str] = []
    for part in text.parts:
        if isinstance(part, str):
            if OPAQUE in part:
                raise Refused(part.split("\n", 1)[0], "a line holding the text pickvariant stands in for a value")
            pieces.append(part)
        elif isinstance(part, Opaque) and part.own_hook == hook:
            pieces.append("\n")  # nixpkgs' own hook, run before the recipe's lines: PyTorch's as upstream builds it
        else:
            pieces.append(OPAQUE)
    return "".join(pieces)


@dataclass
class _Statement:
    """One top-level statement of a script and the rules it is read by."""

    script: Script
    node: Node
    rules: Rules

    def refuse(self, what: str) -> Refused:
        return Refused(self.script.line_text(self.node), what)

    def read(self, found: Found) -> None:
        kind = self.node.type
        if kind == "comment":
            return
        if kind == "declaration_command":
            self._export(found)
        elif kind == "redirected_statement":
            self._redirected()
        elif kind == "command":
            self._command(self.node)
        else:
            raise self.refuse(f"a shell construct ({kind}) pickvariant does not read")

    # ------------------------------------------------------------------ commands

    def _command(self, command: Node) -> None:
        name, arguments = self._command_parts(command)
        if name == "echo":
            for argument in arguments:
                if not self.script.printed(argument):
                    raise self.refuse("an echo that does more than print")
            return
        words = [self.script.literal_word(argument) for argument in arguments]
        if name not in ("mkdir", "ln"):
            raise self.refuse("runs a command pickvariant does not read")
        if any(word is None for word in words):
            raise self.refuse(f"a {name} whose words are not all literal")
        plain = [str(word) for word in words]
        if name == "mkdir" and "-p" in plain and all(_PATH.fullmatch(word) for word in plain):
            return
        if (
            name == "ln"
            and len(plain) == 3
            and plain[0] in ("-s", "-sf", "-fs")
            and all(_PATH.fullmatch(word.replace(OPAQUE, "")) for word in plain[1:])
        ):
            return
        raise self.refuse("runs a command pickvariant does not read")

    def _command_parts(self, command: Node) -> tuple[str, list[Node]]:
        name_node = command.child_by_field_name("name")
        name = self.script.literal_word(name_node.named_children[0]) if name_node and name_node.named_children else None
        if name is None or any(child.type == "variable_assignment" for child in command.named_children):
            raise self.refuse("runs a command pickvariant does not read")
        arguments = [child for child in command.named_children if child.id != name_node.id]  # type: ignore[union-attr]
        return name, arguments

    def _redirected(self) -> None:
        body = self.node.child_by_field_name("body")
        if body is None or body.type != "command":
            raise self.refuse("a redirection pickvariant does not read")
        redirects = [child for child in self.node.named_children if child.id != body.id]
        name, arguments = self._command_parts(body)
        heredocs = [r for r in redirects if r.type == "heredoc_redirect"]
        files = [r for r in self._descendants(redirects) if r.type == "file_redirect"]
        if name == "cat" and not arguments and len(heredocs) == 1 and len(files) == 1:
            self._cmake_module(heredocs[0], files[0])
            return
        if name == "echo" and not heredocs and len(files) == 1 and len(redirects) == 1:
            target = self._file_target(files[0], ">")
            if target in self.rules.echo_targets:
                self._command(body)
                return
        raise self.refuse("an echo that does more than print" if name == "echo" else "a redirection it does not read")

    @staticmethod
    def _descendants(nodes: Sequence[Node]) -> list[Node]:
        found, pending = [], list(nodes)
        while pending:
            node = pending.pop()
            found.append(node)
            pending.extend(node.named_children)
        return found

    def _file_target(self, redirect: Node, operator: str) -> str | None:
        ops = [child.type for child in redirect.children if not child.is_named]
        destinations = redirect.children_by_field_name("destination")
        if ops != [operator] or len(destinations) != 1 or redirect.child_by_field_name("descriptor") is not None:
            return None
        return self.script.text(destinations[0])

    def _cmake_module(self, heredoc: Node, file: Node) -> None:
        target = self._file_target(file, ">")
        if target is None or not _CMAKE_MODULE.fullmatch(target):
            raise self.refuse("writes a file pickvariant does not read")
        for line in self.script.heredoc_lines(heredoc):
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and not _CMAKE_LINE.fullmatch(stripped):
                raise Refused(stripped, "writes a CMake line pickvariant does not read into a CMake module")

    # ------------------------------------------------------------------ exports

    def _export(self, found: Found) -> None:
        keyword = [child for child in self.node.children if not child.is_named]
        assignments = self.node.named_children
        if [self.script.text(k) for k in keyword] != ["export"] or len(assignments) != 1:
            raise self.refuse("a declaration pickvariant does not read")
        assignment = assignments[0]
        name_node, value = assignment.child_by_field_name("name"), assignment.child_by_field_name("value")
        operator = [self.script.text(child) for child in assignment.children if not child.is_named]
        if assignment.type != "variable_assignment" or name_node is None or value is None or operator != ["="]:
            raise self.refuse("an export pickvariant does not read")
        name = self.script.text(name_node)
        tokens = self.script.value_words(value, name)
        if tokens is None:
            raise self.refuse("a value that is computed when the build runs")
        self._read_export(name, tokens, found)

    def _read_export(self, name: str, tokens: list[str], found: Found) -> None:
        rules, line = self.rules, self.script.line_text(self.node)
        if any(pattern.fullmatch(name) for pattern in rules.inert_exports):
            if len(tokens) > 1 or not _SIMPLE_VALUE.fullmatch("".join(tokens)):
                raise self.refuse(f"sets {name} to a value pickvariant does not read")
            return
        if name in rules.flag_exports or name in rules.include_exports:
            for token in tokens:
                if token == f"${name}" or _INCLUDE.fullmatch(token):
                    continue
                if name in rules.flag_exports and _FLAG.fullmatch(token):
                    found.flags.append(token)
                    found.flag_lines.append(line)
                    continue
                raise self.refuse(f"sets {name} to {token}, which pickvariant cannot read as compiler flags")
            return
        if name in rules.target_exports:
            if any(token.startswith("$") for token in tokens):
                raise self.refuse(f"sets {name} to a value pickvariant does not read")
            found.targets.extend((target, f"{name} in a build script") for target in _targets(line, tokens, ";"))
            return
        raise self.refuse(f"sets {name}")


def _targets(line: str, tokens: Sequence[str], separator: str) -> list[str]:
    targets = [target for token in tokens for target in token.split(separator) if target]
    if not targets:
        raise Refused(line, "no GPU target")
    return targets


def read_define(define: str, rules: Rules, found: Found) -> None:
    """One cmakeFlags item, checked and read into `found`."""
    match = _DEFINE.fullmatch(define)
    if match is None:
        raise Refused(define, "a CMake argument that is no -DNAME=VALUE")
    name, value = match["name"], match["value"]
    if any(pattern.fullmatch(name) for pattern in rules.inert_defines):
        if not _DEFINE_VALUE.fullmatch(value):
            raise Refused(define, f"sets {name} to a value pickvariant does not read")
        return
    if any(pattern.fullmatch(name) for pattern in rules.false_defines):
        if value not in ("FALSE", "OFF", "0"):
            raise Refused(define, f"sets {name} to {value}, where pickvariant reads only FALSE")
        return
    if name in rules.include_defines:
        if not all(_INCLUDE.fullmatch(token) for token in value.split()):
            raise Refused(define, f"sets {name} to more than include directories")
        return
    if name in rules.target_defines:
        found.targets.extend((target, f"-D{name}") for target in _targets(define, [value], ";"))
        return
    raise Refused(define, f"sets {name}")
