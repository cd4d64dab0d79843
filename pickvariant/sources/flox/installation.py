"""The Flox source's installation part (sources/registry.py names it): what `pickvariant install` carries out for a
variant of the recipes, through commands/install.run, the one install flow.

`prepare` does everything that runs nothing: it is what `--dry-run` shows, as text or JSON. `carry_out` runs the
plan (sources/flox/install/flow.py) and hands the facts install decided with to verify, which detects nothing again.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pickvariant import api
from pickvariant._base import settings
from pickvariant._base.errors import BadInput, PickVariantError
from pickvariant._base.proc import FLOX_INSTALL_HELP
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request
from pickvariant.commands.install import Carried
from pickvariant.commands.installation import InstallAsk, pinned_beside_a_plan
from pickvariant.install.options import InstallOptions
from pickvariant.machine.facts import HostFacts
from pickvariant.rules import pairing
from pickvariant.rules.decision import RecipeDecision
from pickvariant.rules.sets import SetShape, shape
from pickvariant.rules.wording import recipes as recipe_wording
from pickvariant.sources.build import Catalog, Companion, Variant
from pickvariant.sources.flox.install import flow as installer
from pickvariant.verify import judge as verifier
from pickvariant.verify.probe_run import probe_argv


def flox_installation(ask: InstallAsk, source: str, catalog: Callable[[], Catalog]) -> FloxInstallation:
    """Its variant installed or built into the Flox environment; with --plan the node's assignment and nothing beside
    it."""
    request, options = ask.request, ask.recipes
    if ask.plan is not None:
        request, options = _assigned(ask, ask.plan, catalog, source)
    return FloxInstallation(prepared=prepare(request, options, catalog()), options=options)


@keyword_record
class Prepared:
    """A decided install that has run nothing yet: the plan and what will verify it."""

    catalog: Catalog
    facts: HostFacts
    decision: RecipeDecision
    variant: Variant
    plan: installer.InstallPlan
    python: tuple[str, ...]
    verify_command: tuple[str, ...] | None
    why: tuple[str, ...]


@keyword_record
class Installed:
    """What an install did: its log, and why last-install.json could not be written, if it could not."""

    log: Path
    remember_error: str | None
    log_problems: tuple[str, ...] = ()  # the log could not be written whole (a full disk): the install itself ran


def prepare(request: Request, options: InstallOptions, catalog: Catalog) -> Prepared:
    """Decide and plan; BadInput or NoVariant where there is nothing to install."""
    if options.timeout_s is not None and not options.timeout_s > 0:
        raise BadInput(f"--timeout {options.timeout_s:g}: give a number of seconds above 0")
    if request.with_projects and not request.build:
        # Without an organisation to install from, or with --build, the set is built from source: the decision
        # makes it of companions generated on the chosen variant (one torch, built once).
        published = options.org is not None or settings.setting(os.environ, installer.ORG_ENV) is not None
        request = replace(request, build=options.build or not published)
    choice = api.recommend_request(request, catalog=catalog)
    facts, decision = choice.facts, choice.decision
    from pickvariant.machine.cpu import host_platform

    here = host_platform()
    if (facts.os, facts.arch) != here:
        # Flox installs into this machine's environment: a build for another CPU architecture or OS would not run here.
        raise BadInput(
            f"the stated CPU ({facts.sources.get('cpu', '--cpuinfo')}) is {facts.os}/{facts.arch}, "
            f"this machine {here[0]}/{here[1]}: install works on the machine it runs on; "
            "`pickvariant detect` and `recipe` serve other machines"
        )
    shape = decision.detail.set_shape
    if shape is not None and shape.generated and options.package is None and not request.build:
        # Nothing published makes the set: building it takes hours, so an install from an organisation asks first.
        assert decision.build is not None
        raise BadInput(recipe_wording.install_needs_build(shape, decision.build.package, request.with_projects))
    variant = _variant(request, options, catalog, facts, decision)
    companions, set_shape = _set_of(request, options, catalog, decision, variant)
    plan = installer.make_install_plan(variant, catalog, options, companions=companions, set_shape=set_shape)
    python = tuple(installer.interpreter_for(plan))
    projects = tuple(companion.project for companion in plan.companions)
    probe = None if options.no_verify else probe_argv(list(python), quick=True, companions=projects)
    forced = " (forced)" if options.force else ""
    why = decision.reasons if options.package is None else (options.assigned_by or f"chosen with --package{forced}",)
    return Prepared(
        catalog=catalog,
        facts=facts,
        decision=decision,
        variant=variant,
        plan=plan,
        python=python,
        verify_command=None if probe is None else tuple(probe),
        why=tuple(why),
    )


def _assigned(
    ask: InstallAsk, plan_path: str, catalog: Callable[[], Catalog], source: str
) -> tuple[Request, InstallOptions]:
    """With --plan: the request and options that install exactly this node's assignment in a cluster's plan
    (commands/plan_install), judged by the rules that judge --package and never forced; nothing beside it may choose
    another build."""
    from pickvariant.commands.plan_install import assignment
    from pickvariant.machine.facts import gather_facts

    request, options = ask.request, ask.recipes
    pinned = pinned_beside_a_plan(request, options)
    if pinned:
        raise BadInput(f"{pinned[0]}: --plan gives this node its package and branch; it takes no other choice")
    loaded = catalog()
    facts = gather_facts(loaded, request, os.environ)
    assigned = assignment(plan_path, ask.label, loaded, facts, source)
    options = replace(options, package=assigned.package, assigned_by=assigned.said, assigned_set=assigned.companions)
    return replace(request, branch=assigned.branch), options


def _set_of(
    request: Request, options: InstallOptions, catalog: Catalog, decision: RecipeDecision, variant: Variant
) -> tuple[tuple[Companion, ...], SetShape | None]:
    """The companions installed with the variant, and the set's shape: the decision's, none beside --package, or
    with --plan the set the plan made on its assignment (made again from this catalog, and refused unless the same)."""
    if not options.assigned_set:
        return (decision.companions, decision.detail.set_shape) if options.package is None else ((), None)
    projects = tuple(project for project, _ in options.assigned_set)
    companions = pairing.set_for(catalog, variant, projects) or ()
    found = shape(variant, companions) if companions else "no set"
    if tuple((c.project, c.package) for c in companions) != options.assigned_set or not isinstance(found, SetShape):
        planned = ", ".join(package for _, package in options.assigned_set)
        raise BadInput(f"the plan's set on {variant.package} ({planned}) is not one this catalog makes: plan again")
    if found.generated and not request.build:
        raise BadInput(recipe_wording.install_needs_build(found, variant.package, projects))
    return companions, found


def _variant(
    request: Request, options: InstallOptions, catalog: Catalog, facts: HostFacts, decision: RecipeDecision
) -> Variant:
    if options.package is None:
        if decision.build is None:
            raise api.no_variant_error(decision)
        return decision.build
    if decision.companions or request.with_projects:
        raise BadInput("--with chooses the companions together with the torch: it cannot be combined with --package")
    variant = catalog.variant(options.package, request.branch)
    problems = installer.fit_problems(variant, facts, catalog)
    if problems and not options.force:
        # --plan refuses --force: its node is told to plan again, never to pass an option the command refuses.
        remedy = "plan again for this node" if options.assigned_by else "pass --force to install it anyway"
        raise BadInput(f"{options.package} does not fit this machine ({'; '.join(problems)}): {remedy}")
    return variant


def install_plan_lines(prepared: Prepared) -> list[str]:
    """The plan as `install` prints it before it asks: the variant, why, every command in order."""
    variant, plan = prepared.variant, prepared.plan
    lines = [f"Variant: {variant.package} (branch {variant.branch}, PyTorch {variant.torch}, Python {variant.python})"]
    lines += [f"  why: {reason}" for reason in prepared.why]
    verify = list(prepared.verify_command) if prepared.verify_command else None
    steps = installer.describe(plan, verify) + [f"warning: {w}" for w in _warnings(plan)]
    lines += [f"  {line}" for line in steps + [f"note: {n}" for n in plan.notes]]
    return lines


def install_plan_json(prepared: Prepared) -> dict[str, Any]:
    """`install --dry-run --format json`: the same plan as data, each command as its argument list."""
    plan, variant = prepared.plan, prepared.variant
    steps = [
        {"write": str(step)}
        if isinstance(step, Path)
        else {"run": list(step.argv), "cwd": str(step.cwd), "what": step.description}
        for step in installer.steps(plan)
    ]
    return {
        "variant": {
            "package": variant.package,
            "branch": variant.branch,
            "torch": variant.torch,
            "python": variant.python,
        },
        "why": list(prepared.why),
        "method": plan.method,
        "directory": str(plan.directory),
        "build_dir": None if plan.build_dir is None else str(plan.build_dir),
        "companions": [companion.package for companion in plan.companions],
        "steps": steps,
        "verify": None if prepared.verify_command is None else list(prepared.verify_command),
        # A set: the PyTorch release the environment must link before success is declared (put back otherwise).
        "torch_check": plan.torch_check,
        "recipe_source": None if plan.recipe_source is None else dict(plan.recipe_source),
        "warnings": _warnings(plan),
        "notes": list(plan.notes),
    }


def _warnings(plan: installer.InstallPlan) -> list[str]:
    """The plan's own warnings, and whether this machine can run it at all (a dry run says so before anyone tries)."""
    missing = [] if shutil.which("flox") else [FLOX_INSTALL_HELP]
    return [*plan.warnings, *missing]


def carry_out(prepared: Prepared, options: InstallOptions, on_line: Callable[[str], None]) -> Installed:
    """Run the plan and remember it for a later `verify`."""
    plan = prepared.plan
    log = installer.start_log(plan)
    problems = tuple(installer.execute(plan, options.force, log, on_line, options.timeout_s))
    try:
        installer.save_last_install(plan, list(prepared.python))
    except PickVariantError as error:
        return Installed(log=log, remember_error=str(error), log_problems=problems)
    return Installed(log=log, remember_error=None, log_problems=problems)


def verify_installed(prepared: Prepared) -> verifier.VerifyResult | None:
    """The installed set verified with the facts install decided for (nothing is detected again); None with --no-verify."""
    if prepared.verify_command is None:
        return None
    projects = tuple(companion.project for companion in prepared.plan.companions)
    return verifier.verify(
        list(prepared.python), prepared.catalog, prepared.variant, quick=True, facts=prepared.facts, companions=projects
    )


def done_lines(prepared: Prepared, installed: Installed) -> list[str]:
    """What `install` says once the plan ran: what this run installed and where."""
    plan = prepared.plan
    built = f"built {plan.result}, " if plan.result else ""
    shape = prepared.decision.detail.set_shape if plan.companions else None
    names = ", ".join(shape.installed) if shape is not None else prepared.variant.package
    return [
        f"Done: {names} ({built}installed in the Flox environment {plan.directory}); log: {installed.log}",
        f"Use it: flox activate -d {shlex.quote(str(plan.directory))} -- python3",
    ]


@keyword_record
class FloxInstallation:
    prepared: Prepared
    options: InstallOptions
    replaces: str | None = None
    nothing_to_do: bool = False

    @property
    def progress_of(self) -> str | None:
        return self.prepared.variant.package

    def plan_lines(self) -> list[str]:
        return install_plan_lines(self.prepared)

    def plan_json(self) -> dict[str, Any]:
        return install_plan_json(self.prepared)

    def carry_out(self, on_line: Callable[[str], None]) -> Carried:
        installed = carry_out(self.prepared, self.options, on_line)
        warnings = [f"warning: {problem}" for problem in installed.log_problems]
        if installed.remember_error is not None:
            warnings.append(
                "warning: the install worked, but it could not be remembered for `pickvariant verify` "
                f"({installed.remember_error})"
            )
        return Carried(done=tuple(done_lines(self.prepared, installed)), log=installed.log, warnings=tuple(warnings))

    def verify(self) -> verifier.VerifyResult | None:
        return verify_installed(self.prepared)
