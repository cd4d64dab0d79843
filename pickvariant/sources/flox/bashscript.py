"""A build script parsed as bash parses it: the tree-sitter-bash grammar, and no byte the two could read differently.

stdenv runs a hook with bash. A checker that splits lines or finds comments its own way can be fooled by every
place it differs from bash: a `#` inside a word (`echo "x"#; export …` runs the export), a line break bash does not
split at (CR, VT, FF, U+2028, U+0085: Python's `splitlines()` does), a "blank" that is no blank to bash (NBSP).
So the script is parsed by a maintained bash grammar, and first every character where bash and that grammar could
disagree is refused:
- any control character but the line feed and the tab, and any Unicode format, separator or private-use
  character (`_refused_character`);
- any non-ASCII character outside a comment or a quoted string (inside them both read it as the same bytes);
- any backslash outside a comment or a quoted heredoc's body (escapes and line continuations are left to bash);
- a syntax error, two statements on one line (`;`, `&`), a comment whose `#` does not begin a word, a heredoc
  whose end line is not the delimiter alone (bash does not end `EOF ` with a trailing blank; the grammar does).
What the statements mean is buildscript.py's business: this module only parses and answers about words.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# Stands, in a script, for a value interpolated from nixpkgs (a store path): a word of its own, never a flag.
OPAQUE = "__pickvariant_nixpkgs_value__"
_LITERAL = re.compile(r"[A-Za-z0-9_./+,=:@%-]+")
_CONTENT = re.compile(r"[A-Za-z0-9_./+,=:@%; -]*")
_REFUSED_CATEGORIES = {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"}
_WATCHED = re.compile(rb"[\x80-\xff]+|\\")  # non-ASCII text and backslashes, each allowed only in some places
_HEREDOC_DELIMITER = re.compile(r"(?P<q>['\"])(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=q)")


class Refused(Exception):
    """A line or define pickvariant does not read: the text, and what it does."""

    def __init__(self, text: str, what: str) -> None:
        super().__init__(what)
        self.text = text
        self.what = what


@functools.cache
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parse(source: str) -> Script:
    """The script's tree; Refused naming the line at the first byte bash and the grammar could read differently."""
    lines = source.split("\n")
    for line in lines:
        for char in line:
            if _refused_character(char):
                raise Refused(line.strip(), f"a character ({_named(char)}) bash and pickvariant could read differently")
    data = source.encode("utf-8")
    script = Script(lines, data, _parser().parse(data).root_node)
    script.check()
    return script


def _refused_character(char: str) -> bool:
    if char == "\t":
        return False
    if char < " " or char == "\x7f":
        return True
    return char > "\x7f" and unicodedata.category(char) in _REFUSED_CATEGORIES


def _named(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, '')}".rstrip()


@dataclass(frozen=True)
class Script:
    """A parsed script: its lines (split at the line feed only, as bash splits), its bytes and its tree."""

    lines: list[str]
    data: bytes
    root: Node

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8")

    def line_text(self, node: Node) -> str:
        """The script line a node starts on, the nixpkgs stand-in shown as NUL (proof.py prints it as `${…}`)."""
        return self.lines[node.start_point[0]].strip().replace(OPAQUE, "\0")

    def statements(self) -> list[Node]:
        return list(self.root.named_children)

    # ------------------------------------------------------------------ the checks of parse()

    def check(self) -> None:
        if self.root.has_error:
            bad = next(node for node in _walk(self.root) if node.type == "ERROR" or node.is_missing)
            raise Refused(self.line_text(bad), "a line bash would read as a syntax error, or otherwise than it reads")
        self._check_layout()
        quoted, comments, heredocs = self._regions()
        for found in _WATCHED.finditer(self.data):
            offset = found.start()
            if found.group() != b"\\" and not _inside(offset, quoted + comments):
                raise Refused(self._line_at(offset), "a non-ASCII character outside a comment or a quoted string")
            if found.group() == b"\\" and not _inside(offset, comments + heredocs):
                raise Refused(self._line_at(offset), "a backslash, which bash reads as an escape or a continuation")

    def _check_layout(self) -> None:
        last_row = -1
        for child in self.root.children:
            if not child.is_named:
                what = "runs a command in the background" if child.type == "&" else "more than one command on a line"
                raise Refused(self.line_text(child), what)
            if child.type != "comment" and child.start_point[0] <= last_row:
                raise Refused(self.line_text(child), "more than one command on a line")
            last_row = child.end_point[0]
        for node in _walk(self.root):
            if node.type == "comment" and node.start_byte > 0 and self.data[node.start_byte - 1] not in b" \t\n":
                raise Refused(self.line_text(node), "a '#' that bash does not read as the start of a comment")

    def _regions(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
        quoted, comments, heredocs = [], [], []
        for node in _walk(self.root):
            span = (node.start_byte, node.end_byte)
            if node.type in ("string_content", "raw_string"):
                quoted.append(span)
            elif node.type == "comment":
                comments.append(span)
            elif node.type == "heredoc_body" and not node.named_children:
                heredocs.append(span)
        return quoted, comments, heredocs

    def _line_at(self, offset: int) -> str:
        return self.lines[self.data[:offset].count(b"\n")].strip()

    # ------------------------------------------------------------------ words

    def literal_word(self, node: Node) -> str | None:
        """A word bash passes on as written (no quoting, expansion, glob or escape), else None."""
        if node.type not in ("word", "number"):
            return None
        text = self.text(node)
        return text if _LITERAL.fullmatch(text) else None

    def printed(self, node: Node) -> bool:
        """An echo argument that only prints: literal words, quoted text and plain `$NAME`/`${NAME}` expansions."""
        if node.type == "concatenation":
            return all(self.printed(child) for child in node.named_children)
        if node.type in ("word", "number"):
            return self.literal_word(node) is not None
        if node.type == "raw_string":
            return True
        if node.type == "string":
            return all(
                child.type == "string_content" or self._plain_expansion(child) is not None
                for child in node.named_children
            )
        return self._plain_expansion(node) is not None

    def _plain_expansion(self, node: Node) -> str | None:
        """The NAME of `$NAME` or `${NAME}` (no operator, no indirection), else None."""
        if node.type not in ("simple_expansion", "expansion"):
            return None
        names = node.named_children
        if len(names) != 1 or names[0].type != "variable_name":
            return None
        name = self.text(names[0])
        return name if self.text(node) in (f"${name}", f"${{{name}}}") else None

    def value_words(self, value: Node, name: str) -> list[str] | None:
        """An assignment's value split into words, `$NAME` kept as such where it names the variable itself; None where
        bash would compute anything else (another variable, a command, a nixpkgs value, quoting beyond "…")."""
        if self.text(value).find(OPAQUE) >= 0:
            return None
        if value.type in ("word", "number"):
            word = self.literal_word(value)
            return [word] if word is not None else None
        if value.type != "string":
            return None
        pieces = []
        for child in value.named_children:
            if child.type == "string_content" and _CONTENT.fullmatch(self.text(child)):
                pieces.append(self.text(child))
            elif self._plain_expansion(child) == name:
                pieces.append(f"${name}")
            else:
                return None
        return "".join(pieces).split()

    def heredoc_lines(self, heredoc: Node) -> list[str]:
        """The lines a quoted `<<` heredoc writes, its end line checked to be the delimiter alone, as bash ends it."""
        start = heredoc.child_by_field_name("start") or _first(heredoc, "heredoc_start")
        body, end = _first(heredoc, "heredoc_body"), _first(heredoc, "heredoc_end")
        operators = [self.text(child) for child in heredoc.children if not child.is_named]
        delimiter = _HEREDOC_DELIMITER.fullmatch(self.text(start)) if start is not None else None
        if operators != ["<<"] or delimiter is None or end is None:
            raise Refused(self.line_text(heredoc), "a heredoc other than cat > FILE.cmake << 'EOF'")
        word = delimiter["word"]
        if self.lines[end.start_point[0]] != word or self.text(end) != word:
            raise Refused(self.line_text(end), "a heredoc whose end line is not its delimiter alone")
        lines = self.text(body).split("\n") if body is not None else []
        if body is not None and (body.named_children or word in lines):
            raise Refused(self.line_text(body), "a heredoc pickvariant and bash could end in different places")
        return lines


def _walk(root: Node) -> Iterator[Node]:
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(node.children))


def _first(node: Node, kind: str) -> Node | None:
    return next((child for child in node.children if child.type == kind), None)


def _inside(offset: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= offset < end for start, end in spans)
