"""A recipe reduced to its skeleton: its syntax tree with the value positions replaced by holes.

A fork's recipe is classified only where its skeleton is one of the trusted upstream's (trusted.py): then the fork
differs from an upstream recipe in nothing but values, and each value means what it means there. The value
positions are a short, named list (positions.py: `VALUES`, `IN_STRINGS`); what each may hold is a value grammar that no
Nix or bash syntax can get through (no quote, `$`, backslash, apostrophe or line break), so a hole never changes
how the text around it is read. Comments and the whitespace between tokens are dropped; the text of a string
(a build script) is kept byte for byte outside its holes.

The tree comes from tree-sitter-nix (nixtext.parse_tree); the walk keeps its own stack, is linear in the recipe's
size, and makes its tokens one at a time, so that a comparison stops at the first that differs. Nothing is
evaluated: what a construct means is never decided here.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator

from pickvariant._base.records import keyword_record
from pickvariant.sources.flox.recipes.nixtext import NotNix, parse_tree
from pickvariant.sources.flox.recipes.positions import BOUND, BY_NAME, INTERPOLATED, Position, holes_in, value_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

_LINES = re.compile(r"[^\n]*\n|[^\n]+")
_STRINGS = frozenset(("string_expression", "indented_string_expression"))
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
    offsets: tuple[int, ...]  # the byte each token starts at
    line_starts: tuple[int, ...]  # the byte each line of the recipe starts at
    holes: tuple[Hole, ...]

    def line(self, index: int) -> int:
        """The recipe's line that holds token `index`."""
        return bisect.bisect_right(self.line_starts, self.offsets[index])

    @property
    def digest(self) -> str:
        return hashlib.sha256("\x1e".join(self.tokens).encode("utf-8", "surrogatepass")).hexdigest()

    def values(self, kind: str) -> list[Hole]:
        return [hole for hole in self.holes if hole.kind == kind]


def skeleton_of(text: str, root: Node | None = None) -> Skeleton:
    """The recipe's skeleton; NotNix when Nix could not read it as it stands, or pickvariant could not read it as Nix.
    `root`: its syntax tree where the caller parsed it already."""
    return Walk(text, root).skeleton()


def shown(token: str) -> str:
    """A token as a sentence shows it: a hole by its kind, text as written (escaped by the caller)."""
    if token.startswith("\x1d"):
        return f"<{token[1:]}>"
    return token.split("\x1f", 1)[-1]


class Walk:
    """A recipe's tokens, made one at a time by one pass over its syntax tree with a cursor (a deeply nested recipe
    must not exhaust Python's stack): a caller comparing it with other skeletons stops at the first token none has.

    Between two tokens there is only what tree-sitter skips: a comment (a node, left out) or whitespace, which the
    constructor has made sure is Nix's own (space, tab, line feed, carriage return) by refusing every other."""

    def __init__(self, text: str, root: Node | None = None) -> None:
        self.source = text.encode("utf-8", "surrogatepass")
        self.line_starts = [0, *(match.end() for match in re.finditer(rb"\n", self.source))]
        odd = _ODD.search(text)
        if odd:
            offset = len(text[: odd.start()].encode("utf-8", "surrogatepass"))
            raise NotNix(
                f"line {self.line(offset)} holds {odd.group()!a}, a character Nix and pickvariant may read apart"
            )
        self.root = parse_tree(text) if root is None else root
        self.tokens: list[str] = []
        self.offsets: list[int] = []
        self.holes: list[Hole] = []
        self.values: dict[int, tuple[Position, tuple[str, ...]]] = {}  # a value position's literal, by node id
        self.stepwise = True  # a step a token (for a caller that may stop), else none until the end

    def steps(self) -> Iterator[None]:
        """One step each time a token is added to `tokens`."""
        try:
            yield from self._subtree(self.root)
        except RecursionError:
            raise NotNix("its strings and interpolations nest too deeply to be read") from None

    def skeleton(self) -> Skeleton:
        """The whole skeleton, walking what is left of the recipe without a step a token."""
        self.stepwise = False
        for _ in self.steps():
            pass
        return self.so_far()

    def so_far(self) -> Skeleton:
        """What the walk has made of the recipe so far."""
        return Skeleton(
            tokens=tuple(self.tokens),
            offsets=tuple(self.offsets),
            line_starts=tuple(self.line_starts),
            holes=tuple(self.holes),
        )

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def _subtree(self, top: Node) -> Iterator[None]:
        """Every token of `top`'s subtree in order; a string's interpolations walk theirs through this again."""
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
                if self.stepwise:
                    yield
            elif kind in _STRINGS:
                yield from self._string(node)
            elif node.child_count == 0:
                start = node.start_byte
                tokens.append(kind + "\x1f" + source[start : node.end_byte].decode("utf-8", "surrogatepass"))
                offsets.append(start)
                if self.stepwise:
                    yield
            else:
                descend = True
                if kind == "binding":
                    named = BOUND.match(source, node.start_byte)
                    if named is not None and named.group(1).decode() in BY_NAME:
                        self._binding(node)
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
        position = BY_NAME.get(_text(path.named_children[-1]))
        if position is None or (position.inside and position.inside not in _enclosing(node)):
            return
        read = value_of(value, position)
        if read is not None:
            self.values[value.id] = (position, read)

    def token(self, kind: str, text: str, offset: int) -> None:
        self.tokens.append(f"{kind}\x1f{text}")
        self.offsets.append(offset)

    def hole(self, kind: str, name: str, value: tuple[str, ...], offset: int) -> None:
        self.tokens.append(f"\x1d{kind}")
        self.offsets.append(offset)
        self.holes.append(Hole(kind=kind, name=name, value=value, line=self.line(offset)))

    def _string(self, node: Node) -> Iterator[None]:
        """A string's text byte for byte, a token a line; its `${…}` walked as code; its value positions holes."""
        opening, *parts, closing = node.children
        self.token(opening.type, _text(opening), opening.start_byte)
        if self.stepwise:
            yield
        pieces: list[tuple[str, int] | Node] = []  # text with its offset, or an interpolation
        cursor = opening.end_byte
        for part in [*(p for p in parts if p.type == "interpolation"), closing]:
            if part.start_byte > cursor:
                pieces.append((self.source[cursor : part.start_byte].decode("utf-8", "surrogatepass"), cursor))
            if part is not closing:
                pieces.append(part)
                cursor = part.end_byte
        yield from _Body(self, pieces).emit()
        self.token(closing.type, _text(closing), closing.start_byte)
        if self.stepwise:
            yield


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

    def __init__(self, walk: Walk, pieces: list[tuple[str, int] | Node]) -> None:
        self.walk = walk
        self.pieces = pieces
        self.starts: list[int] = []
        joined = []
        length = 0
        for piece in pieces:
            self.starts.append(length)
            text = piece[0] if isinstance(piece, tuple) else INTERPOLATED
            joined.append(text)
            length += len(text)
        self.text = "".join(joined)
        self.ascii = [isinstance(piece, tuple) and piece[0].isascii() for piece in pieces]
        self.reached = [(0, 0)] * len(pieces)  # (character, bytes) reached so far in each non-ASCII piece

    def emit(self) -> Iterator[None]:
        cursor = 0
        for start, end, kind in holes_in(self.text):
            yield from self._code(cursor, start)
            run = start
            while True:  # the text runs of a hole, around the interpolations in it (an empty run is a hole too)
                stop = self.text.find(INTERPOLATED, run, end)
                stop = end if stop == -1 else stop
                self.walk.hole(kind, kind, (self.text[run:stop],), self._offset(run))
                if self.walk.stepwise:
                    yield
                if stop == end:
                    break
                yield from self._code(stop, stop + 1)
                run = stop + 1
            cursor = end
        yield from self._code(cursor, len(self.text))

    def _code(self, start: int, end: int) -> Iterator[None]:
        """Text from `start` to `end` as tokens, a line each; each interpolation's tokens in its place."""
        while start < end:
            stop = self.text.find(INTERPOLATED, start, end)
            stop = end if stop == -1 else stop
            for line in _LINES.finditer(self.text, start, stop):
                self.walk.token("text", line.group(), self._offset(line.start()))
                if self.walk.stepwise:
                    yield
            start = stop
            if stop < end:
                piece = self.pieces[bisect.bisect_right(self.starts, stop) - 1]
                assert not isinstance(piece, tuple)  # a NUL in the joined text is an interpolation
                yield from self.walk._subtree(piece)
                start = stop + 1

    def _offset(self, index: int) -> int:
        """The source byte at which the joined text's character `index` stands (reached in order: linear in all)."""
        at = bisect.bisect_right(self.starts, index) - 1
        piece = self.pieces[at]
        if not isinstance(piece, tuple):
            return int(piece.start_byte)
        text, offset = piece
        within = index - self.starts[at]
        if self.ascii[at]:
            return offset + within
        character, counted = self.reached[at]
        if within < character:
            character, counted = 0, 0
        counted += len(text[character:within].encode("utf-8", "surrogatepass"))
        self.reached[at] = (within, counted)
        return offset + counted


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")
