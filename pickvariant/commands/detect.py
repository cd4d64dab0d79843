"""`pickvariant detect --format json`: the chosen source's answer as one JSON document, for both front ends (the typer
CLI, and entry's fast path, which loads no typer) and every source. The answer itself is the library's
(api.answer): detect, install and report take it and re-derive nothing."""

from __future__ import annotations

from pickvariant import api

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant._base.errors import NoVariant
    from pickvariant._base.request import Request


def json_text(
    request: Request, source: str, python: str | None, wheel_index: str | None, compact: bool, label: str | None
) -> tuple[str, NoVariant | None]:
    """detect's JSON document (on one line with `compact`, led by `label` where one is given) and, where nothing runs
    here, the error that ends the command (exit 3)."""
    import json

    choice = api.answer(request, source=source, python=python, wheel_index=wheel_index)
    document = choice.to_json()
    if label is not None:
        document = {"label": label, **document}
    text = json.dumps(document, separators=(",", ":")) if compact else json.dumps(document, indent=2)
    return text, (choice.no_variant_error() if choice.build is None else None)
