"""Frozen value types that cost nothing to define: `@record` instead of `@dataclass(frozen=True)`.

Why not the standard library: `dataclasses` writes each generated method as source text and
compiles it with exec(). On a 2-core VM, importing dataclasses (with the `inspect` module it
loads) took 9 ms and decorating the 25 value types `detect` imports took 20 ms more, together
more than archspec's whole host detection as a process (benchmarks/detect_speed.py). msgspec's
Struct defines classes quickly but costs 20 ms to import (typing, datetime, decimal, uuid); attrs
generates code as dataclasses do. A record's methods are closures over its field names, so
defining one costs microseconds.

A record is what a frozen dataclass is for this package: fields from the class annotations in
order, defaults from class attributes (immutable ones, so no default factory is needed),
an __init__ taking them positionally or by name, equality and hashing over the field values,
a repr naming them, comparisons field by field with @ordered_record, and no assignment after construction.
`functools.cached_property` works (it writes the instance __dict__ directly). Records do not
inherit from one another. Type checkers read `@record` as a frozen dataclass (PEP 681).
Mutable working state (cluster_input.Inputs, repository.GitRepository) stays with `dataclasses`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any, Generic, TypeVar, dataclass_transform

    Cls = TypeVar("Cls", bound=type)
    R = TypeVar("R")
    B = TypeVar("B")  # a source's build
    C = TypeVar("C")  # a source's companion
    D = TypeVar("D")  # what a kind of source's decision adds to every source's (rules/decision.py)

    class OfBuilds(Generic[B, C]):
        """A record generic in a source's build and companion (rules/cluster_plan.ClusterPlan), as a type checker
        reads it."""

    class OfKind(Generic[B, C, D]):
        """A record generic in a source's build, its companion and what its kind adds (rules/decision.Decision and
        Answer), as a type checker reads it."""

else:

    def dataclass_transform(**_: object) -> Callable[[Callable[..., object]], Callable[..., object]]:
        """At run time the decorator only informs type checkers, which see typing's own."""
        return lambda function: function

    B = C = D = None

    class OfBuilds:
        """At run time (typing stays off detect's path) a record's parameters are for type checkers only:
        Decision[Variant, Companion, RecipeDetail] is Decision itself."""

        def __class_getitem__(cls, _item: object) -> type:
            return cls

    OfKind = OfBuilds


class FrozenRecordError(AttributeError):
    """Assigning to or deleting an attribute of a record."""


@dataclass_transform(frozen_default=True)
def record(cls: Cls) -> Cls:
    """Make `cls` a frozen record (see the module docstring)."""
    _make(cls, order=False)
    return cls


@dataclass_transform(frozen_default=True, kw_only_default=True)
def keyword_record(cls: Cls) -> Cls:
    """A record built by field names only: for records with many fields of one type, where a
    position would be easy to get wrong."""
    _make(cls, order=False, keyword_only=True)
    return cls


@dataclass_transform(frozen_default=True, order_default=True)
def ordered_record(cls: Cls) -> Cls:
    """A record that also compares with <, <=, >, >= field by field (dataclass order=True)."""
    _make(cls, order=True)
    return cls


def fields(instance_or_class: object) -> tuple[str, ...]:
    """The field names of a record (class or instance), in order."""
    names: tuple[str, ...] = getattr(instance_or_class, "__record_fields__")  # noqa: B009  # set by _make, unknown to type checkers
    return names


def replace(instance: R, /, **changes: Any) -> R:
    """A copy of the record `instance` with the named fields changed (dataclasses.replace's contract)."""
    values = {name: getattr(instance, name) for name in fields(instance)}
    values.update(changes)
    return type(instance)(**values)


def _is_class_variable(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return isinstance(text, str) and text.split("[", 1)[0] in ("ClassVar", "typing.ClassVar")


def _make(cls: type, order: bool, keyword_only: bool = False) -> None:
    names, defaults = _fields_of(cls)
    class_name = cls.__name__
    values_of: Callable[[Any], tuple[Any, ...]] = (
        operator.attrgetter(*names) if len(names) > 1 else (lambda self: tuple(getattr(self, name) for name in names))
    )
    methods = {
        "__init__": _init_for(class_name, names, defaults, keyword_only),
        **_value_methods(class_name, names, values_of),
    }
    if order:
        for method, compare in (
            ("__lt__", operator.lt),
            ("__le__", operator.le),
            ("__gt__", operator.gt),
            ("__ge__", operator.ge),
        ):
            methods[method] = _comparison(compare, values_of)
    # As dataclasses do, a method the class writes itself stays (DriverVersion compares padded parts);
    # a __hash__ that Python set to None because the class wrote __eq__ is not one of them.
    own = vars(cls)
    for method, function in methods.items():
        if method in own and not (method == "__hash__" and own[method] is None and "__eq__" in own):
            continue
        function.__qualname__ = f"{cls.__qualname__}.{method}"
        setattr(cls, method, function)
    # setattr: type checkers know neither attribute of an arbitrary class (and __match_args__ as read-only).
    setattr(cls, "__record_fields__", names)  # noqa: B010
    setattr(cls, "__match_args__", names)  # noqa: B010


def _fields_of(cls: type) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The class's fields in order and their defaults; refused where a default is mutable or out of order."""
    # vars() rather than getattr: before Python 3.14 a class without annotations of its own would show its base's.
    annotations: dict[str, object] = vars(cls).get("__annotations__") or getattr(cls, "__annotations__", {})
    names = tuple(name for name, annotation in annotations.items() if not _is_class_variable(annotation))
    defaults = {name: cls.__dict__[name] for name in names if name in cls.__dict__}
    for position, name in enumerate(names):
        if name in defaults and isinstance(defaults[name], (list, dict, set, bytearray)):
            raise TypeError(
                f"{cls.__name__}.{name}: a mutable default ({type(defaults[name]).__name__}) would be shared by every instance; "
                "give an immutable one (a tuple, frozenset or types.MappingProxyType)"
            )
        if name not in defaults and any(earlier in defaults for earlier in names[:position]):
            raise TypeError(f"{cls.__name__}.{name}: a field without a default follows one with a default")
    return names, defaults


def _init_for(
    class_name: str, names: tuple[str, ...], defaults: dict[str, Any], keyword_only: bool
) -> Callable[..., None]:
    known = frozenset(names)
    count = len(names)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args and keyword_only:
            raise TypeError(f"{class_name}() takes its fields by name only")
        if len(args) > count:
            raise TypeError(f"{class_name}() takes {count} positional arguments but {len(args)} were given")
        # Filling __dict__ directly is how a frozen object is built without its own __setattr__.
        state = self.__dict__
        if args:
            state.update(zip(names, args, strict=False))
        if kwargs:
            # Set operations over the names (every record is built this way, hundreds per answer): one pass in C.
            if not known.issuperset(kwargs):
                unknown = next(name for name in kwargs if name not in known)
                raise TypeError(f"{class_name}() got an unexpected keyword argument {unknown!r}")
            if args and not state.keys().isdisjoint(kwargs):
                twice = next(name for name in kwargs if name in state)
                raise TypeError(f"{class_name}() got multiple values for argument {twice!r}")
            state.update(kwargs)
        if len(state) != count:
            for name in names:
                if name not in state:
                    if name not in defaults:
                        raise TypeError(f"{class_name}() missing required argument {name!r}")
                    state[name] = defaults[name]

    return __init__


def _value_methods(
    class_name: str, names: tuple[str, ...], values_of: Callable[[Any], tuple[Any, ...]]
) -> dict[str, Callable[..., Any]]:
    """repr, equality and hash by the fields' values; assignment and deletion refused."""

    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(values_of(self) == values_of(other))
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(values_of(self))

    def __setattr__(self: Any, name: str, value: object) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r} of a {class_name}")

    def __delattr__(self: Any, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r} of a {class_name}")

    return {
        "__repr__": __repr__,
        "__eq__": __eq__,
        "__hash__": __hash__,
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
    }


def _comparison(
    compare: Callable[[Any, Any], bool], values_of: Callable[[Any], tuple[Any, ...]]
) -> Callable[[Any, object], bool]:
    def method(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return compare(values_of(self), values_of(other))
        return NotImplemented

    return method
