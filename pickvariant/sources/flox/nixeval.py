"""A bounded, lazy evaluator for the part of Nix the build repositories' recipes are written in.

A recipe's compiler flags and GPU targets reach the build through values it hands to nixpkgs'
functions (`torch.override { gpuTargets = …; }`, `overrideAttrs (old: { preConfigure = …; })`, the
nixpkgs `config`). pickvariant cannot evaluate nixpkgs, but it can evaluate the recipe around it: names
are resolved as Nix resolves them (function formals and their defaults, `let`, `rec`, `inherit`,
attribute paths, `import` of the repository's own files where the caller allows it), and whatever
comes from nixpkgs or a caller stays an `Opaque` value. Every value the recipe passes to an opaque
function is inspected (`Evaluation.inspect`), so each setting that can reach the build is seen with
its evaluated value, wherever the recipe computed it. Anything the evaluator cannot compute for
certain raises `Unprovable` naming the file and line; evaluation is bounded in steps and depth.
Which settings are read, and how, is proof.py's business: this module only evaluates.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from pickvariant.sources.flox import nixbind
from pickvariant.sources.flox.nixtext import NotNix, parse_tree, string_parts
from pickvariant.sources.flox.nixvalues import (
    RECIPE,
    AttrSet,
    Builtin,
    Lambda,
    NixList,
    Opaque,
    PathValue,
    Scope,
    Text,
    Thunk,
    Unprovable,
    node_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

MAX_STEPS = 200_000  # a recipe evaluates in a few thousand; a hostile one stops here
MAX_DEPTH = 150  # nested evaluations (Python's own stack is the limit beyond)
# A recipe's lists hold a few dozen items and its strings a few kilobytes; `let a = b ++ b; b = c ++ c; …` doubles at
# each step with few steps, so sizes are bounded where values are joined, not only by the count of steps.
MAX_ITEMS = 10_000
MAX_TEXT = 1024 * 1024


# Functions of nixpkgs' lib and of builtins that are evaluated here: the rest are opaque.
PURE_FUNCTIONS = {"concatStringsSep": 2, "replaceStrings": 3}
GLOBALS = {"true": True, "false": False, "null": None}


@dataclass
class Evaluation:
    """One recipe's evaluation: the files `import` may read and what is inspected.

    `files`: path from .flox/pkgs/ -> its text, or None for a file proven on its own (a sibling PyTorch recipe
    that a companion imports), whose value stays opaque here."""

    files: Mapping[str, str | None]
    # Called with (attribute name, thunk, the set it is in) for each attribute of a value handed to nixpkgs;
    # True when the caller took it (a setting it reads), False to inspect its value further.
    on_attribute: Callable[[str, Thunk, AttrSet], bool]
    steps: int = 0
    depth: int = 0
    _imported: dict[str, object] = field(default_factory=dict)
    _inspected: dict[int, object] = field(default_factory=dict)  # by id, each kept alive so no id is reused

    # ------------------------------------------------------------------ entry points

    def run(self, text: str, file: str = RECIPE) -> None:
        """Evaluate the recipe as Flox calls it (a function of nixpkgs' arguments) and inspect what it builds."""
        value = self._file_value(text, file, None)
        if isinstance(value, Lambda):
            value = self.apply(value, Thunk.of(Opaque("the caller's arguments", param=True)), None, file)
        self.inspect(value)

    def force(self, thunk: Thunk) -> object:
        if not thunk.done:
            if thunk.compute is not None:
                thunk.value = thunk.compute()
            else:
                assert thunk.node is not None
                thunk.value = self.eval(thunk.node, thunk.scope, thunk.file)
            thunk.done, thunk.scope, thunk.compute = True, None, None
        return thunk.value

    def inspect(self, value: object) -> None:
        """Everything in `value` that nixpkgs' code would see, each attribute offered to on_attribute."""
        pending = [value]
        while pending:
            item = pending.pop()
            if isinstance(item, Thunk):
                item = self.force(item)
            if id(item) in self._inspected:
                continue
            if isinstance(item, (Lambda, AttrSet, NixList, Builtin)):
                self._inspected[id(item)] = item
            if isinstance(item, Lambda):
                pending.append(self.apply(item, Thunk.of(Opaque("nixpkgs' argument", param=True)), None, item.file))
            elif isinstance(item, AttrSet):
                pending.extend(thunk for name, thunk in item.attrs.items() if not self.on_attribute(name, thunk, item))
            elif isinstance(item, NixList):
                pending.extend(item.items)

    # ------------------------------------------------------------------ evaluation

    def eval(self, node: Node, scope: Scope | None, file: str) -> object:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unprovable(file, node, f"evaluating it takes more than {MAX_STEPS} steps")
        if self.depth > MAX_DEPTH:
            raise Unprovable(file, node, f"it nests deeper than {MAX_DEPTH} expressions")
        self.depth += 1
        try:
            handler = _HANDLERS.get(node.type)
            if handler is None:
                raise Unprovable(file, node, f"a Nix construct ({node.type}) pickvariant does not evaluate")
            return handler(self, node, scope, file)
        finally:
            self.depth -= 1

    def value_of(self, node: Node | None, scope: Scope | None, file: str, parent: Node) -> object:
        if node is None:
            raise Unprovable(file, parent, "an incomplete expression")
        return self.eval(node, scope, file)

    def lookup(self, name: str, scope: Scope | None, file: str, node: Node) -> object:
        while scope is not None:
            if name in scope.names:
                return self.force(scope.names[name])
            scope = scope.parent
        if name in GLOBALS:
            return GLOBALS[name]
        if name == "import":
            return Builtin("import", 1)
        if name == "builtins":
            return Opaque("builtins")
        raise Unprovable(file, node, f"it uses {name}, which nothing in the recipe binds")

    def select(self, target: object, name: str, file: str, node: Node) -> object:
        if isinstance(target, AttrSet):
            if name in target.attrs:
                return self.force(target.attrs[name])
            if target.open:
                return Opaque(f"….{name}")
            raise KeyError(name)
        if isinstance(target, Opaque):
            if name in PURE_FUNCTIONS and (target.what == "builtins" or target.what.endswith("lib")):
                return Builtin(name, PURE_FUNCTIONS[name])
            return Opaque(f"{target.what}.{name}", own_hook=name if target.param else None)
        raise Unprovable(file, node, f"it selects {name} from a value that has no attributes")

    def apply(self, function: object, argument: Thunk, node: Node | None, file: str) -> object:
        if isinstance(function, Lambda):
            return self._call(function, argument)
        if isinstance(function, Builtin):
            called = Builtin(function.name, function.arity, (*function.args, argument))
            return self._builtin(called, node, file) if len(called.args) == function.arity else called
        if isinstance(function, Opaque):
            self.inspect(argument)  # nixpkgs' code sees it: every setting in it is read
            return Opaque(f"{function.what}(…)", argument=argument)
        raise Unprovable(file, node, "it calls a value that is no function")

    def _call(self, function: Lambda, argument: Thunk) -> object:
        node, file = function.node, function.file
        names: dict[str, Thunk] = {}
        scope = Scope(names, function.scope)
        universal, formals = node.child_by_field_name("universal"), node.child_by_field_name("formals")
        if universal is not None:
            names[node_text(universal)] = argument
        if formals is not None:
            given = self.force(argument)
            if isinstance(given, Opaque):
                given = AttrSet({}, open=True)
            if not isinstance(given, AttrSet):
                raise Unprovable(file, node, "a function of named arguments is called with no attribute set")
            for formal in formals.children_by_field_name("formal"):
                name, default = node_text(formal.child_by_field_name("name")), formal.child_by_field_name("default")
                if name in given.attrs:
                    names[name] = given.attrs[name]
                elif given.open:
                    # The caller (Flox, nixpkgs) may pass it or leave the default: either way it is not certain.
                    names[name] = Thunk.of(Opaque(f"the argument {name}", param=True))
                elif default is not None:
                    names[name] = Thunk(default, scope, file)
                else:
                    raise Unprovable(file, formal, f"the argument {name} is not given")
        return self.value_of(node.child_by_field_name("body"), scope, file, node)

    def _builtin(self, call: Builtin, node: Node | None, file: str) -> object:
        if call.name == "import":
            return self._import(self.force(call.args[0]), node, file)
        if call.name == "concatStringsSep":
            separator = self._strings_of(call.args[0], node, file)
            parts: list[str | Opaque] = []
            for index, item in enumerate(_items(call.args[1], self)):
                parts.extend(([separator[0]] if index else []) + list(self.text_of(self.force(item), node, file).parts))
            return _bounded_text(tuple(parts), file, node)
        before, after = (self._strings_of(arg, node, file) for arg in call.args[:2])
        literal = self.text_of(self.force(call.args[2]), node, file).literal()
        if literal is None or len(before) != len(after):
            raise Unprovable(file, node, "replaceStrings of a value pickvariant cannot read")
        for old, new in zip(before, after, strict=True):
            literal = literal.replace(old, new)
            if len(literal) > MAX_TEXT:
                break
        return _bounded_text((literal,), file, node)

    def _strings_of(self, thunk: Thunk, node: Node | None, file: str) -> list[str]:
        found = self.force(thunk)
        if isinstance(found, Text):
            literal = found.literal()
            if literal is not None:
                return [literal]
        if isinstance(found, NixList) and not found.spliced:
            values = [self.text_of(self.force(item), node, file).literal() for item in found.items]
            if all(value is not None for value in values):
                return [str(value) for value in values]
        raise Unprovable(file, node, "a function is given strings pickvariant cannot read")

    def text_of(self, value: object, node: Node | None, file: str) -> Text:
        if isinstance(value, Text):
            return value
        if isinstance(value, Opaque):
            return Text((value,))
        if isinstance(value, (PathValue, AttrSet)):
            return Text((Opaque("a store path"),))
        if isinstance(value, int) and not isinstance(value, bool):
            raise Unprovable(file, node, "a number where Nix wants a string")
        raise Unprovable(file, node, "a value that is no string where a string is wanted")

    def _import(self, target: object, node: Node | None, file: str) -> object:
        if not isinstance(target, PathValue):
            return Opaque("nixpkgs")  # `import (fetchTarball …)`, `import <nixpkgs>`
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(target.file), target.text))
        if resolved in self._imported:
            return self._imported[resolved]
        if resolved not in self.files or resolved.startswith("../") or target.text.startswith("/"):
            raise Unprovable(file, node, f"it imports {target.text}, a file whose content pickvariant does not read")
        text = self.files[resolved]
        if text is None:
            return Opaque(f"the recipe {resolved}")
        self._imported[resolved] = Opaque(f"{resolved} (being read)")  # a file importing itself stops here
        value = self._file_value(text, resolved, node)
        self._imported[resolved] = value
        return value

    def _file_value(self, text: str, file: str, node: Node | None) -> object:
        try:
            root = parse_tree(text)
        except NotNix as error:
            raise Unprovable(file, node, f"it cannot be read as Nix reads it: {error}") from None
        body = root.child_by_field_name("expression") or next(iter(root.named_children), None)
        if body is None:
            raise Unprovable(file, node, "it holds no expression")
        return self.eval(body, None, file)


def _items(thunk: Thunk, evaluation: Evaluation) -> Iterator[Thunk]:
    found = evaluation.force(thunk)
    if not isinstance(found, NixList) or found.spliced:
        raise Unprovable(RECIPE, thunk.node, "a list pickvariant cannot read whole")
    yield from found.items


# ---------------------------------------------------------------------- one handler per construct


def _parenthesized(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    return ev.value_of(node.child_by_field_name("expression"), scope, file, node)


def _integer(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    return int(node_text(node))


def _string(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    parts: list[str | Opaque] = []
    for part in string_parts(node):
        if isinstance(part, str):
            parts.append(part)
        else:
            parts.extend(ev.text_of(ev.value_of(part, scope, file, node), part, file).parts)
    return _bounded_text(tuple(parts), file, node)


def _path(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    if node.named_child_count != 1 or node.named_children[0].type != "path_fragment":
        raise Unprovable(file, node, "a path computed from values")
    return PathValue(node_text(node.named_children[0]), file)


def _spath(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    return Opaque(node_text(node))


def _variable(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    return ev.lookup(node_text(node.child_by_field_name("name")), scope, file, node)


def _list(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    return NixList(tuple(Thunk(item, scope, file) for item in node.children_by_field_name("element")))


def _function(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    return Lambda(node, scope, file)


def _apply(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    function = ev.value_of(node.child_by_field_name("function"), scope, file, node)
    argument = node.child_by_field_name("argument")
    if argument is None:
        raise Unprovable(file, node, "an incomplete call")
    return ev.apply(function, Thunk(argument, scope, file), node, file)


def _select(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    target = ev.value_of(node.child_by_field_name("expression"), scope, file, node)
    default = node.child_by_field_name("default")
    path = node.child_by_field_name("attrpath")
    for name in nixbind.attr_names(path, file, node):
        try:
            target = ev.select(target, name, file, node)
        except KeyError:
            if default is None:
                raise Unprovable(file, node, f"it selects {name}, which the set does not have") from None
            return ev.eval(default, scope, file)
    if isinstance(target, Opaque) and default is not None:
        # `old.preConfigure or ""`: whatever the caller's set holds, or the default, which the caller never sees.
        return target
    return target


def _unary(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    operand = ev.value_of(node.child_by_field_name("argument"), scope, file, node)
    operator = node_text(node.child_by_field_name("operator"))
    if operator == "-" and isinstance(operand, int) and not isinstance(operand, bool):
        return -operand
    if operator == "!" and isinstance(operand, bool):
        return not operand
    return Opaque(f"{operator}…")


def _binary(ev: Evaluation, node: Node, scope: Scope | None, file: str) -> object:
    operator = node_text(node.child_by_field_name("operator"))
    left = ev.value_of(node.child_by_field_name("left"), scope, file, node)
    right = ev.value_of(node.child_by_field_name("right"), scope, file, node)
    if operator == "+":
        if isinstance(left, int) and isinstance(right, int):
            return left + right
        if isinstance(left, PathValue):
            raise Unprovable(file, node, "a path joined to a string")
        return _bounded_text(ev.text_of(left, node, file).parts + ev.text_of(right, node, file).parts, file, node)
    if operator == "++":
        return _concat_lists(left, right, file, node)
    if operator == "//":
        return _update(left, right, file, node)
    return Opaque(f"a comparison ({operator})")


def _concat_lists(left: object, right: object, file: str, node: Node) -> NixList:
    items: list[Thunk] = []
    spliced: list[Opaque] = []
    for side in (left, right):
        if isinstance(side, NixList):
            items.extend(side.items)
            spliced.extend(side.spliced)
        elif isinstance(side, Opaque):
            spliced.append(side)
        else:
            raise Unprovable(file, node, "++ of a value that is no list")
    if len(items) + len(spliced) > MAX_ITEMS:
        raise Unprovable(file, node, f"a list of more than {MAX_ITEMS} items")
    return NixList(tuple(items), tuple(spliced))


def _bounded_text(parts: tuple[str | Opaque, ...], file: str, node: Node | None) -> Text:
    if len(parts) > MAX_ITEMS or sum(len(part) for part in parts if isinstance(part, str)) > MAX_TEXT:
        raise Unprovable(file, node, f"a string of more than {MAX_TEXT} characters")
    return Text(parts)


def _update(left: object, right: object, file: str, node: Node) -> AttrSet:
    if isinstance(right, Opaque):
        raise Unprovable(file, node, "// with a set pickvariant cannot read on the right, which overrides what is left")
    if not isinstance(right, AttrSet) or not isinstance(left, (AttrSet, Opaque)):
        raise Unprovable(file, node, "// of a value that is no attribute set")
    if isinstance(left, Opaque):
        return AttrSet(dict(right.attrs), open=True, file=right.file, line=right.line)
    return AttrSet({**left.attrs, **right.attrs}, open=left.open or right.open, file=right.file, line=right.line)


_HANDLERS: dict[str, Callable[[Evaluation, Node, Scope | None, str], object]] = {
    "parenthesized_expression": _parenthesized,
    "integer_expression": _integer,
    "string_expression": _string,
    "indented_string_expression": _string,
    "path_expression": _path,
    "spath_expression": _spath,
    "variable_expression": _variable,
    "list_expression": _list,
    "function_expression": _function,
    "apply_expression": _apply,
    "select_expression": _select,
    "unary_expression": _unary,
    "binary_expression": _binary,
    "attrset_expression": nixbind.attrset,
    "rec_attrset_expression": nixbind.attrset,
    "let_expression": nixbind.let,
}
