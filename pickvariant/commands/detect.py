"""`pickvariant detect`: the chosen source's answer as one JSON document for every source, and as text or Markdown
(a prebuilt build's also as a requirements file or a pyproject block), for both front ends (the typer CLI, and
entry's fast path, which loads no typer). The answer itself is the library's (api.answer), its text the source's
pipeline's (pipelines/): detect, install and report take it and re-derive nothing."""

from __future__ import annotations

from pickvariant import api, pipelines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant._base.errors import NoVariant
    from pickvariant._base.request import Request


def json_text(request: Request, compact: bool, label: str | None) -> tuple[str, NoVariant | None]:
    """detect's JSON document of the source the request asks (on one line with `compact`, led by `label` where one is
    given) and, where nothing runs here, the error that ends the command (exit 3)."""
    import json

    choice = api.answer(request)
    document = choice.to_json()
    if label is not None:
        document = {"label": label, **document}
    text = json.dumps(document, separators=(",", ":")) if compact else json.dumps(document, indent=2)
    return text, (choice.no_variant_error() if choice.build is None else None)


def answer_text(
    request: Request, output: str, width: int, explain: bool = False, colour: bool = False
) -> tuple[str, NoVariant | None]:
    """The chosen source's answer as `output` prints it (text `width` columns wide, its first line coloured with
    `colour`, with --explain every alternative where the source's is text; markdown; a prebuilt build's requirements
    or pyproject, a file's content, only where a build runs here) and, where none runs here, the error that ends the
    command (exit 3)."""
    choice = api.answer(request)
    text = pipelines.of(choice.answer.source).text(choice.answer, output, width, explain, colour)
    return text, (choice.no_variant_error() if choice.build is None else None)
