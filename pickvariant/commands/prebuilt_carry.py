"""A wheel install carried out: the installer run from a folder of its own with the environment kept whole, and
the environment read again afterwards, so that an installer that ended well but installed elsewhere is said."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pickvariant._base.errors import PickVariantError
from pickvariant._base.proc import Command, run, stoppable, stopped, terminable
from pickvariant.install import envlock, whole
from pickvariant.machine.environment import PythonEnvironment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.commands.prebuilt_plan import PrebuiltInstallPlan
    from pickvariant.verify.judge import VerifyResult


def carry_out(plan: PrebuiltInstallPlan, on_line: Callable[[str], None], timeout_s: float | None = None) -> Path:
    """Run the installer; its output goes to a log (returned) and, line by line, to `on_line`. The environment is
    whole afterwards, also when the installer fails or is stopped (install/whole.py): the error then says what the
    environment holds. One install at a time into one environment (install/envlock.py)."""
    # A new file of its own (mkstemp: never one that was there, nor a link planted in its place).
    handle, name = tempfile.mkstemp(prefix=f"pickvariant-wheels-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log")
    os.close(handle)
    log = Path(name)
    environment = plan.answer.environment
    # From a folder of its own, empty: `python -m pip` puts its working directory first on sys.path, and uv reads a
    # project's settings there; the user's (a checkout holding a pip/ or uv.toml) must decide nothing.
    with tempfile.TemporaryDirectory(prefix="pickvariant-installer-") as quiet:
        command = Command(argv=plan.argv, cwd=Path(quiet), description=f"{plan.installer} install", env=plan.index_env)
        if environment is None or not environment.site or not Path(environment.site).is_dir():
            run(command, log, on_line, timeout_s)
        else:
            _run_kept(plan, environment, command, log, on_line, timeout_s)
    return log


def check_installed(plan: PrebuiltInstallPlan, log: Path) -> None:
    """OperationFailed unless the environment now holds what was installed: an installer that ended without an error
    but installed elsewhere, or nothing, is said, never taken for done."""
    from packaging.version import InvalidVersion, Version

    from pickvariant.machine.environment import read_environment

    decision = plan.answer.decision
    if decision.build is None:
        return
    given_as = plan.answer.environment.given_as if plan.answer.environment is not None else "--python"
    now = read_environment(plan.interpreter, given_as).installed
    wanted = {"torch": decision.build.torch if decision.detail.from_pypi else decision.build.label}
    wanted.update({pair.project: pair.version for pair in decision.companions})
    for project, version in wanted.items():
        found = now.get(project)
        try:
            same = found is not None and (found == version or Version(found).public == version)
        except InvalidVersion:
            same = False
        if not same:
            raise PickVariantError(
                f"{plan.installer} ended without an error, but {plan.interpreter}'s environment holds {project} "
                f"{found or 'none'}, not {version}: it was not installed there; log: {log}"
            )


def _run_kept(
    plan: PrebuiltInstallPlan,
    environment: PythonEnvironment,
    command: Command,
    log: Path,
    on_line: Callable[[str], None],
    timeout_s: float | None,
) -> None:
    """The installer run with the environment's distributions kept, and mended after a run that did not finish."""
    site = Path(environment.site)
    projects = ("torch", *(pair.project for pair in plan.answer.decision.companions))
    with envlock.locked(site, on_line), terminable():
        for line in whole.recover(site):  # what a killed install left: mended before anything else is kept
            on_line(f"» {line}")
        there = f" (torch {environment.torch} is there as it was)" if environment.torch else ""
        kept, finished = None, False
        try:
            with stoppable(f"before {plan.installer} ran: nothing was changed{there}"):
                kept = whole.keep(site)
            run(command, log, on_line, timeout_s)
            finished = True
            whole.settle(kept, True, projects)
        except BaseException as error:
            # Also a Ctrl-C or SIGTERM that lands outside the installer's own wait (before it starts, after it
            # ends, before settle holds them off): the environment is settled all the same, its kept copy removed.
            said = "; ".join(whole.settle(kept, finished, projects)) if kept is not None else ""
            error = stopped(error, f"{plan.installer} {'had finished' if finished else 'was stopped'}")
            if isinstance(error, PickVariantError) and said:
                raise type(error)(f"{error}; the environment: {said}") from None
            raise error from None


def verify_installed(plan: PrebuiltInstallPlan) -> VerifyResult:
    """The environment's torch probed with the facts the decision was made for (nothing is detected again)."""
    from pickvariant.verify.judge import verify

    answer = plan.answer
    projects = tuple(pair.project for pair in answer.decision.companions)
    return verify([plan.interpreter], answer.hardware, None, quick=True, facts=answer.facts, companions=projects)
