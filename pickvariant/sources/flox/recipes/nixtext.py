"""Reading facts out of a Nix recipe without evaluating it: its syntax tree, from a real Nix parser.

`nix-instantiate --eval` would need the pinned nixpkgs (gigabytes, network) for each of a thousand
recipes. The facts `catalog sync` needs are literal bindings, so the recipe is parsed with
tree-sitter-nix (the nix-community grammar, a maintained parser rather than patterns over text)
and only its syntax tree is read: a comment or the inside of a string is never taken for a
binding, and parsing takes time linear in the recipe. A fact whose binding is anything but a
plain literal (`++`, a function call, an interpolation, an `inherit`, two bindings that differ) is
reported as not literal, never guessed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from pickvariant._base.records import keyword_record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# What a binding's value is when it is no literal.
NOT_LITERAL = None
INHERITED = object()  # `inherit name;`: the value of `name` in scope
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}


class NotNix(ValueError):
    """The text cannot be read as Nix reads it: a parse error, or a NUL byte (Nix reads no further)."""


@functools.cache
def _parser() -> Parser:
    import tree_sitter_nix
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_nix.language()))


@keyword_record
class NixText:
    """A parsed recipe: its bindings by the last name of their attribute path, its identifiers, its strings."""

    bindings: tuple[tuple[str, object], ...]  # (name, value): a str, a tuple of items, or NOT_LITERAL
    identifiers: frozenset[str]  # every name the code uses (never one inside a string or comment)
    strings: tuple[str, ...]  # the literal text of every string, interpolations left out
    indented_strings: tuple[str, ...]  # the literal text of every ''...'' string (build scripts)
    # Every path literal (`./pytorch-x.nix`, `${./tune}`, `~/x`) as written, with its line: the files it brings in.
    paths: tuple[tuple[str, int], ...] = ()
    binding_lines: tuple[int, ...] = ()  # the line of each of `bindings`, in turn
    # For each binding whose value is an attribute set: the literal lists that set binds, by name
    # (`avx2 = { flags = [ "-mavx2" ]; };` gives {"avx2": {"flags": ["-mavx2"]}}).
    nested_lists: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # Each `version = …` with the names of the bindings it lies inside (`torch = prev.torch.overrideAttrs
    # (old: { version = "2.10.0"; })` gives (("torch", …), "2.10.0")): whose version it is.
    versions: tuple[tuple[tuple[str, ...], object], ...] = ()
    # Each `name = (import ./file.nix).entry;` as (name, "./file.nix", "entry"); a binding of `name` to anything
    # else is not there (binding_entries tells the two apart).
    imported_entries: tuple[tuple[str, str, str], ...] = ()

    def binding_entries(self, name: str) -> list[tuple[str, str]] | None:
        """(file, entry) of every binding of `name`, each of the form `(import ./file.nix).entry`; None when any
        binding of `name` has another form (an entry chosen by a variable, a call, `//`, an inherit)."""
        # `inherit name;` passes on the binding in scope: no value of its own.
        bound = [value for found, value in self.bindings if found == name and value is not INHERITED]
        entries = [(path, entry) for found, path, entry in self.imported_entries if found == name]
        return entries if len(entries) == len(bound) else None

    def line_of(self, name: str) -> int | None:
        """The line of the first binding of `name`."""
        return next(
            (line for (bound, _), line in zip(self.bindings, self.binding_lines, strict=False) if bound == name), None
        )

    def version_of(self, owner: str) -> list[str] | None:
        """Every `version` bound inside a binding named `owner`; None when one of them is not a string literal."""
        found = [value for enclosing, value in self.versions if owner in enclosing]
        if any(not isinstance(value, str) for value in found):
            return None
        return [str(value) for value in found]

    def lists_in(self, key: str) -> dict[str, list[str]]:
        """{outer name: the literal list it binds to `key`} for every `outer = { key = [ ... ]; }`."""
        return {outer: list(items) for outer, name, items in self.nested_lists if name == key}

    def _values(self, name: str) -> list[object]:
        values = [value for bound, value in self.bindings if bound == name]
        # `inherit name;` passes on the `name` in scope: where the recipe binds it, it adds no value of its own.
        given = [value for value in values if value is not INHERITED]
        return given if given else [NOT_LITERAL] * len(values)

    def string_binding(self, name: str) -> list[str] | None:
        """The value of every `name = "literal";`; None when some binding of `name` is not a string literal."""
        values = self._values(name)
        if any(not isinstance(value, str) for value in values):
            return None
        return [str(value) for value in values]

    def list_binding(self, name: str) -> list[list[str]] | None:
        """The items of every `name = [ ... ];` whose items are string literals or names of one string literal.

        None when some binding of `name` is not such a list (computed, `++`, a name bound to no single literal)."""
        found: list[list[str]] = []
        for value in self._values(name):
            if not isinstance(value, tuple):
                return None
            items: list[str] = []
            for kind, item in value:
                if kind == "string":
                    items.append(item)
                    continue
                resolved = self.string_binding(item)
                if not resolved or len(set(resolved)) != 1:
                    return None
                items.append(resolved[0])
            found.append(items)
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


def parse_tree(text: str) -> Node:
    """The recipe's syntax tree; NotNix when Nix could not read it as it stands."""
    if "\0" in text:
        raise NotNix("it holds a NUL byte, after which Nix reads nothing")
    tree = _parser().parse(text.encode("utf-8", "surrogatepass"))
    if tree.root_node.has_error:
        raise NotNix(f"it is not valid Nix (a syntax error near byte {_first_error(tree.root_node)})")
    return tree.root_node


def parse(text: str, root: Node | None = None) -> NixText:
    """The recipe's bindings, identifiers and strings; NotNix when Nix could not read it as it stands. `root`: its
    syntax tree where the caller parsed it already."""
    read = _Read()
    cursor = (parse_tree(text) if root is None else root).walk()
    while True:  # every node, depth first, without recursion (a deeply nested recipe must not exhaust the stack)
        node = cursor.node
        assert node is not None  # a cursor always stands on a node; the binding types it Optional
        if node.type in _READ:
            read.node(node)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return read.text()


# The node types `parse` reads something of (every other is walked through).
_READ = frozenset(
    (
        "identifier",
        "path_expression",
        "hpath_expression",
        "binding",
        "inherit",
        "inherit_from",
        "string_expression",
        "indented_string_expression",
    )
)


class _Read:
    """What `parse` gathers node by node."""

    def __init__(self) -> None:
        self.bindings: list[tuple[str, object]] = []
        self.lines: list[int] = []
        self.identifiers: set[str] = set()
        self.strings: list[str] = []
        self.indented: list[str] = []
        self.paths: list[tuple[str, int]] = []
        self.nested: list[tuple[str, str, tuple[str, ...]]] = []
        self.versions: list[tuple[tuple[str, ...], object]] = []
        self.entries: list[tuple[str, str, str]] = []

    def node(self, node: Node) -> None:
        kind = node.type
        if kind == "identifier":
            self.identifiers.add(_text(node))
        elif kind in ("path_expression", "hpath_expression"):
            self.paths.append((_text(node), node.start_point[0] + 1))
        elif kind == "binding":
            self._binding(node)
        elif kind in ("inherit", "inherit_from"):
            # `inherit (set) x;` binds x to something not written here: a fact bound so is not a literal.
            # `inherit x;` passes on the x in scope, the recipe's own binding if it has one (_values).
            attrs = node.child_by_field_name("attrs")
            for name in attrs.named_children if attrs is not None else ():
                self.bindings.append((_text(name), INHERITED if kind == "inherit" else NOT_LITERAL))
                self.lines.append(node.start_point[0] + 1)
        elif kind == "string_expression":
            self.strings.append(_string_text(node, indented=False, literal_only=False) or "")
        elif kind == "indented_string_expression":
            body = _string_text(node, indented=True, literal_only=False) or ""
            self.strings.append(body)
            self.indented.append(body)

    def _binding(self, node: Node) -> None:
        path = node.child_by_field_name("attrpath")
        value = node.child_by_field_name("expression")
        names = list(path.named_children) if path is not None else []
        if not names or names[-1].type != "identifier" or value is None:
            return
        name = _text(names[-1])
        self.bindings.append((name, _literal(value)))
        self.lines.append(node.start_point[0] + 1)
        if name == "version":
            self.versions.append((_enclosing_bindings(node), self.bindings[-1][1]))
        if value.type in ("attrset_expression", "rec_attrset_expression"):
            self.nested.extend((name, inner, items) for inner, items in _literal_lists(value))
        entry = _imported_entry(value)
        if entry is not None:
            self.entries.append((name, *entry))

    def text(self) -> NixText:
        return NixText(
            bindings=tuple(self.bindings),
            identifiers=frozenset(self.identifiers),
            strings=tuple(self.strings),
            indented_strings=tuple(self.indented),
            paths=tuple(self.paths),
            binding_lines=tuple(self.lines),
            nested_lists=tuple(self.nested),
            versions=tuple(self.versions),
            imported_entries=tuple(self.entries),
        )


def _imported_entry(value: Node) -> tuple[str, str] | None:
    """("./file.nix", "entry") for `(import ./file.nix).entry`, the one form in which a recipe names an entry of a
    table for certain; None for anything else."""
    if value.type != "select_expression":
        return None
    target, attrpath = value.child_by_field_name("expression"), value.child_by_field_name("attrpath")
    while target is not None and target.type == "parenthesized_expression" and target.named_child_count == 1:
        target = target.named_children[0]
    if target is None or attrpath is None or attrpath.named_child_count != 1 or target.type != "apply_expression":
        return None
    function, argument = target.child_by_field_name("function"), target.child_by_field_name("argument")
    if function is None or argument is None or _text(function) != "import" or argument.type != "path_expression":
        return None
    if argument.named_child_count != 1 or argument.named_children[0].type != "path_fragment":
        return None
    name = attrpath.named_children[0]
    if name.type != "identifier" or value.named_child_count != 2:  # `(…).entry or default` is not certain
        return None
    return _text(argument.named_children[0]), _text(name)


def _enclosing_bindings(node: Node) -> tuple[str, ...]:
    """The names of the bindings `node` lies inside, innermost first."""
    names = []
    parent = node.parent
    while parent is not None:
        if parent.type == "binding":
            path = parent.child_by_field_name("attrpath")
            if path is not None and path.named_child_count:
                names.append(_text(path.named_children[-1]))
        parent = parent.parent
    return tuple(names)


def _literal_lists(attrset: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(name, items) for each binding of this attribute set (not of sets inside it) to a list of string literals."""
    for binding_set in attrset.named_children:
        if binding_set.type != "binding_set":
            continue
        for binding in binding_set.named_children:
            path, value = binding.child_by_field_name("attrpath"), binding.child_by_field_name("expression")
            if binding.type != "binding" or path is None or value is None or path.named_child_count != 1:
                continue
            literal = _literal(value)
            if isinstance(literal, tuple) and all(kind == "string" for kind, _ in literal):
                yield _text(path.named_children[0]), tuple(item for _, item in literal)


def _walk(root: Node) -> Iterator[Node]:
    """Every node, depth first, without recursion (a deeply nested recipe must not exhaust the stack)."""
    cursor = root.walk()
    while True:
        node = cursor.node
        assert node is not None  # a cursor always stands on a node; the binding types it Optional
        yield node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _first_error(root: Node) -> int:
    for node in _walk(root):
        if node.type == "ERROR" or node.is_missing:
            return node.start_byte
    return root.start_byte


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def _literal(node: Node) -> object:
    """A string literal's text, a list's items (("string", text) or ("name", identifier)), or NOT_LITERAL."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type in ("string_expression", "indented_string_expression"):
        text = _string_text(node, indented=node.type == "indented_string_expression", literal_only=True)
        return NOT_LITERAL if text is None else text
    if node.type == "list_expression":
        items: list[tuple[str, str]] = []
        for item in node.named_children:
            if item.type == "comment":
                continue
            if item.type == "variable_expression":
                items.append(("name", _text(item.named_children[0])))
                continue
            item_text = _literal(item)
            if not isinstance(item_text, str):
                return NOT_LITERAL
            items.append(("string", item_text))
        return tuple(items)
    return NOT_LITERAL


def string_parts(node: Node) -> Iterator[str | Node]:
    """A string's literal characters (escapes read as Nix reads them) and, for each `${…}`, its expression."""
    indented = node.type == "indented_string_expression"
    for part in node.named_children:
        kind = part.type
        if kind == "string_fragment":
            yield _text(part)
        elif kind == "escape_sequence":
            escaped = _text(part)
            if indented:  # ''\n ''$ '''
                yield "''" if escaped == "'''" else "$" if escaped == "''$" else _ESCAPES.get(escaped[3:], escaped[3:])
            else:  # \n \" \\ \$
                yield _ESCAPES.get(escaped[1:], escaped[1:])
        elif kind == "dollar_escape":  # `''${`: the grammar gives `''` here and the `$` as text after it
            yield _text(part).removeprefix("''").removeprefix("\\")
        elif kind == "interpolation":
            yield part.child_by_field_name("expression") or part
        elif kind != "comment":
            yield part


def _string_text(node: Node, indented: bool, literal_only: bool) -> str | None:
    """The characters a string literal stands for; None (with literal_only) when it interpolates."""
    parts: list[str] = []
    for part in string_parts(node):
        if isinstance(part, str):
            parts.append(part)
        elif literal_only:
            return None
    return "".join(parts)
