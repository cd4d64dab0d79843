"""The bindings of Nix sets and `let`, as nixeval evaluates them: lazily, with Nix's scoping.

`rec { … }` and `let` see their own bindings; a plain set does not; `inherit x;` takes the `x` of the scope
outside; `inherit (e) x;` takes `e.x`; `a.b = …;` builds nested sets. A name bound twice is refused, as Nix does.
"""

from __future__ import annotations

from pickvariant.sources.flox.nixvalues import AttrSet, Evaluator, Scope, Thunk, Unprovable, node_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node


def attrset(ev: Evaluator, node: Node, scope: Scope | None, file: str) -> object:
    recursive = node.type == "rec_attrset_expression"
    attrs: dict[str, Thunk] = {}
    inner = Scope(attrs, scope) if recursive else scope
    _bind(ev, _binding_set(node), attrs, inner, scope, file)
    return AttrSet(attrs, file=file, line=node.start_point[0] + 1)


def let(ev: Evaluator, node: Node, scope: Scope | None, file: str) -> object:
    names: dict[str, Thunk] = {}
    inner = Scope(names, scope)
    _bind(ev, _binding_set(node), names, inner, scope, file)
    return ev.value_of(node.child_by_field_name("body"), inner, file, node)


def _binding_set(node: Node) -> Node | None:
    return next((child for child in node.named_children if child.type == "binding_set"), None)


def attr_names(path: Node | None, file: str, node: Node) -> list[str]:
    names = []
    for attr in path.children_by_field_name("attr") if path is not None else ():
        if attr.type != "identifier":
            raise Unprovable(file, node, "an attribute name computed from values")
        names.append(node_text(attr))
    if not names:
        raise Unprovable(file, node, "an attribute path with no name")
    return names


def _bind(
    ev: Evaluator, bindings: Node | None, into: dict[str, Thunk], inner: Scope | None, outer: Scope | None, file: str
) -> None:
    """The bindings of a set or let into `into`: values in `inner`, `inherit` from `outer` (Nix's rule)."""
    for binding in bindings.children_by_field_name("binding") if bindings is not None else ():
        if binding.type == "binding":
            names = attr_names(binding.child_by_field_name("attrpath"), file, binding)
            value = binding.child_by_field_name("expression")
            if value is None:
                raise Unprovable(file, binding, "a binding with no value")
            _bind_path(ev, into, names, Thunk(value, inner, file), file, binding)
            continue
        source = binding.child_by_field_name("expression")
        attrs = binding.child_by_field_name("attrs")
        for attr in attrs.children_by_field_name("attr") if attrs is not None else ():
            name = node_text(attr)
            if name in into:
                raise Unprovable(file, binding, f"{name} is bound twice")
            into[name] = _inherited(ev, attr, name, outer, None if source is None else Thunk(source, inner, file), file)


def _inherited(ev: Evaluator, node: Node, name: str, outer: Scope | None, owner: Thunk | None, file: str) -> Thunk:
    """`inherit name;` (the name in the scope outside) or `inherit (owner) name;` (owner's attribute)."""

    def value() -> object:
        if owner is None:
            return ev.lookup(name, outer, file, node)
        try:
            return ev.select(ev.force(owner), name, file, node)
        except KeyError:
            raise Unprovable(file, node, f"it inherits {name}, which the set does not have") from None

    return Thunk(node, None, file, compute=value)


def _bind_path(ev: Evaluator, into: dict[str, Thunk], names: list[str], thunk: Thunk, file: str, node: Node) -> None:
    head, rest = names[0], names[1:]
    if not rest:
        if head in into:
            raise Unprovable(file, node, f"{head} is bound twice")
        into[head] = thunk
        return
    existing = into.get(head)
    if existing is None:
        nested = AttrSet({}, file=file, line=node.start_point[0] + 1)
        into[head] = Thunk.of(nested)
    else:
        found = ev.force(existing)
        if not isinstance(found, AttrSet) or existing.node is not None:
            raise Unprovable(file, node, f"{head} is bound twice")
        nested = found
    _bind_path(ev, nested.attrs, rest, thunk, file, node)
