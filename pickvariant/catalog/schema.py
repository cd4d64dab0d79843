"""A small validator for the subset of JSON Schema that catalog.schema.json uses.

Kept in-house so that loading the catalog costs no import of a full JSON Schema
library on every `pickvariant detect`; tests check that the real `jsonschema`
package agrees with it on the shipped catalog and on broken ones.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


class SchemaError(ValueError):
    """Carries the JSON path of the offending field, e.g. `branches[0].min_driver`."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '(top level)'}: {message}")
        self.path = path


class _Mismatch(Exception):
    """Raised by a compiled check; each enclosing object or array adds its key on the way out."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.keys: list[str | int] = []


Check = Callable[[object], None]


def _path(keys: list[str | int]) -> str:
    path = ""
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)
    return path


def _compile(schema: dict[str, Any], root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """One closure per schema node, built once: a thousand catalog rows are checked without
    re-reading the schema or formatting a path until something fails."""
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise SchemaError("", f"unsupported $ref {ref}")
        name = ref.removeprefix("#/$defs/")
        if name not in refs:
            refs[name] = _compile(root["$defs"][name], root, refs)
        return refs[name]
    checks: list[Check] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        allowed = tuple(t for name in names for t in _TYPES[name])
        no_bool = "boolean" not in names
        wanted = " or ".join(names)

        def check_type(value: Any) -> None:
            if not isinstance(value, allowed) or (no_bool and isinstance(value, bool)):
                raise _Mismatch(f"expected {wanted}, got {type(value).__name__} {value!r:.60}")

        checks.append(check_type)
    if "enum" in schema:
        choices = schema["enum"]

        def check_enum(value: Any) -> None:
            if value is not None and value not in choices:
                raise _Mismatch(f"{value!r} is not one of {choices}")

        checks.append(check_enum)
    if "pattern" in schema:
        pattern = re.compile(schema["pattern"])

        def check_pattern(value: Any) -> None:
            if isinstance(value, str) and not pattern.search(value):
                raise _Mismatch(f"{value!r:.80} does not match {pattern.pattern}")

        checks.append(check_pattern)
    if "minimum" in schema:
        minimum = schema["minimum"]

        def check_minimum(value: Any) -> None:
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < minimum:
                raise _Mismatch(f"{value} is below the minimum {minimum}")

        checks.append(check_minimum)
    if "minItems" in schema or "items" in schema:
        min_items = schema.get("minItems", 0)
        item_check = _compile(schema["items"], root, refs) if "items" in schema else None

        by_columns = _column_check(schema["items"], root, refs) if "items" in schema else None

        def check_items(value: Any) -> None:
            if not isinstance(value, list):
                return
            if len(value) < min_items:
                raise _Mismatch(f"needs at least {min_items} item(s)")
            if by_columns is not None and by_columns(value):
                return
            if item_check is not None:
                for index, item in enumerate(value):
                    try:
                        item_check(item)
                    except _Mismatch as mismatch:
                        mismatch.keys.append(index)
                        raise

        checks.append(check_items)
    if any(key in schema for key in ("required", "properties", "additionalProperties")):
        required = tuple(schema.get("required", ()))
        properties = {key: _compile(sub, root, refs) for key, sub in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        extra_check = _compile(extra, root, refs) if isinstance(extra, dict) else None

        required_keys = frozenset(required)

        def check_object(value: Any) -> None:
            if not isinstance(value, dict):
                return
            if not required_keys <= value.keys():
                mismatch = _Mismatch("required field is missing")
                mismatch.keys.append(next(key for key in required if key not in value))
                raise mismatch
            for key, item in value.items():
                check = properties.get(key)
                if check is None:
                    if extra is False:
                        mismatch = _Mismatch("unknown field")
                        mismatch.keys.append(key)
                        raise mismatch
                    check = extra_check
                    if check is None:
                        continue
                try:
                    check(item)
                except _Mismatch as mismatch:
                    mismatch.keys.append(key)
                    raise

        checks.append(check_object)

    def check_all(value: Any) -> None:
        for check in checks:
            check(value)
            if value is None:
                return

    whole = checks[0] if len(checks) == 1 else check_all
    if "items" in schema or "properties" in schema or "additionalProperties" in schema or "required" in schema:
        return whole
    # A leaf: catalog rows repeat the same few values (branch, version, platform) a thousand
    # times, so each value that passed is remembered rather than matched again.
    passed_strings: set[str] = set()
    # The common leaf, a string with a pattern, answers with one regex search; anything
    # else (and every failure, for its message) goes through the full checks.
    plain_pattern = re.compile(schema["pattern"]) if "pattern" in schema and "enum" not in schema and "string" in (
        [types] if isinstance(types, str) else list(types or ())) else None

    def check_leaf(value: Any) -> None:
        if type(value) is str:
            if value not in passed_strings:
                if plain_pattern is None or not plain_pattern.search(value):
                    whole(value)
                passed_strings.add(value)
            return
        whole(value)

    check_leaf.is_leaf = True  # type: ignore[attr-defined]
    return check_leaf


_NUMERIC = frozenset({bool, int, float})


def _column_check(item_schema: dict[str, Any], root: dict[str, Any], refs: dict[str, Check]) -> Callable[[list[Any]], bool] | None:
    """For an array of closed objects whose fields are all required leaves (the catalog's
    thousand variant rows), check each column's distinct values once, mostly in C.

    Returns a function that answers True when every item passed; False sends the caller
    to the item-by-item check, which finds the first bad field and names its path, so a
    failure reads exactly as without this shortcut."""
    while "$ref" in item_schema:
        item_schema = root["$defs"][item_schema["$ref"].removeprefix("#/$defs/")]
    properties = item_schema.get("properties", {})
    required = item_schema.get("required", ())
    if item_schema.get("additionalProperties", True) is not False or set(required) != set(properties) or not properties:
        return None
    keys = tuple(properties)
    leaves = [_compile(properties[key], root, refs) for key in keys]
    if not all(getattr(leaf, "is_leaf", False) for leaf in leaves):
        return None
    width = len(keys)
    values_of = operator.itemgetter(*keys)

    def check_columns(items: list[Any]) -> bool:
        if not items:
            return True
        if set(map(type, items)) != {dict} or set(map(len, items)) != {width}:
            return False
        try:
            rows = list(map(values_of, items))
        except KeyError:
            return False
        columns = zip(*rows) if width > 1 else [rows]
        for leaf, column in zip(leaves, columns):
            # 1 == True == 1.0 would share one set entry: such a column is checked row by row.
            if len(set(map(type, column)) & _NUMERIC) > 1:
                return False
            try:
                distinct = set(column)
            except TypeError:  # a list or object where a leaf belongs
                return False
            try:
                for value in distinct:
                    leaf(value)
            except _Mismatch:
                return False
        return True

    return check_columns


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """Raise SchemaError naming the first field that does not match `schema`."""
    try:
        _compile(schema, schema, {})(instance)
    except _Mismatch as mismatch:
        raise SchemaError(_path(mismatch.keys), mismatch.message) from None
