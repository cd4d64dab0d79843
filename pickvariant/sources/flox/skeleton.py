"""A recipe reduced to its skeleton: its syntax tree with the value positions replaced by holes.

A fork's recipe is classified only where its skeleton is one of the trusted upstream's (trusted.py): then the fork
differs from an upstream recipe in nothing but values, and each value means what it means there. The value
positions are a short, named list, `VALUES` and `IN_STRINGS` below; what each may hold is a value grammar that no
Nix or bash syntax can get through (no quote, `$`, backslash, apostrophe or line break), so a hole never changes
how the text around it is read. Comments and the whitespace between tokens are dropped; the text of a string
(a build script) is kept byte for byte outside its holes.

The tree comes from tree-sitter-nix (nixtext.parse_tree); the walk keeps its own stack and is linear in the
recipe's size. Nothing is evaluated: what a construct means is never decided here.
"""

from __future__ import annotations

import bisect
import hashlib
import re

from pickvariant._base.records import keyword_record, record
from pickvariant.sources.flox.nixtext import NotNix, parse_tree

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
_BY_NAME = {position.name: position for position in VALUES}

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
_INTERPOLATED = "\x00"  # stands for a `${…}` in a string's text (a recipe holding a NUL is refused before)
_STRINGS = frozenset(("string_expression", "indented_string_expression"))
_PATHS = frozenset(("path_expression", "hpath_expression"))
# What the recipe may not hold anywhere: C0 controls but tab, line feed and carriage return, DEL, and every other
# Unicode space, separator or invisible format character. tree-sitter skips any Unicode space between tokens where
# Nix stops with an error, and a terminal shows none of them: where they are, the two could read the recipe apart.
_ODD = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\xa0\xad\u034f\u061c\u1680\u180e\u2000-\u200f"
    "\u2028-\u202f\u205f-\u206f\u3000\ufeff\ufff9-\ufffb]"
)


@keyword_record
class Hole:
    kind: str
    name: str  # the binding, or the pattern's kind
    value: tuple[str, ...]  # a list's items, or the one value
    line: int


@keyword_record
class Skeleton:
    """The recipe without its values: tokens (a hole as its kind), the line of each, the holes and a digest."""

    tokens: tuple[str, ...]
    lines: tuple[int, ...]
    holes: tuple[Hole, ...]
    paths: tuple[tuple[str, int], ...]  # every path literal (the files it brings in), with its line

    @property
    def digest(self) -> str:
        return hashlib.sha256("\x1e".join(self.tokens).encode("utf-8", "surrogatepass")).hexdigest()

    def values(self, kind: str) -> list[Hole]:
        return [hole for hole in self.holes if hole.kind == kind]


def skeleton_of(text: str, root: Node | None = None) -> Skeleton:
    """The recipe's skeleton; NotNix when Nix could not read it as it stands, or pickvariant could not read it as Nix.
    `root`: its syntax tree where the caller parsed it already."""
    return _Walk(text).run(root)


def shown(token: str) -> str:
    """A token as a sentence shows it: a hole by its kind, text as written (escaped by the caller)."""
    if token.startswith("\x1d"):
        return f"<{token[1:]}>"
    return token.split("\x1f", 1)[-1]


class _Walk:
    """One pass over the syntax tree with a cursor (a deeply nested recipe must not exhaust Python's stack)."""

    def __init__(self, text: str) -> None:
        self.source = text.encode("utf-8", "surrogatepass")
        self.line_starts = [0, *(match.end() for match in re.finditer(rb"\n", self.source))]
        self.tokens: list[str] = []
        self.offsets: list[int] = []
        self.holes: list[Hole] = []
        self.paths: list[tuple[str, int]] = []
        self.values: dict[int, tuple[Position, tuple[str, ...]]] = {}  # a value position's literal, by node id

    def run(self, root: Node | None) -> Skeleton:
        odd = _ODD.search(self.source.decode("utf-8", "surrogatepass"))
        if odd:
            offset = len(self.source.decode("utf-8", "surrogatepass")[: odd.start()].encode("utf-8", "surrogatepass"))
            raise NotNix(
                f"line {self._line(offset)} holds {odd.group()!a}, a character Nix and pickvariant may read apart"
            )
        try:
            self.subtree(parse_tree(self.source.decode("utf-8", "surrogatepass")) if root is None else root)
        except RecursionError:
            raise NotNix("its strings and interpolations nest too deeply to be read") from None
        lines = [bisect.bisect_right(self.line_starts, offset) for offset in self.offsets]
        return Skeleton(tokens=tuple(self.tokens), lines=tuple(lines), holes=tuple(self.holes), paths=tuple(self.paths))

    def subtree(self, top: Node) -> None:
        """Every token of `top`'s subtree in order; a string's interpolations walk theirs through this again.

        Between two tokens there is only what tree-sitter skips: a comment (a node, left out) or whitespace, which
        `run` has made sure is Nix's own (space, tab, line feed, carriage return) by refusing every other."""
        cursor = top.walk()
        tokens, offsets, values, source = self.tokens, self.offsets, self.values, self.source
        while True:
            node = cursor.node
            assert node is not None  # a cursor always stands on a node; the binding types it Optional
            kind = node.type
            descend = False
            if kind == "comment":
                pass
            elif node.id in values:  # a value position's literal: one hole for the whole of it
                position, read = values[node.id]
                self.hole(position.kind, position.name, read, node.start_byte)
            elif kind in _STRINGS:
                self._string(node)
            elif node.child_count == 0:
                start = node.start_byte
                tokens.append(kind + "\x1f" + source[start : node.end_byte].decode("utf-8", "surrogatepass"))
                offsets.append(start)
            else:
                descend = True
                if kind == "binding":
                    self._binding(node)
                elif kind in _PATHS:
                    self.paths.append((_text(node), self._line(node.start_byte)))
            if descend and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent() or cursor.node == top:
                    return

    def _binding(self, node: Node) -> None:
        """Marks the value of a value position, when it is a literal of its grammar."""
        path, value = node.child_by_field_name("attrpath"), node.child_by_field_name("expression")
        if path is None or value is None or not path.named_child_count:
            return
        position = _BY_NAME.get(_text(path.named_children[-1]))
        if position is None or (position.inside and position.inside not in _enclosing(node)):
            return
        read = _value(value, position)
        if read is not None:
            self.values[value.id] = (position, read)

    def _line(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def token(self, kind: str, text: str, offset: int) -> None:
        self.tokens.append(f"{kind}\x1f{text}")
        self.offsets.append(offset)

    def hole(self, kind: str, name: str, value: tuple[str, ...], offset: int) -> None:
        self.tokens.append(f"\x1d{kind}")
        self.offsets.append(offset)
        self.holes.append(Hole(kind=kind, name=name, value=value, line=self._line(offset)))

    def _string(self, node: Node) -> None:
        """A string's text byte for byte, a token a line; its `${…}` walked as code; its value positions holes."""
        opening, *parts, closing = node.children
        self.token(opening.type, _text(opening), opening.start_byte)
        pieces: list[tuple[str, int] | Node] = []  # text with its offset, or an interpolation
        cursor = opening.end_byte
        for part in [*(p for p in parts if p.type == "interpolation"), closing]:
            if part.start_byte > cursor:
                pieces.append((self.source[cursor : part.start_byte].decode("utf-8", "surrogatepass"), cursor))
            if part is not closing:
                pieces.append(part)
                cursor = part.end_byte
        _Body(self, pieces).emit()
        self.token(closing.type, _text(closing), closing.start_byte)


def _enclosing(node: Node) -> set[str]:
    """The names of the bindings `node` lies inside."""
    names: set[str] = set()
    parent = node.parent
    while parent is not None:
        if parent.type == "binding":
            path = parent.child_by_field_name("attrpath")
            names.update(_text(child) for child in (path.named_children if path is not None else ()))
        parent = parent.parent
    return names


class _Body:
    """A string's pieces as one text (an interpolation stands as one NUL), emitted as tokens and holes."""

    def __init__(self, walk: _Walk, pieces: list[tuple[str, int] | Node]) -> None:
        self.walk = walk
        self.pieces = pieces
        self.starts: list[int] = []
        joined = []
        length = 0
        for piece in pieces:
            self.starts.append(length)
            text = piece[0] if isinstance(piece, tuple) else _INTERPOLATED
            joined.append(text)
            length += len(text)
        self.text = "".join(joined)

    def emit(self) -> None:
        cursor = 0
        for start, end, kind in _holes_in(self.text):
            self._code(cursor, start)
            run = start
            while True:  # the text runs of a hole, around the interpolations in it (an empty run is a hole too)
                stop = self.text.find(_INTERPOLATED, run, end)
                stop = end if stop == -1 else stop
                self.walk.hole(kind, kind, (self.text[run:stop],), self._offset(run))
                if stop == end:
                    break
                self._code(stop, stop + 1)
                run = stop + 1
            cursor = end
        self._code(cursor, len(self.text))

    def _code(self, start: int, end: int) -> None:
        """Text from `start` to `end` as tokens, a line each; each interpolation's tokens in its place."""
        while start < end:
            stop = self.text.find(_INTERPOLATED, start, end)
            stop = end if stop == -1 else stop
            for line in re.findall(r"[^\n]*\n|[^\n]+", self.text[start:stop]):
                self.walk.token("text", line, self._offset(start))
                start += len(line)
            if stop < end:
                piece = self.pieces[bisect.bisect_right(self.starts, stop) - 1]
                assert not isinstance(piece, tuple)  # a NUL in the joined text is an interpolation
                self.walk.subtree(piece)
                start = stop + 1

    def _offset(self, index: int) -> int:
        """The source byte at which the joined text's character `index` stands."""
        at = bisect.bisect_right(self.starts, index) - 1
        piece = self.pieces[at]
        if not isinstance(piece, tuple):
            return int(piece.start_byte)
        text, offset = piece
        within = text[: index - self.starts[at]]
        return offset + (len(within) if within.isascii() else len(within.encode("utf-8", "surrogatepass")))


def _holes_in(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each value position in a string's text, leftmost first, none overlapping."""
    found = []
    for kind, pattern in IN_STRINGS:
        for match in pattern.finditer(text):
            value = match.group("v")
            if kind == TEXT and not re.fullmatch(_SAID, value.replace(_INTERPOLATED, "")):
                continue
            found.append((match.start("v"), match.end("v"), kind))
    found.sort()
    kept: list[tuple[int, int, str]] = []
    for span in found:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def _value(node: Node, position: Position) -> tuple[str, ...] | None:
    """The literal a value position holds, in its grammar; None when it holds anything else (then it is code)."""
    pattern = re.compile(position.pattern) if position.pattern else None
    if position.shape == "integer":
        text = _text(node)
        return (text,) if node.type == "integer_expression" and pattern and pattern.fullmatch(text) else None
    if position.shape == "list":
        if node.type != "list_expression":
            return None
        items = [child for child in node.named_children if child.type != "comment"]
        values = [_plain_string(item) for item in items]
        if any(value is None or not (pattern and pattern.fullmatch(value)) for value in values):
            return None
        return tuple(value for value in values if value is not None)
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
