"""The values of nixeval's evaluation: what a recipe's expressions evaluate to, and where evaluation stops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node

RECIPE = ""  # the file name of the recipe itself, in Unprovable


class Unprovable(Exception):
    """What the recipe does cannot be evaluated for certain: where, and what was found."""

    def __init__(self, file: str, node: Node | None, what: str) -> None:
        super().__init__(what)
        self.file = file
        self.line = node.start_point[0] + 1 if node is not None else 0
        self.what = what

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "the recipe"
        return f"{where}{'' if self.file == RECIPE else ' of ' + self.file}: {self.what}"


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value pickvariant does not compute: nixpkgs', a caller's, or a build's."""

    what: str
    # For `old.preConfigure` where `old` is what overrideAttrs passes: the derivation's own earlier hook.
    own_hook: str | None = None
    param: bool = False  # a function's parameter, whose attributes are the caller's
    # For a call of an opaque function (`fetchpatch { url = …; hash = …; }`): the argument it was given, unevaluated.
    argument: Thunk | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class Text:
    """A string: literal parts and the opaque values interpolated into it."""

    parts: tuple[str | Opaque, ...]

    def literal(self) -> str | None:
        return (
            "".join(p for p in self.parts if isinstance(p, str))
            if all(isinstance(p, str) for p in self.parts)
            else None
        )


@dataclass(frozen=True, slots=True)
class PathValue:
    text: str  # as written, `./lib/cpu-isa.nix`
    file: str  # the file it was written in


@dataclass(slots=True)
class Thunk:
    node: Node | None
    scope: Scope | None
    file: str
    value: object = None
    done: bool = False
    compute: Callable[[], object] | None = None  # `inherit`: a value found elsewhere

    @classmethod
    def of(cls, value: object) -> Thunk:
        return cls(None, None, RECIPE, value, True)


@dataclass(slots=True)
class Scope:
    names: dict[str, Thunk]
    parent: Scope | None


@dataclass(slots=True)
class AttrSet:
    attrs: dict[str, Thunk]
    open: bool = False  # `opaque // { … }`: attributes beyond these exist, unknown
    file: str = RECIPE
    line: int = 0


@dataclass(slots=True)
class NixList:
    items: tuple[Thunk, ...]
    # `(old.cmakeFlags or []) ++ [ … ]`: opaque lists joined in, by what they are
    spliced: tuple[Opaque, ...] = ()


@dataclass(slots=True)
class Lambda:
    node: Node
    scope: Scope | None
    file: str


@dataclass(slots=True)
class Builtin:
    name: str
    arity: int
    args: tuple[Thunk, ...] = ()


class Evaluator(Protocol):
    """What the construct handlers ask of the evaluation (nixeval.Evaluation)."""

    def eval(self, node: Node, scope: Scope | None, file: str) -> object: ...

    def value_of(self, node: Node | None, scope: Scope | None, file: str, parent: Node) -> object: ...

    def force(self, thunk: Thunk) -> object: ...

    def lookup(self, name: str, scope: Scope | None, file: str, node: Node) -> object: ...

    def select(self, target: object, name: str, file: str, node: Node) -> object: ...


def node_text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass") if node is not None else ""
