"""`pickvariant detect`: the chosen source's answer as one JSON document for every source, and a source of prebuilt
builds' answer as text, Markdown, a requirements file or a pyproject block, for both front ends (the typer CLI, and
entry's fast path, which loads no typer). The answer itself is the library's (api.answer): detect, install and
report take it and re-derive nothing."""

from __future__ import annotations

from pickvariant import api

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


def prebuilt_text(request: Request, output: str, width: int, explain: bool = False) -> tuple[str, NoVariant | None]:
    """A source of prebuilt builds' answer as `output` prints it (text `width` columns wide, with --explain every
    alternative; markdown; requirements or pyproject, a file's content, only where a build runs here) and, where
    none runs here, the error that ends the command (exit 3)."""
    from pickvariant.output import prebuilt_answer

    answer = api.decide_prebuilt(request)
    found = answer.decision.build is not None
    if output == "markdown":
        text = prebuilt_answer.prebuilt_markdown(answer)
    elif output == "text":
        text = "\n".join(prebuilt_answer.prebuilt_text_lines(answer, width, explain)) + "\n"
    elif not found:
        text = ""
    else:
        text = (prebuilt_answer.requirements_text if output == "requirements" else prebuilt_answer.pyproject_text)(
            answer
        )
    return text, (None if found else api.no_prebuilt_error(answer))
