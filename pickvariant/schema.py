"""A small validator for the subset of JSON Schema that catalog.schema.json uses.

Kept in-house so that loading the catalog costs no import of a full JSON Schema
library on every `pickvariant detect`; tests check that the real `jsonschema`
package agrees with it on the shipped catalog and on broken ones.
"""

from __future__ import annotations

import re
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


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def validate(instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, path: str = "") -> None:
    """Raise SchemaError naming the first field that does not match `schema`."""
    root = schema if root is None else root
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise SchemaError(path, f"unsupported $ref {ref}")
        validate(instance, root["$defs"][ref.removeprefix("#/$defs/")], root, path)
        return
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_is_type(instance, name) for name in names):
            raise SchemaError(path, f"expected {' or '.join(names)}, got {type(instance).__name__} {instance!r:.60}")
    if instance is None:
        return
    if "enum" in schema and instance not in schema["enum"]:
        raise SchemaError(path, f"{instance!r} is not one of {schema['enum']}")
    if isinstance(instance, str) and "pattern" in schema and not re.search(schema["pattern"], instance):
        raise SchemaError(path, f"{instance!r:.80} does not match {schema['pattern']}")
    if _is_type(instance, "number") and "minimum" in schema and instance < schema["minimum"]:
        raise SchemaError(path, f"{instance} is below the minimum {schema['minimum']}")
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            raise SchemaError(path, f"needs at least {schema['minItems']} item(s)")
        if "items" in schema:
            for index, item in enumerate(instance):
                validate(item, schema["items"], root, _join(path, index))
    if isinstance(instance, dict):
        for key in schema.get("required", ()):
            if key not in instance:
                raise SchemaError(_join(path, key), "required field is missing")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, value in instance.items():
            if key in properties:
                validate(value, properties[key], root, _join(path, key))
            elif extra is False:
                raise SchemaError(_join(path, key), "unknown field")
            elif isinstance(extra, dict):
                validate(value, extra, root, _join(path, key))
