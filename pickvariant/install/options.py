"""What `install` takes besides the Request (the machine and the pins), for every source, and the check of an
organisation named by --org or PICKVARIANT_FLOX_ORG, which `install` and `plan` print into commands people paste."""

from __future__ import annotations

import re
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record


@keyword_record
class InstallOptions:
    """What `install` takes besides the Request (the machine and the pins)."""

    package: str | None = None
    org: str | None = None
    directory: Path = Path(".")
    build: bool = False
    build_dir: Path | None = None
    generate: bool = False
    repo: str | None = None
    no_verify: bool = False
    force: bool = False
    timeout_s: float | None = None
    dry_run: bool = False
    token_file: Path | None = None  # log in with `flox auth login --token-file` first (a cluster, CI)
    assigned_by: str | None = None  # with --plan: the sentence that says which plan gave this node `package`
    assigned_set: tuple[tuple[str, str], ...] = ()  # with --plan, a set's companions: (project, package)


# Flox's catalog API takes catalog (organisation) names matching ^[a-zA-Z0-9\-_]{3,63}$
# (flox/flox@6536dac, cli/catalog-api-v1/src/client.rs, CatalogName). A leading '-' would also
# reach flox's argument parser as an option, so it is refused too.
FLOX_CATALOG_NAME = re.compile(r"[A-Za-z0-9_-]{3,63}")


def check_org(org: str, given_as: str = "--org") -> None:
    """`given_as` names where the value came from (--org, or PICKVARIANT_FLOX_ORG=…), as the error must."""
    if not FLOX_CATALOG_NAME.fullmatch(org) or org.startswith("-"):
        raise BadInput(
            f"{given_as} {org!r:.80} is not a Flox organisation name: 3 to 63 letters, digits, '-' or '_', not starting with '-'"
        )
