"""Which installation an `install` command line asks for, whichever source answers it: the options the chosen source
does not take refused, a plan's assignment pinned (--plan, --label) with nothing beside it that would choose another
build, and the Installation that commands/install.run carries out (a Flox install or build, a wheel with pip or uv).
The command line only parses the options into an InstallAsk and prints what run says."""

from __future__ import annotations

import os
from functools import partial

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record, replace
from pickvariant._base.request import Request
from pickvariant.install.options import InstallOptions
from pickvariant.sources import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from pickvariant.commands.install import Installation
    from pickvariant.commands.plan_install import Assignment
    from pickvariant.sources.build import Catalog

# What would choose or force another build than a plan's assignment: refused beside --plan.
_CHOOSERS = {
    "--package": "package",
    "--branch": "branch",
    "--torch": "torch",
    "--cuda": "cuda",
    "--with": "with_projects",
    "--force": "force",
    "--gpu-index": "gpu_index",
}


@keyword_record
class InstallAsk:
    """Everything `install` was asked, for every source: the machine, the pins and the source with what it is asked
    beside them (`request`: --source, --python, --wheel-index), the Flox install's options (`recipes`: also --dry-run,
    --no-verify and --timeout for every source), and a prebuilt build's install's."""

    request: Request
    recipes: InstallOptions
    plan: str | None = None  # --plan PLAN.json
    label: str | None = None  # --label: this node's name in the plan
    installer: str | None = None
    allow_downgrade: bool = False
    upgrade: bool = False


def installation(ask: InstallAsk, catalog: Callable[[], Catalog]) -> Installation:
    """The installation `ask` asks for, of the source chosen once here; `catalog` loads the recipes' catalog (read
    only for them). BadInput for another source's option, or a choice beside --plan."""
    if ask.label is not None and ask.plan is None:
        raise BadInput("--label names this node in --plan's plan: give the plan too")
    stated = ask.request.source
    if ask.plan is not None and stated is None:  # the plan names the source it was planned from: that one installs it
        from pickvariant.commands.plan_install import read_plan

        stated = read_plan(ask.plan).source
    chosen = registry.chosen(stated, os.environ)
    options = ask.recipes
    given: dict[str, object] = {"--package": options.package, "--org": options.org, "--build": options.build or None}
    given |= {"--token-file": options.token_file, "--installer": ask.installer, "--python": ask.request.interpreter}
    given |= {"--wheel-index": ask.request.index, "--allow-downgrade": ask.allow_downgrade, "--upgrade": ask.upgrade}
    registry.refuse_others(chosen, given)
    made: Installation = chosen.part("installation")(ask, chosen.name, catalog)
    return made


def pinned_beside_a_plan(request: Request, options: InstallOptions | None) -> list[str]:
    """The options and variables that would choose another build than a plan's assignment."""
    pinned = [flag for flag, name in _CHOOSERS.items() if getattr(options, name, None) or getattr(request, name, None)]
    if settings.setting(os.environ, settings.WITH) is not None:
        pinned.append(settings.WITH)  # the companions come from the plan too
    return pinned


def prebuilt_installation(ask: InstallAsk, source: str, catalog: Callable[[], Catalog]) -> Installation:
    """A source of prebuilt builds' installation part (sources/registry.py): its plan made (consent asked later, by
    run), its assignment checked first where --plan gave one. A plan's assignment is asked for by name: it replaces a
    torch that runs here as --upgrade does."""
    from pickvariant.commands import plan_install, prebuilt_install

    prebuilt_ask, assigned = _prebuilt_ask(ask, source)
    check = partial(plan_install.check_prebuilt_plan, assigned) if assigned is not None else None
    options = ask.recipes
    plan = prebuilt_install.plan_prebuilt_install(
        prebuilt_ask, ask.installer, check=check, allow_downgrade=ask.allow_downgrade, dry_run=options.dry_run,
        upgrade=ask.upgrade or assigned is not None,
    )  # fmt: skip
    if assigned is not None:
        plan = replace(plan, assigned_by=assigned.said)
    return prebuilt_install.PrebuiltInstallation(plan=plan, no_verify=options.no_verify, timeout_s=options.timeout_s)


def _prebuilt_ask(ask: InstallAsk, source: str) -> tuple[Request, Assignment | None]:
    """What to ask a prebuilt build's rules; with --plan, the node's assignment pinned, and nothing that would choose
    another build beside it (its index: --wheel-index, else PICKVARIANT_WHEEL_INDEX, else the plan's)."""
    from pickvariant.commands import plan_install

    request = ask.request
    if ask.plan is None:
        return replace(request, source=source), None
    pinned = pinned_beside_a_plan(request, None)
    if pinned:
        raise BadInput(f"{pinned[0]}: --plan gives this node its wheel and companions; it takes no other choice")
    assigned = plan_install.prebuilt_assignment(ask.plan, ask.label, source)
    request = plan_install.prebuilt_pins(assigned, request, registry.named(source).catalog())
    named = request.index is not None or settings.setting(os.environ, settings.WHEEL_INDEX) is not None
    if not named and not assigned.pypi_first:  # a plan made with no index named is installed as detect answers
        request = replace(request, index=assigned.index_root)
    return replace(request, source=source), assigned
