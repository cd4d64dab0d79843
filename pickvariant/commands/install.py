"""`pickvariant install`: the one flow every source's install takes (`run`): the plan shown, the user's consent asked
through a callback, the install carried out, its torch verified. It takes an `Installation`, the part the chosen
source names (sources/flox/installation.py's FloxInstallation, commands/prebuilt_install.py's PrebuiltInstallation,
a plug-in's own), made by commands/installation.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant.verify import judge as verifier


@keyword_record
class Carried:
    """What carrying out an installation did: the lines that say so, its warnings (for stderr) and its log."""

    done: tuple[str, ...]
    log: Path
    warnings: tuple[str, ...] = ()


class Installation(Protocol):
    """One install, whichever source it is of: its plan as lines and as data, what consent asks, how it runs and
    how its torch is verified (None: --no-verify)."""

    @property
    def replaces(self) -> str | None: ...  # the torch there that it replaces, which the question names

    @property
    def nothing_to_do(self) -> bool: ...  # what it would install is there already (or a working torch is kept)

    @property
    def progress_of(self) -> str | None: ...  # the build a progress view names while it runs; None: lines as they come

    def plan_lines(self) -> list[str]: ...

    def plan_json(self) -> dict[str, Any]: ...

    def carry_out(self, on_line: Callable[[str], None]) -> Carried: ...

    def verify(self) -> verifier.VerifyResult | None: ...


@keyword_record
class Talk:
    """How `run` speaks and asks: `say` (stdout), `warn` (stderr), `consent` (asked with the torch replaced, or
    None), `progress` (a view around the run, given what it names, yielding the line callback)."""

    say: Callable[[str], None]
    warn: Callable[[str], None]
    consent: Callable[[str | None], bool]
    progress: Callable[[str | None], AbstractContextManager[Callable[[str], None]]]


def run(installation: Installation, talk: Talk, *, dry_run: bool, yes: bool, as_json: bool) -> int:
    """The one install flow: the plan, consent, the install, verify. Returns the exit code (1: verify failed)."""
    if as_json:
        return _run_as_json(installation, talk, dry_run=dry_run, yes=yes)
    talk.say("\n".join(installation.plan_lines()))
    if dry_run or installation.nothing_to_do:
        talk.say("Dry run: nothing was run." if dry_run else "Nothing to do.")
        return 0
    if not yes and not talk.consent(installation.replaces):
        talk.say("Nothing was done.")
        return 0
    with talk.progress(installation.progress_of) as on_line:
        carried = installation.carry_out(on_line)
    for warning in carried.warnings:
        talk.warn(warning)
    talk.say("\n".join(carried.done))
    verdict = installation.verify()
    if verdict is None:
        talk.say("Verify: skipped (--no-verify)")
        return 0
    talk.say(f"Verify: {'PASS' if verdict.passed else 'FAIL'} — {'; '.join(verdict.reasons[:3])}")
    return 0 if verdict.passed else 1


def _run_as_json(installation: Installation, talk: Talk, *, dry_run: bool, yes: bool) -> int:
    """--format json: the plan of a dry run; a real install's progress on stderr, then one line: what was installed
    and its verdict."""
    from pickvariant.output.verdict import verify_json

    if dry_run:
        talk.say(json.dumps(installation.plan_json(), indent=2))
        return 0
    if not yes:
        raise BadInput("--format json of a real install asks nothing: pass --yes (or --dry-run for the plan)")
    if installation.nothing_to_do:  # what it would install is there (or a working torch is kept): nothing runs
        line = {**installation.plan_json(), "installed": False, "log": None, "verdict": None}
        talk.say(json.dumps(line, separators=(",", ":")))
        return 0
    carried = installation.carry_out(talk.warn)
    for warning in carried.warnings:
        talk.warn(warning)
    verdict = installation.verify()
    line = {
        **installation.plan_json(),
        "installed": True,
        "log": str(carried.log),
        "verdict": None if verdict is None else verify_json(verdict),
    }
    talk.say(json.dumps(line, separators=(",", ":")))
    return 1 if verdict is not None and not verdict.passed else 0
