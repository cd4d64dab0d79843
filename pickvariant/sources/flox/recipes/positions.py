"""The value positions of a recipe: the short, named list of places where a fork may differ from the upstream's
recipe, and the literal each may hold.

Two kinds: a binding of the recipe's Nix code whose value is a literal of its grammar (`VALUES`: `cpuFlags = [ … ]`,
`gpuArchSM = "9.0"`, `version = "2.10.0"`, `hash` inside `src`, …), and a piece of a string's text matched whole by a
pattern (`IN_STRINGS`: the nixpkgs revision in its URL, `export MAX_JOBS=32`, a line that only prints with `echo
"…"`, …). No grammar admits a quote, `$`, backslash, apostrophe or line break, so no value changes how the text
around it is read, by Nix or by bash. Anything else in such a place is code, compared as code (skeleton.py).
"""

from __future__ import annotations

import re

from pickvariant._base.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

# Value kinds: what the classifier reads a hole as.
FLAGS = "compiler flags"
TARGETS = "GPU targets"
RELEASE = "version"
SOURCE_HASH = "source hash"
NIXPKGS = "nixpkgs revision"
JOBS = "build parallelism"
NAME = "package name"
TEXT = "text"

_FLAG = r"[-+=.,/:A-Za-z0-9_]{1,100}"
_TARGET = r"[A-Za-z0-9._+]{1,20}"
_RELEASE = r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,3}(?:[a-z]{1,5}[0-9]{0,4})?"
_HASH = r"(?:sha256|sha512)-[A-Za-z0-9+/]{40,90}={0,2}|[0-9a-z]{52}|[0-9a-f]{64}"
_NAME = r"[A-Za-z0-9][A-Za-z0-9._+-]{0,200}"
# What an `echo "…"` may print: no quote, `$`, backtick, backslash or apostrophe, so neither bash nor Nix reads
# anything in it but text.
_SAID = r"[^\x00-\x1f\x7f\"$`\\']{0,300}"


@record
class Position:
    """A binding whose literal value is a hole: its name, the binding it must lie inside (or any), its value."""

    name: str
    inside: str | None
    kind: str
    shape: str  # "list", "string", "integer" or "text" (any string without `${…}`)
    pattern: str  # what each string or number of it must be, whole


# The value positions of a recipe's Nix code, by the binding that holds them.
VALUES = (
    Position("cpuFlags", None, FLAGS, "list", _FLAG),
    Position("gpuTargets", None, TARGETS, "list", _TARGET),
    Position("cudaCapabilities", None, TARGETS, "list", _TARGET),
    Position("gpuArchSM", None, TARGETS, "string", _TARGET),
    Position("gpuArchNum", None, TARGETS, "string", _TARGET),
    Position("smCapability", None, TARGETS, "string", _TARGET),
    Position("version", None, RELEASE, "string", _RELEASE),
    Position("hash", "src", SOURCE_HASH, "string", _HASH),
    Position("sha256", "src", SOURCE_HASH, "string", _HASH),
    Position("pname", None, NAME, "string", _NAME),
    Position("variantName", None, NAME, "string", _NAME),
    Position("ninjaFlags", None, JOBS, "list", r"-j[0-9]{1,4}"),
    Position("NIX_BUILD_CORES", None, JOBS, "integer", r"[0-9]{1,4}"),
    Position("description", "meta", TEXT, "text", ""),
    Position("longDescription", "meta", TEXT, "text", ""),
)
BY_NAME = {position.name: position for position in VALUES}
# A binding's last name, read from its text (`meta.description =`): only one named in VALUES is looked at further.
BOUND = re.compile(rb"(?:[A-Za-z_][\w'-]*\.)*([A-Za-z_][\w'-]*)[ \t\r\n]*=")

# The value positions inside a string (a URL, a build script): each pattern's group `v` is the hole, the rest of
# the match stays text. A line is matched whole, so a line continuation or a second command is never inside one.
_NL = r"(?:^|(?<=\n))"
_EOL = r"[ \t]*(?=\n|$)"
IN_STRINGS = (
    (NIXPKGS, re.compile(r"github\.com/NixOS/nixpkgs/archive/(?P<v>[0-9a-f]{40})\.tar\.gz")),
    (JOBS, re.compile(_NL + r"[ \t]*export MAX_JOBS=(?P<v>[0-9]{1,4})" + _EOL)),
    (RELEASE, re.compile(_NL + r"[ \t]*export PYTORCH_BUILD_VERSION=(?P<v>" + _RELEASE + ")" + _EOL)),
    (RELEASE, re.compile(_NL + r"[ \t]*echo \"(?P<v>" + _RELEASE + r")\" > version\.txt" + _EOL)),
    (RELEASE, re.compile(r"^-DTORCH_BUILD_VERSION=(?P<v>" + _RELEASE + r")$")),
    (TEXT, re.compile(_NL + r"[ \t]*echo \"(?P<v>[^\"\n]{0,300})\"" + _EOL)),
)
INTERPOLATED = "\x00"  # stands for a `${…}` in a string's text (a recipe holding a NUL is refused before)
# A value position holds a literal of its size at most (a list of flags, a description): larger, it is code.
_MOST_ITEMS = 128
_MOST_BYTES = 8192


def holes_in(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each value position in a string's text, leftmost first, none overlapping."""
    found = []
    for kind, pattern in IN_STRINGS:
        for match in pattern.finditer(text):
            value = match.group("v")
            if kind == TEXT and not re.fullmatch(_SAID, value.replace(INTERPOLATED, "")):
                continue
            found.append((match.start("v"), match.end("v"), kind))
    found.sort()
    kept: list[tuple[int, int, str]] = []
    for span in found:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def value_of(node: Node, position: Position) -> tuple[str, ...] | None:
    """The literal a value position holds, in its grammar; None when it holds anything else (then it is code)."""
    pattern = re.compile(position.pattern) if position.pattern else None
    if position.shape == "integer":
        text = _text(node)
        return (text,) if node.type == "integer_expression" and pattern and pattern.fullmatch(text) else None
    if position.shape == "list":
        if node.type != "list_expression" or node.named_child_count > _MOST_ITEMS:
            return None
        items = [child for child in node.named_children if child.type != "comment"]
        values = [_plain_string(item) for item in items]
        if any(value is None or not (pattern and pattern.fullmatch(value)) for value in values):
            return None
        return tuple(value for value in values if value is not None)
    if node.end_byte - node.start_byte > _MOST_BYTES:
        return None
    value = _plain_string(node, any_text=position.shape == "text")
    if value is None or (pattern is not None and not pattern.fullmatch(value)):
        return None
    return (value,)


def _plain_string(node: Node, any_text: bool = False) -> str | None:
    """A string literal's text when it is one fragment (or none) and no `${…}`; for `text`, any fragments."""
    if node.type not in ("string_expression", "indented_string_expression"):
        return None
    parts = [part for part in node.named_children if part.type != "comment"]
    if any_text:
        return None if any(part.type == "interpolation" for part in parts) else _text(node)
    if node.type != "string_expression" or any(part.type != "string_fragment" for part in parts) or len(parts) > 1:
        return None
    return _text(parts[0]) if parts else ""


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")
