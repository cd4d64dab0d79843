"""Reading facts out of Nix recipe text without evaluating it: pure functions over a string.

`nix-instantiate --eval` would need the pinned nixpkgs (gigabytes, network) for each of
a thousand recipes; the facts `catalog sync` needs are literal bindings, so a small
lexer that drops comments, and keeps strings whole, is enough. Anything that is not a
literal (a computed list, an import) is reported as unknown, never guessed.
"""

from __future__ import annotations

import re

from pickvariant._base.records import record

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_'-]*")


@record
class NixText:
    code: str  # the text with every comment blanked out (strings intact, offsets kept)
    indented_strings: tuple[str, ...]  # the bodies of every ''...'' string, in order

    def string_binding(self, name: str) -> list[str]:
        """Every `name = "literal";` in the text."""
        return re.findall(rf'(?<![A-Za-z0-9_.\'-]){re.escape(name)}\s*=\s*"((?:[^"\\$]|\\.)*)"\s*;', self.code)

    def list_binding(self, name: str) -> list[list[str]] | None:
        """The items of every `name = [ ... ];` whose items are string literals or names of string bindings.

        None when some binding of `name` is not such a list (computed, or a name with no literal value).
        """
        found: list[list[str]] = []
        for match in re.finditer(rf'(?<![A-Za-z0-9_.\'-]){re.escape(name)}\s*=\s*\[([^\]]*)\]\s*;', self.code):
            items = _list_items(match.group(1))
            if items is None:
                return None
            resolved: list[str] = []
            for kind, value in items:
                if kind == "string":
                    resolved.append(value)
                    continue
                values = set(self.string_binding(value))
                if len(values) != 1:
                    return None
                resolved.append(values.pop())
            found.append(resolved)
        if not found and re.search(rf'(?<![A-Za-z0-9_.\'-]){re.escape(name)}\s*=', self.code):
            return None
        return found

    def shell_lines(self) -> list[str]:
        """The lines of every ''...'' string (build scripts), without shell comments."""
        lines = []
        for body in self.indented_strings:
            for line in body.splitlines():
                stripped = line.strip()
                if stripped and not stripped.startswith("#"):
                    lines.append(stripped)
        return lines

    def exports(self, variable: str) -> list[str]:
        """Every value a build script gives `variable` with `export VARIABLE=value`."""
        pattern = re.compile(rf"^export\s+{re.escape(variable)}=(\S*)")
        return [match.group(1).strip("\"'") for line in self.shell_lines() if (match := pattern.match(line))]


def _list_items(body: str) -> list[tuple[str, str]] | None:
    items: list[tuple[str, str]] = []
    position = 0
    while position < len(body):
        if body[position].isspace():
            position += 1
            continue
        if body[position] == '"':
            end = position + 1
            while end < len(body) and body[end] != '"':
                end += 2 if body[end] == "\\" else 1
            if end >= len(body):
                return None
            value = body[position + 1:end]
            if "${" in value:
                return None
            items.append(("string", re.sub(r"\\(.)", r"\1", value)))
            position = end + 1
            continue
        match = _IDENT.match(body, position)
        if match is None:
            return None
        items.append(("name", match.group(0)))
        position = match.end()
    return items


def lex(text: str) -> NixText:
    """Blank out comments (# to end of line, /* */) outside strings; collect indented-string bodies."""
    code = list(text)
    bodies: list[str] = []
    # Each stack entry is what we are inside: "code" (top level or ${...}), '"' or "''".
    stack: list[str] = ["code"]
    braces: list[int] = [0]
    body_start: list[int] = []
    i, n = 0, len(text)
    while i < n:
        state = stack[-1]
        c = text[i]
        if state == "code":
            if c == "#":
                end = text.find("\n", i)
                end = n if end < 0 else end
                code[i:end] = " " * (end - i)
                i = end
                continue
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
                code[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
                i = end
                continue
            if c == '"':
                stack.append('"')
                i += 1
                continue
            if text.startswith("''", i):
                stack.append("''")
                body_start.append(i + 2)
                i += 2
                continue
            if c == "{":
                braces[-1] += 1
            elif c == "}":
                if braces[-1] == 0 and len(stack) > 1:
                    stack.pop()  # end of an interpolation: back into its string
                    braces.pop()
                    i += 1
                    continue
                braces[-1] -= 1
            i += 1
            continue
        if state == '"':
            if c == "\\":
                i += 2
                continue
            if c == '"':
                stack.pop()
                i += 1
                continue
            if text.startswith("${", i):
                stack.append("code")
                braces.append(0)
                i += 2
                continue
            i += 1
            continue
        # indented string
        if text.startswith("''", i):
            if text.startswith(("'''", "''$", "''\\"), i):
                i += 3
                continue
            bodies.append(text[body_start.pop():i])
            stack.pop()
            i += 2
            continue
        if text.startswith("${", i):
            stack.append("code")
            braces.append(0)
            i += 2
            continue
        i += 1
    return NixText("".join(code), tuple(bodies))
