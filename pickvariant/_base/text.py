"""Outside text made safe to show: control characters become visible escapes.

A CPU dump's model name, a plan input's label, a probe's stderr, a repository's file names: any of them
can hold an escape sequence (ESC ] 0; retitles the terminal, ESC [ 2J clears it, ESC [ 41m recolours
it) or a line break that forges a line of pickvariant's own output. Every string from outside that
pickvariant prints for people passes here; JSON output escapes control characters by itself.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, the Unicode line and paragraph separators, and the bidirectional
# overrides and isolates that reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
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
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def visible_lines(text: str) -> str:
    """`text` with its own line breaks kept and every other control character shown as an escape."""
    return "\n".join(visible(line) for line in text.split("\n"))
