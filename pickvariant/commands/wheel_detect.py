"""`detect --source wheels --format json`'s one line, for both front ends. The wheels source's answer itself (its
facts, the environment a wheel would go into, the decision) is the library's (api.decide_wheel): detect, install and
report take the WheelAnswer and re-derive nothing."""

from __future__ import annotations

from pickvariant._base.errors import NoVariant
from pickvariant.api import WheelAsk, decide_wheel, environment_of, no_wheel_error, stated_machine

__all__ = ["WheelAsk", "decide_wheel", "environment_of", "no_wheel_error", "stated_machine", "wheel_json_line"]


def wheel_json_line(ask: WheelAsk, compact: bool, label: str | None) -> tuple[str, NoVariant | None]:
    """`detect --source wheels --format json`'s output and, where no wheel runs here, the error that ends it: both
    front ends (the typer CLI, and entry's fast path, which loads no typer) print exactly this."""
    import json

    from pickvariant.output.wheel_answer import wheel_json

    answer = decide_wheel(ask)
    document = wheel_json(answer)
    if label is not None:
        document = {"label": label, **document}
    text = json.dumps(document, separators=(",", ":")) if compact else json.dumps(document, indent=2)
    return text, (no_wheel_error(answer) if answer.decision.build is None else None)
