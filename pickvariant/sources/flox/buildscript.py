"""What a recipe's build scripts and CMake defines give the compiler: read line by line against an allowlist.

A hook (`preConfigure = (old.preConfigure or "") + ''…''`) is evaluated first (nixeval.py), its `${…}`
filled in. Each of its lines must then be one of the shapes the build repositories' templates use: an
`export` of a known variable, `echo`, `mkdir -p`, `ln -s`, or a CMake module written with a heredoc.
`CFLAGS`/`CXXFLAGS` give the compiler flags; `TORCH_CUDA_ARCH_LIST` the GPU targets; `CUDAFLAGS` and
`CMAKE_CUDA_FLAGS` may carry include directories only. Any other line, or a value that is not certain,
is refused with what it does: a shell can compute anything, so pickvariant reads only what it knows.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from pickvariant.sources.flox.nixeval import Opaque, Text

_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+-]*")
_INCLUDE = re.compile(r"-I[A-Za-z0-9_./+-]+")
_PATH = re.compile(r"[A-Za-z0-9_./+-]+")
_OPAQUE = "\0"  # stands for a value interpolated from nixpkgs (a store path) in a line
_SHELL_SPECIAL = re.compile(r"[;&|<>`\\]|\$\(")
_EXPORT = re.compile(r"export\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)")
_SIMPLE_VALUE = re.compile(r'(?P<q>"?)[A-Za-z0-9._+-]*(?P=q)(\s+#.*)?')
_HEREDOC = re.compile(r"cat\s*>\s*(?P<path>[A-Za-z0-9_./-]+\.cmake)\s*<<\s*(?P<q>'?)(?P<end>[A-Z]+)(?P=q)")
_CMAKE_LINE = re.compile(
    r"if\(NOT [A-Za-z_]+\)|endif\(\)|include\([A-Za-z_]+\)"
    r'|list\(FILTER CMAKE_MODULE_PATH EXCLUDE REGEX "[A-Za-z/]+"\)'
    r'|set\((?:CMAKE_MODULE_PATH|_[a-z_]+) "\$\{(?:CMAKE_MODULE_PATH|_[a-z_]+)\}"\)'
)
_DEFINE = re.compile(r"-D(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::[A-Z]+)?=(?P<value>.*)")


class Refused(Exception):
    """A line or define pickvariant does not read: the text, and what it does."""

    def __init__(self, text: str, what: str) -> None:
        super().__init__(what)
        self.text = text
        self.what = what


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
    """Every line of one hook, checked and read into `found`; Refused at the first it does not read."""
    lines = _lines(text, hook)
    ending: str | None = None
    for raw in lines:
        line = raw.strip()
        if ending is not None:
            if line == ending:
                ending = None
            elif line and not line.startswith("#") and not _CMAKE_LINE.fullmatch(line):
                raise Refused(line, "writes a CMake line pickvariant does not read into a CMake module")
            continue
        if not line or line.startswith("#"):
            continue
        heredoc = _HEREDOC.fullmatch(line)
        if heredoc:
            ending = heredoc["end"]
            continue
        _read_line(line, rules, found)
    if ending is not None:
        raise Refused(ending, "a heredoc that never ends")


def _lines(text: Text, hook: str) -> list[str]:
    pieces: list[str] = []
    for part in text.parts:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, Opaque) and part.own_hook == hook:
            pieces.append("\n")  # nixpkgs' own hook, run before the recipe's lines: PyTorch's as upstream builds it
        else:
            pieces.append(_OPAQUE)
    return "".join(pieces).splitlines()


def _read_line(line: str, rules: Rules, found: Found) -> None:
    export = _EXPORT.fullmatch(line)
    if export:
        _read_export(line, export["name"], export["value"].strip(), rules, found)
        return
    command = line.split(None, 1)[0]
    if command == "echo":
        _read_echo(line, rules)
        return
    if command == "mkdir" and all(_PATH.fullmatch(word) for word in line.split()[1:]) and "-p" in line.split():
        return
    words = line.split()
    if (
        command == "ln"
        and len(words) == 4
        and words[1] in ("-s", "-sf", "-fs")
        and all(_PATH.fullmatch(word.replace(_OPAQUE, "")) for word in words[2:])
    ):
        return
    raise Refused(line, "runs a command pickvariant does not read")


def _read_echo(line: str, rules: Rules) -> None:
    """`echo …` prints, or writes one of the files the templates write (`> version.txt`); nothing else."""
    if "`" in line or "$(" in line:  # expanded inside double quotes too
        raise Refused(line, "an echo that runs a command")
    redirect = re.fullmatch(r"(?P<body>.*?)\s*>\s*(?P<target>[^\s<>|&;]+)", line)
    if redirect and redirect["target"] in rules.echo_targets:
        line = redirect["body"]
    try:
        words = list(shlex.shlex(line.replace(_OPAQUE, "x"), posix=True, punctuation_chars=";&|<>()"))
    except ValueError:
        raise Refused(line, "an echo whose quoting does not close") from None
    if any(word and all(ch in ";&|<>()" for ch in word) for word in words):
        raise Refused(line, "an echo that does more than print")


def _read_export(line: str, name: str, value: str, rules: Rules, found: Found) -> None:
    if any(pattern.fullmatch(name) for pattern in rules.inert_exports):
        if not _SIMPLE_VALUE.fullmatch(value):
            raise Refused(line, f"sets {name} to a value pickvariant does not read")
        return
    tokens = _quoted_words(line, value)
    if name in rules.flag_exports or name in rules.include_exports:
        for token in tokens:
            if token in (f"${name}", f"${{{name}}}") or _INCLUDE.fullmatch(token):
                continue
            if name in rules.flag_exports and _FLAG.fullmatch(token):
                found.flags.append(token)
                found.flag_lines.append(line)
                continue
            raise Refused(line, f"sets {name} to {_shown(token)}, which pickvariant cannot read as compiler flags")
        return
    if name in rules.target_exports:
        found.targets.extend((target, f"{name} in a build script") for target in _targets(line, tokens, ";"))
        return
    raise Refused(line, f"sets {name}")


def _quoted_words(line: str, value: str) -> list[str]:
    """The words of a value written `"…"` or bare, with no quoting, expansion or special character beyond `$NAME`."""
    inner = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if '"' in inner or "'" in inner or _SHELL_SPECIAL.search(inner) or _OPAQUE in inner:
        raise Refused(line, "a value that is computed when the build runs")
    return inner.split()


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
        if not _SIMPLE_VALUE.fullmatch(value):
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


def _shown(token: str) -> str:
    return token.replace(_OPAQUE, "${…}")
