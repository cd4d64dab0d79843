"""`verify --package --org`: a published variant in a throwaway environment, deleted afterwards."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from pickvariant._base.capture import capture
from pickvariant._base.files import cache_dir
from pickvariant._base.records import record
from pickvariant.install.options import InstallOptions, check_org
from pickvariant.sources.build import Catalog, Variant
from pickvariant.sources.flox.install import floxcontract
from pickvariant.sources.flox.install.flow import execute, interpreter_for, make_install_plan, start_log


@record
class ThrowawayProbe:
    """How `verify --package --org` reached the published variant: the interpreter command and what to say."""

    python: list[str]
    notes: tuple[str, ...]


@contextlib.contextmanager
def published_interpreter(
    variant: Variant, catalog: Catalog, org: str, env: Mapping[str, str] | None = None
) -> Iterator[ThrowawayProbe]:
    """A Python with the published `org/variant` for the duration of the block, without touching the user's environments.

    `flox run -p` would need no environment, but it takes no @VERSION and finds commands only inside
    the package (a PyTorch build has no python3): floxcontract.run_can_probe says whether the installed
    Flox can; until one can, the variant goes into a throwaway environment that is deleted afterwards."""
    check_org(org)
    notes = []
    version = floxcontract.parse_flox_version(capture(["flox", "--version"], 30, 4096, "flox --version").stdout)
    support = floxcontract.run_can_probe(version)
    if not support.usable:
        notes.append(f"flox run cannot probe it ({'; '.join(support.why_not)}): using a throwaway environment")
    parent = cache_dir(env) / "verify"
    parent.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix=f"{variant.package}-", dir=parent))
    try:
        plan = make_install_plan(variant, catalog, InstallOptions(org=org, directory=directory), env=env)
        log = start_log(plan, env)
        execute(plan, False, log, lambda line: None, None)
        yield ThrowawayProbe(interpreter_for(plan), tuple(notes))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
