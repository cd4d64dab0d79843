"""`pickvariant install` for a source of prebuilt builds (`--source wheels`, or one registered): the decision, the
installer command for the environment, the torch it would replace, then the command run and the environment verified.

The plan is made first and shown; nothing runs before the user consents (--yes). A torch already there that is not
the chosen build is named in the plan and replaced only with that consent.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request
from pickvariant._base.text import visible
from pickvariant.api import decide_prebuilt, no_prebuilt_error
from pickvariant.commands.install import Carried
from pickvariant.commands.prebuilt_carry import carry_out, check_installed, verify_installed
from pickvariant.commands.prebuilt_plan import PrebuiltInstallPlan
from pickvariant.install.pip_command import (
    INSTALLERS,
    index_environment,
    index_url_for_installer,
    installer_argv,
    requirements,
)
from pickvariant.machine.environment import PythonEnvironment, active_interpreter
from pickvariant.rules.decision import PrebuiltAnswer
from pickvariant.sources.prebuilt import other_stack
from pickvariant.sources.runs_on import Build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.verify.judge import VerifyResult


def installer_of(stated: str | None, env: Mapping[str, str]) -> str:
    given, value = (
        ("--installer", stated)
        if stated is not None
        else (settings.INSTALLER, settings.setting(env, settings.INSTALLER))
    )
    if value is None:
        return "pip"
    if value not in INSTALLERS:
        raise BadInput(f"{given} {value!r:.40}: choose one of {', '.join(INSTALLERS)}")
    return value


def plan_prebuilt_install(
    asked: Request,
    installer: str | None,
    env: Mapping[str, str] | None = None,
    check: Callable[[PrebuiltAnswer], None] | None = None,
    allow_downgrade: bool = False,
    dry_run: bool = False,
    upgrade: bool = False,
) -> PrebuiltInstallPlan:
    """The plan, or NoVariant (exit 3) where no wheel runs here, or BadInput where uv is asked for and absent, or
    where the install would downgrade the torch there and --allow-downgrade was not given.
    `check` judges the answer first (install --plan: the node is the one planned for, the wheel the plan's).
    A torch there that already runs on every GPU here is kept (nothing is installed) unless `upgrade`: the user's
    working torch is replaced only when asked, never by --yes alone (issue 53)."""
    variables = os.environ if env is None else env
    # An install always goes into an environment: the active one unless --python names one.
    if asked.interpreter is None:
        interpreter, given_as = active_interpreter(variables)
        asked = replace(asked, interpreter=interpreter, interpreter_given_as=given_as)
    answer = decide_prebuilt(asked, variables)
    if check is not None:
        check(answer)
    decision = answer.decision
    if decision.build is None:
        raise no_prebuilt_error(answer)
    _this_platform(decision.build.platform, dry_run)
    chosen = installer_of(installer, variables)
    uv, warning = _uv(chosen, variables, dry_run)
    environment = answer.environment
    assert environment is not None
    detail = decision.detail
    _same_python(asked, detail.python_tag, environment)
    # The one interpreter resolved when the environment was read: what was read is what pip or uv installs into.
    interpreter = environment.interpreter
    secret = index_url_for_installer(answer)
    hidden = secret is not None and secret != detail.index_url
    index_url = None if hidden else detail.index_url
    argv = installer_argv(chosen, interpreter, decision.build, decision.companions, index_url, uv, detail.from_pypi)  # type: ignore[arg-type]
    index_env = index_environment(chosen, secret) if hidden and secret is not None else ()  # type: ignore[arg-type]
    replaces, already, downgrade, kept = _against_there(answer, upgrade, allow_downgrade)
    return PrebuiltInstallPlan(
        answer=answer,
        installer=chosen,
        argv=tuple(argv),
        interpreter=interpreter,
        replaces=replaces,
        already=already,
        index_env=index_env,
        downgrade=downgrade,
        warning=warning,
        kept=kept,
    )


def _against_there(
    answer: PrebuiltAnswer, upgrade: bool, allow_downgrade: bool
) -> tuple[str | None, bool, bool, str | None]:
    """The chosen set against what the environment holds: (the torch it replaces, whether all of it is there already,
    whether it downgrades torch, why the torch there is kept); BadInput for a downgrade not allowed."""
    decision, environment = answer.decision, answer.environment
    assert decision.build is not None and environment is not None
    present = environment.installed
    pinned = decision.build.torch if decision.detail.from_pypi else decision.build.label
    wanted = {"torch": pinned, **{pair.project: pair.version for pair in decision.companions}}
    label = decision.build.label.partition("+")[2]
    already = all(_same(present.get(project), version, label) for project, version in wanted.items())
    torch = environment.torch
    replaces = torch if torch is not None and torch not in (decision.build.label, pinned) else None
    downgrade = replaces is not None and not already and _newer(replaces, decision.build.label)
    _not_for_a_cpu_wheel(replaces, decision.build, already, upgrade)
    # Kept: a torch that runs here, and one the catalog cannot judge (an older release outside it, a local build)
    # unless installing would downgrade it, which is refused below naming --allow-downgrade.
    keeps = decision.detail.installed_fits == "yes" or (decision.detail.installed_fits == "unknown" and not downgrade)
    if replaces is not None and not already and keeps and not upgrade:
        companions = [pair.project for pair in decision.companions]
        judged = decision.detail.installed_fits == "yes"
        kept = _kept(replaces, decision.build.label, companions, present, bool(decision.targets), judged)
        return replaces, already, downgrade, kept
    # A torch that does not run here (no kernels for a GPU, a CUDA line the driver cannot run) is replaced with the
    # consent --yes gives, older release or not: the plan says why. One that runs, or may, needs --allow-downgrade.
    if downgrade and not allow_downgrade and decision.detail.installed_fits != "no":
        raise BadInput(
            f"--allow-downgrade: torch {replaces} in {environment.interpreter}'s environment is a newer release than "
            f"{decision.build.label}, the wheel chosen here: installing it would downgrade torch, which --yes does not "
            "consent to; keep the torch there, or pass --allow-downgrade"
        )
    return replaces, already, downgrade, None


def _not_for_a_cpu_wheel(there: str | None, chosen: Build, already: bool, upgrade: bool) -> None:
    """A ROCm or XPU torch there is never replaced by a CPU-only wheel, --upgrade or not: its GPU would be left unused
    (no build of that stack in the catalog serves a GPU here). BadInput, saying how to do it by hand."""
    stack = other_stack(there) if there is not None else None
    if stack is None or chosen.family != "cpu" or already or not upgrade:
        return
    raise BadInput(
        f"--upgrade: torch {there} here is a {stack} build, and the wheel chosen here, {chosen.label}, is CPU-only "
        f"(no {stack} wheel of the catalog serves a GPU here): installing it would leave the GPU unused, so it is not "
        f"done; keep torch {there}, or install {chosen.label} yourself if a CPU-only torch is what you want"
    )


def _kept(
    there: str, chosen: str, companions: list[str], present: Mapping[str, str | None], gpus: bool, judged: bool = True
) -> str:
    """Why the working torch there is kept; BadInput where companions were asked for that only the chosen set (which
    would replace it) brings."""
    # A companion there of another build than the torch there (torchvision +cpu beside a CUDA torch) is no part of
    # a working set: it counts as missing, not as there.
    torch_label = there.partition("+")[2]
    missing = [
        project
        for project in companions
        if (found := present.get(project)) is None or found.partition("+")[2] != torch_label
    ]
    if _newer(chosen, there):
        upgrade = f"--upgrade installs {chosen}, a newer release"
    elif _newer(there, chosen):
        upgrade = f"{chosen} is an older release: --upgrade with --allow-downgrade installs it"
    else:
        upgrade = f"--upgrade installs {chosen}, the same release for another CUDA line"
    if missing:
        raise BadInput(
            f"--upgrade: torch {there} is kept; {', '.join(missing)} (missing, or of another build than it) would come "
            f"with {chosen}, which replaces it: pass --upgrade to install that set, or install "
            f"{', '.join(missing)} for torch {there} yourself"
        )
    where = "on every GPU here" if gpus else "here"
    if not judged and (stack := other_stack(there)) is not None:
        return (
            f"torch {there} here is a {stack} build the wheel catalog does not hold (`pickvariant verify` probes it): "
            "kept, nothing to install"
        )
    if not judged:
        return (
            f"torch {there} here is not in the wheel catalog (whether it runs here is not known; `pickvariant verify` "
            f"probes it): kept, nothing to install ({upgrade})"
        )
    return f"torch {there} already runs {where}: nothing to install ({upgrade})"


def _same_python(asked: Request, tag: str | None, environment: PythonEnvironment) -> None:
    """A wheel chosen for another Python than the environment's (a --python-version pin) would not be the one pip
    installs there: BadInput naming both, shown or run."""
    if tag is None or environment.tag is None or tag == environment.tag:
        return
    flag = asked.python_given_as
    raise BadInput(
        f"{flag} {asked.python}: {environment.interpreter} ({environment.given_as}) is Python "
        f"{environment.version} ({environment.tag}), so a {tag} wheel does not install there: leave out {flag}, or "
        f"name an interpreter of that Python with --python"
    )


def _this_platform(platform: str, dry_run: bool) -> None:
    """A wheel of another platform (a stated --platform, a stated Mac) cannot be installed here: BadInput, unless the
    plan is only shown."""
    from pickvariant.machine.cpu import host_platform
    from pickvariant.sources.prebuilt import PLATFORMS

    here = PLATFORMS.get(host_platform())
    if not dry_run and here != platform:
        raise BadInput(
            f"--platform, --cpuinfo: the wheel chosen is for {platform}, the stated machine's, and this machine is "
            f"{here or 'of another platform'}: it cannot be installed here (--dry-run shows the plan)"
        )


def _uv(chosen: str, variables: Mapping[str, str], dry_run: bool) -> tuple[str, str | None]:
    """uv's path where it is the installer (else "uv", unused), and a dry run's warning where it is not on PATH;
    BadInput for a real install without it."""
    if chosen != "uv":
        return "uv", None
    found = shutil.which("uv", path=variables.get("PATH"))
    missing = "--installer uv: uv is not on PATH (install it, or use --installer pip)"
    if found is None and not dry_run:
        raise BadInput(missing)
    return (found, None) if found is not None else ("uv", f"warning: {missing}")


def _newer(there: str, chosen: str) -> bool:
    """Is the torch there a newer release than the chosen one (local labels aside: 2.14.1+cu126 to +cu132 is none)?
    One PEP 440 cannot read (no release pickvariant can order) counts as newer: it is kept unless asked."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(Version(there).public) > Version(Version(chosen).public)
    except InvalidVersion:
        return True


def _same(installed: str | None, wanted: str, label: str) -> bool:
    """Is the installed version the one pinned? A companion is pinned by its release, and is the same only with the
    chosen torch's local label (`cu126`; none for PyPI's): torchvision 0.29.1+cpu beside a CUDA torch is not."""
    if installed is None:
        return False
    if installed == wanted:
        return True
    release, _, found_label = installed.partition("+")
    return "+" not in wanted and release == wanted and found_label == label


def plan_lines(plan: PrebuiltInstallPlan) -> list[str]:
    decision = plan.answer.decision
    assert decision.build is not None
    import shlex

    names = ", ".join(requirements(decision.build, decision.companions, decision.detail.from_pypi))
    where = decision.detail.index_url or "PyPI (the installer's default index)"
    into, chosen = f"{plan.interpreter} ({plan.installer})", f"{names} from {where}"
    if plan.already or plan.kept is not None:  # the headline says so: what it would install is not installed
        why = f"{chosen} is there already" if plan.already else f"the torch there is kept (chosen: {chosen})"
        lines = [f"Plan: nothing to install into {into}: {why}"]
    else:
        lines = [f"Plan: install {chosen} into {into}"]
    if plan.assigned_by is not None:
        lines.append(f"  {plan.assigned_by}")
    if plan.warning is not None:
        lines.append(f"  {plan.warning}")
    lines += [f"  why: {reason}" for reason in decision.reasons[decision.machine_said : decision.machine_said + 3]]
    if plan.kept is not None:
        lines.append(f"  kept: {plan.kept}")
    elif plan.downgrade and decision.detail.installed_fits == "no":
        lines.append(
            f"  downgrades torch {plan.replaces} to {decision.build.label}, because the torch there does not run "
            f"here ({decision.detail.installed_said})"
        )
    elif plan.downgrade:
        lines.append(f"  downgrades torch {plan.replaces} to {decision.build.label} (--allow-downgrade)")
    elif plan.replaces is not None:
        lines.append(f"  replaces torch {plan.replaces}, installed there now ({decision.detail.installed_said})")
    shown = [f"{name}={decision.detail.index_url}" for name, _ in plan.index_env]
    command = f"$ {shlex.join([*shown, *plan.argv])}"
    if plan.already:  # nothing runs: no command is shown as if it would
        return lines
    lines.append(f"  with --upgrade: {command}" if plan.kept is not None else f"  {command}")
    if plan.index_env:
        lines.append("  the index's credentials are given to the installer in its environment, never shown")
    return lines


def plan_json(plan: PrebuiltInstallPlan) -> dict[str, object]:
    decision = plan.answer.decision
    return {
        "source": plan.answer.source.name,
        "installer": plan.installer,
        "interpreter": plan.interpreter,
        "argv": list(plan.argv),
        "replaces": plan.replaces,
        "already_installed": plan.already,
        "index_url": decision.detail.index_url,
        "from_pypi": decision.detail.from_pypi,
        "torch": decision.build.label if decision.build else None,
        "companions": [{"project": p.project, "version": p.version} for p in decision.companions],
        "assigned_by": plan.assigned_by,
        "downgrade": plan.downgrade,
        "kept": plan.kept,
        "warning": plan.warning,
    }


@keyword_record
class PrebuiltInstallation:
    """A wheel install as commands/install.run takes it: the installer run with the environment kept whole."""

    plan: PrebuiltInstallPlan
    no_verify: bool = False
    timeout_s: float | None = None
    progress_of: str | None = None  # the installer's own lines are the progress

    @property
    def replaces(self) -> str | None:
        return self.plan.replaces

    @property
    def nothing_to_do(self) -> bool:
        return self.plan.already or self.plan.kept is not None

    def plan_lines(self) -> list[str]:
        return [visible(line) for line in plan_lines(self.plan)]

    def plan_json(self) -> dict[str, object]:
        return plan_json(self.plan)

    def carry_out(self, on_line: Callable[[str], None]) -> Carried:
        log = carry_out(self.plan, on_line, self.timeout_s)
        check_installed(self.plan, log)
        build = self.plan.answer.decision.build
        installed = build.label if build else ""
        return Carried(done=(visible(f"Done: {installed} installed for {self.plan.interpreter}; log: {log}"),), log=log)

    def verify(self) -> VerifyResult | None:
        return None if self.no_verify else verify_installed(self.plan)
