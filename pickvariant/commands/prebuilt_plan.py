"""What a wheel install will do, made and shown before anything runs (commands/prebuilt_install.py makes it,
commands/prebuilt_carry.py carries it out)."""

from __future__ import annotations

from pickvariant._base.records import keyword_record
from pickvariant.rules.decision import PrebuiltAnswer


@keyword_record
class PrebuiltInstallPlan:
    answer: PrebuiltAnswer
    installer: str  # "pip" or "uv"
    argv: tuple[str, ...]
    interpreter: str
    replaces: str | None  # the torch already there that this install replaces
    already: bool  # the chosen torch (and companions) are already there: nothing to run
    # The index with its credentials, given to the installer in its environment: never printed, logged or in JSON.
    index_env: tuple[tuple[str, str], ...] = ()
    assigned_by: str | None = None  # install --plan: "assigned to node n1 by plan plan.json"
    downgrade: bool = False  # the torch there is a newer release than the chosen one (--allow-downgrade was given)
    kept: str | None = None  # why the torch there is kept and nothing is installed: it already runs here (no --upgrade)
    warning: str | None = None  # what a dry run found missing that the install itself would need (uv off PATH)
