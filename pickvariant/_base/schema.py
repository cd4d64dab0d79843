"""Checking a document from outside (the catalog, a probe's result, a detect line, last-install.json) against a JSON Schema with `jsonschema`, reported as pickvariant reports a bad field.

The validator is the maintained `jsonschema` package, imported only when a document is checked: a
catalog that `catalog sync` wrote and stamped is not checked again on load (sources/flox/recipes/load.py), so
`detect` never pays for the import. What this module adds is the report: the first offending field
in document order, named by its path (`variants[3].cpu_isa`), with a one-line reason.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any


class SchemaError(ValueError):
    """Carries the JSON path of the offending field, e.g. `branches[0].min_driver`."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '(top level)'}: {message}")
        self.path = path


# Within one value, the order in which its own faults are reported (before any fault inside it).
_KEYWORD_ORDER = (
    "type",
    "const",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "required",
    "additionalProperties",
)


def _path(keys: Sequence[str | int]) -> str:
    path = ""
    for key in keys:
        path = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)
    return path


def _size(value: Any) -> str:
    return str(len(value)) if isinstance(value, (str, list)) else "?"


# The reason for each keyword's refusal, as pickvariant words it: (the value, what the schema expects).
_MESSAGES: dict[str, Callable[[Any, Any], str]] = {
    "type": lambda value, expected: (
        f"expected {' or '.join([expected] if isinstance(expected, str) else expected)}, "
        f"got {type(value).__name__} {value!r:.60}"
    ),
    "const": lambda value, expected: f"{value!r:.60} is not {expected!r}",
    "enum": lambda value, expected: f"{value!r} is not one of {expected}",
    "pattern": lambda value, expected: f"{value!r:.80} does not match {expected}",
    "minLength": lambda value, expected: f"{value!r:.80} is shorter than {expected} character(s)",
    "maxLength": lambda value, expected: f"{_size(value)} characters, more than {expected}",
    "minimum": lambda value, expected: f"{value} is below the minimum {expected}",
    "maximum": lambda value, expected: f"{value} is above the maximum {expected}",
    "minItems": lambda value, expected: f"needs at least {expected} item(s)",
    "maxItems": lambda value, expected: f"{_size(value)} items, more than {expected}",
}


def _message(keyword: str, value: Any, expected: Any) -> str:
    worded = _MESSAGES.get(keyword)
    return worded(value, expected) if worded else f"does not satisfy {keyword} {expected!r:.80}"


def _faults(instance: Any, schema: Mapping[str, Any]) -> Iterator[tuple[tuple[Any, ...], list[str | int], str]]:
    """(order, path, message) for each fault: order sorts them as a depth-first walk of the document meets them."""
    for error in _validator(schema).iter_errors(instance):
        keys = list(error.absolute_path)
        keyword = str(error.validator)
        message = _message(keyword, error.instance, error.validator_value)
        if keyword == "required" and isinstance(error.instance, Mapping):
            # The field that is missing is named, as the first the schema requires.
            keys.append(next(key for key in error.validator_value if key not in error.instance))
            message = "required field is missing"
        elif keyword == "additionalProperties" and isinstance(error.instance, Mapping):
            allowed = error.schema.get("properties", {})
            keys.append(next(key for key in error.instance if key not in allowed))
            message = "unknown field"
        order = _order(instance, keys, keyword)
        yield order, keys, message


# Checkers built once per schema object, by kind ("jsonschema", "fast"); the schema is kept beside its
# checker so that an id reused by another object is never taken for it.
_CHECKERS: dict[tuple[str, int], tuple[Mapping[str, Any], Any]] = {}


def _checker(kind: str, schema: Mapping[str, Any], build: Callable[[Mapping[str, Any]], Any]) -> Any:
    known = _CHECKERS.get((kind, id(schema)))
    if known is None or known[0] is not schema:
        known = _CHECKERS[(kind, id(schema))] = (schema, build(schema))
    return known[1]


def _validator(schema: Mapping[str, Any]) -> Any:
    """jsonschema's validator for `schema`: the reference, and what names the field at fault."""

    def build(rules: Mapping[str, Any]) -> Any:
        from jsonschema import Draft202012Validator

        return Draft202012Validator(rules)

    return _checker("jsonschema", schema, build)


def _compiled(schema: Mapping[str, Any]) -> Callable[[Any], bool]:
    """`schema` compiled by fastjsonschema to a function that answers True for a valid document."""

    def build(rules: Mapping[str, Any]) -> Callable[[Any], bool]:
        import fastjsonschema

        check = fastjsonschema.compile(json.loads(json.dumps(rules)))

        def valid(instance: Any) -> bool:
            try:
                check(instance)
            except fastjsonschema.JsonSchemaException:
                return False
            return True

        return valid

    checker: Callable[[Any], bool] = _checker("fast", schema, build)
    return checker


def load_schema(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    """A schema file of the package (read once per process)."""
    return _load_schema(os.fspath(path))


@functools.cache
def _load_schema(path: str) -> Mapping[str, Any]:
    with open(path, encoding="utf-8") as file:
        schema: Mapping[str, Any] = json.load(file)
    return schema


def _order(instance: Any, keys: list[str | int], keyword: str) -> tuple[Any, ...]:
    steps: list[tuple[int, int]] = []
    value = instance
    own = keyword not in ("required", "additionalProperties")
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        position = (list(value).index(key) if key in value else -1) if isinstance(value, Mapping) else int(key)
        if last and not own:
            # A missing or unknown field is found while its object is read, before what lies inside the object's fields.
            steps.append((1, position))
            break
        steps.append((1, position))
        value = value[key] if (isinstance(value, Mapping) and key in value) or not isinstance(value, Mapping) else None
    rank = _KEYWORD_ORDER.index(keyword) if keyword in _KEYWORD_ORDER else len(_KEYWORD_ORDER)
    return (*steps, (0, rank))


def validate(instance: Any, schema: Mapping[str, Any]) -> None:
    """Raise SchemaError naming the first field (in document order) that does not match `schema`.

    The usual answer, valid, comes from fastjsonschema, which compiles the schema to Python (a plan
    checks 100k detect lines: 40 us each, where jsonschema takes 3 ms); anything it refuses is judged
    again by jsonschema, the reference, which also names the field. Tests hold the two to the same
    answers."""
    if _compiled(schema)(instance):
        return
    first = min(_faults(instance, schema), key=lambda fault: fault[0], default=None)
    if first is not None:
        _, keys, message = first
        raise SchemaError(_path(keys), message)
