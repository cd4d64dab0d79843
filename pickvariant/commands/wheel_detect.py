"""The wheels source's answer for a machine: its facts, the environment a wheel would go into, and the decision.

A plain function from a request to a result record, as every command is; detect, install and report take the
WheelAnswer and re-derive nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pickvariant._base import settings
from pickvariant._base.errors import NoVariant
from pickvariant._base.records import keyword_record
from pickvariant._base.request import Request
from pickvariant._base.urls import public_url
from pickvariant.machine.environment import PythonEnvironment, active_interpreter, read_environment
from pickvariant.machine.facts import gather_facts
from pickvariant.rules.decision import WheelAnswer
from pickvariant.rules.wheel_pick import pick_wheel


@keyword_record
class WheelAsk:
    request: Request
    python: str | None = None  # --python PATH: the interpreter to install into
    wheel_index: str | None = None  # --wheel-index URL
    # A report of a stated machine: nothing of this one is mixed in (a stated machine needs its CPU), as for recipes.
    described: bool = False


def stated_machine(request: Request, env: Mapping[str, str]) -> bool:
    """Is the machine described by options or variables rather than read here? Then the environment here is not
    the one a wheel is for, unless --python names it."""
    variables = (settings.GPU, settings.CPUINFO, settings.DRIVER)
    return bool(request.gpus or request.no_gpu or request.cpuinfo or any(settings.setting(env, v) for v in variables))


def environment_of(ask: WheelAsk, env: Mapping[str, str]) -> PythonEnvironment | None:
    """The environment a wheel would be installed into: --python's, else (for this machine) the active one."""
    if ask.python is not None:
        return read_environment(ask.python, "--python", env)
    if stated_machine(ask.request, env):
        return None
    interpreter, given_as = active_interpreter(env)
    return read_environment(interpreter, given_as, env)


def decide_wheel(ask: WheelAsk, env: Mapping[str, str] | None = None) -> WheelAnswer:
    from pickvariant.api import default_catalog
    from pickvariant.sources.wheels.load import load_wheel_catalog

    environment_vars = os.environ if env is None else env
    hardware = default_catalog()
    wheels = load_wheel_catalog()
    given_root = settings.wheel_index(ask.wheel_index, environment_vars, wheels.index_root)
    root = public_url(given_root)  # what is shown, printed and recorded: never a credential
    facts = gather_facts(hardware, ask.request, environment_vars, detect_unstated=not ask.described)
    environment = environment_of(ask, environment_vars)
    request = ask.request.with_environment(environment_vars)
    decision = pick_wheel(facts, hardware, wheels, request, environment, root)
    return WheelAnswer(
        facts=facts,
        decision=decision,
        hardware=hardware,
        wheels=wheels,
        environment=environment,
        index_root=root,
        workload=request.workload,
        index_root_with_credentials=given_root if given_root != root else None,
    )


def no_wheel_error(answer: WheelAnswer) -> NoVariant:
    """Exit 3's one line where no wheel runs here: the last reason and the hints."""
    decision = answer.decision
    return NoVariant("no compatible wheel for this machine: " + "; ".join(decision.reasons[-1:] + decision.hints))


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
