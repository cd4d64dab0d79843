"""Outside text made safe to show: control characters become visible escapes.

A CPU dump's model name, a plan input's label, a probe's stderr, a repository's file names: any of them
can hold an escape sequence (ESC ] 0; retitles the terminal, ESC [ 2J clears it, ESC [ 41m recolours
it) or a line break that forges a line of pickvariant's own output. Every string from outside that
pickvariant prints for people passes here; JSON output escapes control characters by itself.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, the Unicode line and paragraph separators, the bidirectional marks, overrides and
# isolates that reorder what a terminal shows, and the zero-width characters that hide text or join it unseen.
_CONTROL = "[\x00-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"  # compiled by re's own cache on first use: most text has none of them (str.isprintable)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def _escape(match: re.Match[str]) -> str:
    character = match.group(0)
    named = _NAMED.get(character)
    if named is not None:
        return named
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` on one line, every control character shown as an escape (`\\e`, `\\n`, `\\x07`)."""
    # Every character the pattern names is one str.isprintable() rejects: printable text needs no regex at all.
    return text if text.isprintable() else re.sub(_CONTROL, _escape, text)


def visible_lines(text: str) -> str:
    """`text` with its own line breaks kept and every other control character shown as an escape."""
    return "\n".join(visible(line) for line in text.split("\n"))


# What lets text from outside become markup: a link or image ([text](url), ![…](…)), raw HTML (<img onerror=…>),
# a code span's end, a table cell's end, an escape, emphasis (`*`, `~`, and `_` where it can open or close one: not
# inside a word, where CommonMark reads it as a letter). Each is escaped; the text reads the same.
_MARKUP = r"([\\`\[\]|*~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))"  # compiled by re's own cache on first use
# `<` opens a tag; `&` an entity (so that `&lt;` written by a dump stays as written). A lone `>` opens nothing.
_HTML = {"&": "&amp;", "<": "&lt;"}


def markdown_text(text: str) -> str:
    """`text` from outside as Markdown that shows it and makes nothing of it: no link, image, HTML or table cell."""
    escaped = re.sub(_MARKUP, lambda match: "\\" + match.group(0), visible(text))
    return "".join(_HTML.get(character, character) for character in escaped)


def markdown_code(text: str) -> str:
    """`text` from outside as one Markdown code span: fenced with more backticks than it holds, so it cannot end early."""
    shown = visible(text)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") or longest else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def size_text(size: int) -> str:
    """A bound in bytes as a person reads it, rounded down so that "larger than" or "more than" it stays true: 4 MiB,
    64 KiB, 100 bytes."""
    if size >= 1024 * 1024:
        return f"{size // (1024 * 1024)} MiB"
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} bytes"
