"""Answers that depend only on one long-lived object (a catalog) and a few plain values, worked out once.

`per_object` memoises a function on the identity of its first argument and the values of the others, in a table of
the function's own: the rules keep what they derive from a catalog beside the rule that derives it, not inside the
catalog. Each table holds its owner (so an owner's id cannot be reused while its answers are kept) and keeps the
last few owners only (a long-lived process that loads catalog after catalog frees the old ones' answers with them).

Why not functools.cache: it keys on equality, and a catalog's equality hashes a thousand variants on every call;
why not weakref: importing it costs detect 0.5 ms (benchmarks/detect_speed.py), and a few owners are enough.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off detect's path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Concatenate, ParamSpec, TypeVar

    Owner = TypeVar("Owner")
    P = ParamSpec("P")
    R = TypeVar("R")

OWNERS_KEPT = 4


def per_object(function: Callable[Concatenate[Owner, P], R]) -> Callable[Concatenate[Owner, P], R]:
    tables: dict[int, tuple[object, dict[object, R]]] = {}

    def remembered(owner: Owner, *args: P.args, **kwargs: P.kwargs) -> R:
        entry = tables.get(id(owner))
        if entry is not None and entry[0] is owner and not kwargs:  # the usual call, answered first
            try:
                return entry[1][args]
            except KeyError:
                pass
        if entry is None or entry[0] is not owner:
            entry = tables[id(owner)] = (owner, {})
            if len(tables) > OWNERS_KEPT:
                del tables[next(iter(tables))]  # the oldest owner, and its answers
        table = entry[1]
        key = (args, tuple(kwargs.items())) if kwargs else args
        try:
            return table[key]
        except KeyError:
            value = table[key] = function(owner, *args, **kwargs)
            return value

    remembered.__doc__ = function.__doc__
    remembered.__name__ = function.__name__
    return remembered
