"""`pickvariant install`: from a decision to a plan of flox commands, then carrying it out."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.deadline import Deadline
from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.files import cache_dir, check_writable, create_new, write_atomic
from pickvariant._base.proc import FLOX_INSTALL_HELP, Command, run, tail
from pickvariant._base.records import replace
from pickvariant.install import envlock
from pickvariant.install.options import InstallOptions, check_org
from pickvariant.install.state import last_install_path
from pickvariant.machine.facts import HostFacts
from pickvariant.rules.compat import why_not
from pickvariant.rules.decision import SetShape
from pickvariant.sources.build import Catalog, Companion, Variant, checked_package
from pickvariant.sources.flox.install import existing, floxcontract, from_source, linked_torch, published_set
from pickvariant.sources.flox.install.install_plan import (
    InstallPlan,
    check_directory,
    check_token_file,
    environment_commands,
    login_check,
)

ORG_ENV = settings.FLOX_ORG

# A build's deadline, all its commands together, where --timeout gives none: a PyTorch build takes hours, not days.
BUILD_DEADLINE_S = 48 * 3600.0


def fit_problems(variant: Variant, facts: HostFacts, catalog: Catalog) -> list[str]:
    """What makes a forced --package unsafe on this machine (empty when it fits)."""
    return list(why_not(variant, facts, catalog))


def check_not_installed_differently(target: Path, install_id: str, wanted: Mapping[str, str]) -> None:
    """flox install keeps an install id that is already there as it is: a different torch under the same id would stay."""
    present = existing.installed(target).get(install_id)
    if isinstance(present, dict) and any(present.get(key) != value for key, value in wanted.items()):
        shown = ", ".join(f"{key} {present.get(key)!r}" for key in wanted)
        raise BadInput(
            f"{target} already has {install_id} ({shown}); flox install would keep it: "
            f"run `flox uninstall -d {shlex.quote(str(target))} {shlex.quote(install_id)}` first"
        )


def make_install_plan(
    variant: Variant,
    catalog: Catalog,
    options: InstallOptions,
    *,
    companions: Sequence[Companion] = (),
    set_shape: SetShape | None = None,
    env: Mapping[str, str] | None = None,
) -> InstallPlan:
    """The plan for installing `variant` (with the set's companions, in the set's shape) as `options` ask: from an
    organisation, or built from the recipe; nothing runs here."""
    env = os.environ if env is None else env
    org, build, token_file = options.org, options.build, options.token_file
    target_dir = options.directory.resolve()
    if token_file is not None:
        check_token_file(token_file)
    # Each name goes into a flox command line and a path: checked whatever catalog it came from.
    for name in (variant.package, *(companion.package for companion in companions)):
        checked_package(name)
    given_as = "--org"
    if org is None and (org := settings.setting(env, ORG_ENV)) is not None:
        given_as = ORG_ENV
    check_directory(target_dir, "--dir")
    # One PyTorch per environment: nothing that brings a torch goes beside another one already there.
    adding = set_shape.installed if companions and set_shape is not None else (variant.package,)
    existing.check_one_torch(target_dir, adding)
    if companions and set_shape is not None and set_shape.generated:  # a set built from source (install --build)
        return from_source.build_install_plan(variant, catalog, options, env, tuple(companions))
    if companions:
        org = published_set.require_published(org, build)
        check_org(org, given_as)
        if set_shape is None:
            raise ValueError("a set to install needs the decision's set shape")
        return _published_set_plan(variant, tuple(companions), set_shape, org, target_dir, token_file)
    if org is not None and not build:
        check_org(org, given_as)
        return _published_plan(variant, org, target_dir, token_file)
    return from_source.build_install_plan(variant, catalog, options, env, ())


def _published_set_plan(
    variant: Variant,
    companions: tuple[Companion, ...],
    set_shape: SetShape,
    org: str,
    target_dir: Path,
    token_file: Path | None,
) -> InstallPlan:
    """A set installed from the organisation's published packages, in one transaction."""
    cwd = target_dir if target_dir.is_dir() else Path.cwd()  # every flox command names its directory with -d
    packages, set_notes = published_set.set_packages(variant, companions, set_shape, org)
    if packages[0].startswith(f"{org}/{variant.package}@"):
        check_not_installed_differently(
            target_dir, variant.package, {"pkg-path": f"{org}/{variant.package}", "version": variant.torch}
        )
    install, more = environment_commands(
        target_dir,
        cwd,
        [*packages, floxcontract.python_package(variant.python)],
        f"install {', '.join(packages)} and Python {variant.python} in one transaction",
    )
    return InstallPlan(
        variant=variant,
        method="published",
        directory=target_dir,
        commands=(login_check(cwd, token_file), *install),
        notes=tuple(set_notes + more),
        creates_environment=not floxcontract.has_environment(target_dir),
        companions=companions,
        torch_check=variant.torch,
    )


def _published_plan(variant: Variant, org: str, target_dir: Path, token_file: Path | None) -> InstallPlan:
    """The variant installed from the organisation's published package."""
    cwd = target_dir if target_dir.is_dir() else Path.cwd()  # every flox command names its directory with -d
    # @VERSION: several branches publish the same package name with different PyTorch versions.
    package = f"{org}/{variant.package}@{variant.torch}"
    check_not_installed_differently(
        target_dir, variant.package, {"pkg-path": f"{org}/{variant.package}", "version": variant.torch}
    )
    install, install_notes = environment_commands(
        target_dir,
        cwd,
        [package, floxcontract.python_package(variant.python)],
        f"install the published {package} and Python {variant.python}",
    )
    return InstallPlan(
        variant=variant,
        method="published",
        directory=target_dir,
        commands=(login_check(cwd, token_file), *install),
        notes=tuple(install_notes),
        creates_environment=not floxcontract.has_environment(target_dir),
    )


def steps(plan: InstallPlan) -> Iterator[Command | Path]:
    """What the plan does, in order: each command, and the recipe file where it is written between them."""
    for index, command in enumerate(plan.commands):
        if plan.recipe_file and index == plan.recipe_after:
            yield plan.recipe_file
            yield from (path for path, _ in plan.companion_recipes)
        yield command


def describe(plan: InstallPlan, verify_command: list[str] | None = None) -> list[str]:
    """The plan as the lines `install` prints: every command, in the order it runs."""
    where = plan.directory if plan.method == "published" else f"{plan.build_dir}, then {plan.directory}"
    lines = [
        f"method: {'install the published package' if plan.method == 'published' else 'build from the recipe'} ({where})"
    ]
    for step in steps(plan):
        lines.append(f"write recipe {step}" if isinstance(step, Path) else f"run: {shlex.join(step.argv)}")
    if plan.torch_check is not None:
        lines.append(
            f"check: the environment's Python finds PyTorch {plan.torch_check} (otherwise the environment is put back as it was)"
        )
    if verify_command:
        lines.append(f"run: {shlex.join(verify_command)}")
    return lines


def execute(
    plan: InstallPlan, force: bool, log: Path, on_line: Callable[[str], None], timeout_s: float | None
) -> list[str]:
    """Carry out the plan, holding the environment's lock (envlock) so that installs into it take turns.
    Flox's installs are transactional; an environment this run created is removed on failure.
    Returns what went wrong with the log alone (a full disk): each command ran to its end."""
    if plan.recipe_file is not None and plan.recipe_text is None:
        raise OperationFailed("the recipe was never fetched (a dry run's plan): run install again without --dry-run")
    with envlock.locked(plan.directory, on_line) as created_directory:
        # Decided under the lock: another install may have made the environment since this plan was made.
        if floxcontract.has_environment(plan.directory):
            init = ("flox", "init", "-d", str(plan.directory))
            before = sum(1 for command in plan.commands[: plan.recipe_after] if command.argv[:4] == init)
            kept = tuple(command for command in plan.commands if command.argv[:4] != init)
            plan = replace(plan, commands=kept, recipe_after=plan.recipe_after - before, creates_environment=False)
        return _execute(plan, force, log, on_line, timeout_s, existed=not created_directory)


def _execute(
    plan: InstallPlan, force: bool, log: Path, on_line: Callable[[str], None], timeout_s: float | None, existed: bool
) -> list[str]:
    created_here = plan.creates_environment and not (plan.directory / ".flox").exists()
    saved = linked_torch.save(plan.directory) if plan.torch_check and not created_here else None
    limit = timeout_s if timeout_s is not None else BUILD_DEADLINE_S if plan.recipe_file is not None else None
    deadline = None if limit is None else Deadline(limit, "the install", "give --timeout SECONDS")
    try:
        if plan.recipe_file is not None and plan.recipe_text is not None:
            assert plan.build_dir is not None
            try:
                plan.build_dir.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise OperationFailed(
                    f"cannot create the build directory {plan.build_dir}: {error.strerror or error}; choose one with --build-dir"
                ) from error
            incomplete = _run(plan.commands[: plan.recipe_after], log, on_line, deadline)
            # flox init may have made .flox/pkgs: it must still be inside the build directory.
            for path, content in ((plan.recipe_file, plan.recipe_text), *plan.companion_recipes):
                if check_writable(path, content, force, root=plan.build_dir):
                    write_atomic(path, content)
            incomplete += _run(plan.commands[plan.recipe_after :], log, on_line, deadline)
        else:
            incomplete = _run(plan.commands, log, on_line, deadline)
            if plan.torch_check is not None:
                try:
                    linked_torch.check(interpreter_for(plan), plan.torch_check, plan.companions, on_line)
                except BaseException:
                    if saved is not None:
                        linked_torch.restore(saved)
                    raise
    except BaseException:
        if created_here:
            _remove_created_environment(plan.directory, existed)
        raise
    for result in (plan.result, *plan.companion_results):
        if result is not None and not result.exists():
            raise OperationFailed(f"flox build succeeded but {result} is missing; log: {log}")
    return list(dict.fromkeys(incomplete))


def _run(
    commands: Sequence[Command], log: Path, on_line: Callable[[str], None], deadline: Deadline | None
) -> list[str]:
    """Run the commands, all within one deadline; a failure whose output Flox's contract knows gets its remedy added.

    A failed `flox auth status` is a login problem whatever it says (at flox/flox@6536dac every way it
    fails, not logged in, token unverifiable, expired or revoked, exits 1): its text only refines the advice."""
    incomplete: list[str] = []
    for command in commands:
        on_line(f"» {command.description}")
        try:
            problem = run(command, log, on_line, None if deadline is None else deadline.left())
        except OperationFailed as error:
            if str(error) == FLOX_INSTALL_HELP:
                raise  # no flox at all: logging in to FloxHub would not help
            advice = floxcontract.remedy(tail(log)) or (
                floxcontract.login_advice() if command.argv[:2] == ("flox", "auth") else None
            )
            raise OperationFailed(f"{error}\nwhat to do: {advice}" if advice else str(error)) from None
        if problem is not None and problem not in incomplete:
            incomplete.append(problem)
    return incomplete


def _remove_created_environment(directory: Path, existed: bool) -> None:
    """Take back the `.flox` this run's `flox init` made (and the directory, if init made that too and it is empty)."""
    shutil.rmtree(directory / ".flox", ignore_errors=True)
    if not existed:
        with contextlib.suppress(OSError):
            directory.rmdir()


def start_log(plan: InstallPlan, env: Mapping[str, str] | None = None) -> Path:
    """Create this install's own new log file, before anything runs: an unwritable cache stops it here."""
    directory = cache_dir(env) / "logs"
    try:
        return create_new(directory, f"{time.strftime('%Y%m%d-%H%M%S')}-{plan.variant.package}", ".log")
    except OSError as error:
        raise OperationFailed(
            f"cannot create a log file in {directory}: {error.strerror or error}; set XDG_CACHE_HOME to a writable directory"
        ) from error


def save_last_install(plan: InstallPlan, python: list[str] | None, env: Mapping[str, str] | None = None) -> Path:
    """Remember what was installed, so that `pickvariant verify` can default to it."""
    path = last_install_path(env)
    record = {
        "package": plan.variant.package,
        "branch": plan.variant.branch,
        "torch": plan.variant.torch,
        "method": plan.method,
        "directory": str(plan.directory),
        "build_dir": str(plan.build_dir) if plan.build_dir else None,
        "result": str(plan.result) if plan.result else None,
        "python": python,
        "recipe": dict(plan.recipe_source) if plan.recipe_source else None,
        "companions": [{"project": c.project, "package": c.package} for c in plan.companions],
    }
    write_atomic(path, json.dumps(record, indent=2) + "\n")
    return path


def interpreter_for(plan: InstallPlan) -> list[str]:
    """The command that starts the environment's Python, which finds the installed torch.

    A build result holds only lib/pythonX.Y/site-packages; Flox puts it on PYTHONPATH when the
    environment provides bin/python3 (which is why the plan installs python3NN beside torch)."""
    return ["flox", "activate", "-d", str(plan.directory), "--", "python3"]
