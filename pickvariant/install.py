"""`pickvariant install`: from a decision to a plan of flox commands, then carrying it out."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pickvariant import __version__, settings
from pickvariant.catalog import Catalog, Variant
from pickvariant.compat import why_not
from pickvariant.errors import BadInput, OperationFailed
from pickvariant.facts import HostFacts
from pickvariant.fetch import fetch_checked
from pickvariant.flox import Command, run_all
from pickvariant.fsutil import check_writable, create_new, write_atomic
from pickvariant.recipe import recipe_path, render

ORG_ENV = settings.FLOX_ORG


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "pickvariant"


# Flox's catalog API takes catalog (organisation) names matching ^[a-zA-Z0-9\-_]{3,63}$
# (flox/flox@6536dac, cli/catalog-api-v1/src/client.rs, CatalogName). A leading '-' would also
# reach flox's argument parser as an option, so it is refused too.
FLOX_CATALOG_NAME = re.compile(r"[A-Za-z0-9_-]{3,63}")


def check_org(org: str) -> None:
    if not FLOX_CATALOG_NAME.fullmatch(org) or org.startswith("-"):
        raise BadInput(
            f"--org {org!r:.80} is not a Flox organisation name: 3 to 63 letters, digits, '-' or '_', not starting with '-'"
        )


def fit_problems(variant: Variant, facts: HostFacts, catalog: Catalog) -> list[str]:
    """What makes a forced --package unsafe on this machine (empty when it fits)."""
    return list(why_not(variant, facts, catalog))


@dataclass(frozen=True)
class Plan:
    variant: Variant
    method: str  # "published" or "build"
    directory: Path
    commands: tuple[Command, ...]
    recipe_file: Path | None = None
    recipe_text: str | None = None
    warnings: tuple[str, ...] = ()
    result: Path | None = None
    notes: tuple[str, ...] = ()
    # Where the recipe came from: {repo, branch, commit, path} when fetched, {generated: …} when rendered.
    recipe_source: Mapping[str, str] | None = None


def plan_install(
    variant: Variant, catalog: Catalog, org: str | None, build: bool, target_dir: Path, build_dir: Path | None,
    force: bool, env: Mapping[str, str] | None = None, generate: bool = False, repo: str | None = None,
) -> Plan:
    env = os.environ if env is None else env
    org = org if org is not None else settings.setting(env, ORG_ENV)
    if org is not None and not build:
        check_org(org)
        if target_dir.exists() and not target_dir.is_dir():
            raise BadInput(f"--dir {target_dir}: exists and is not a directory")
        commands = []
        notes = []
        # Every flox command names its directory with -d, so it may run from anywhere that exists;
        # `flox init -d` creates a missing directory with its parents.
        cwd = target_dir if target_dir.is_dir() else Path.cwd()
        if not target_dir.exists():
            notes.append(f"{target_dir} does not exist: flox init will create it")
        if not (target_dir / ".flox").is_dir():
            commands.append(Command(("flox", "init", "-d", str(target_dir)), cwd, f"create a Flox environment in {target_dir}"))
            notes.append(f"{target_dir} has no Flox environment: one will be created")
        commands.append(Command(("flox", "install", "-d", str(target_dir), f"{org}/{variant.package}"), cwd, f"install the published {org}/{variant.package}"))
        return Plan(variant, "published", target_dir, tuple(commands), notes=tuple(notes))

    directory = build_dir or cache_dir(env) / "build" / variant.package
    if directory.exists() and not directory.is_dir():
        raise BadInput(f"--build-dir {directory}: exists and is not a directory")
    pkgs = directory / ".flox" / "pkgs"
    notes: list[str] = []
    if generate:
        text = render(variant, catalog)
        source: dict[str, str] = {"generated": f"pickvariant {__version__} from the catalog synced from {catalog.source.repo} at {catalog.source.commit}"}
    else:
        fetched = fetch_checked(variant, catalog, repo, cache_dir(env), env)
        text, source = fetched.text, fetched.provenance()
        notes += [f"recipe {fetched.path} of {fetched.branch} at {fetched.commit[:12]} from {fetched.repo}{' (cached)' if fetched.from_cache else ''}, checked against the catalog"]
        notes += list(fetched.notes)
    recipe = recipe_path(pkgs, variant)
    commands = []
    if not (directory / ".git").exists():
        commands.append(Command(("git", "init", "-q", str(directory)), directory, "make the build directory a git repository (flox build reads tracked files)"))
    if not (directory / ".flox").is_dir():
        commands.append(Command(("flox", "init", "-d", str(directory)), directory, "create the build environment"))
    commands.append(Command(("git", "add", "--", str(recipe.relative_to(directory))), directory, "track the recipe in git"))
    commands.append(Command(("flox", "build", "-d", str(directory), variant.package), directory, f"build {variant.package}"))
    warning = (
        f"building PyTorch from source takes {catalog.build_hours} hours, about {catalog.build_disk_gb:g} GB of disk "
        f"and {catalog.build_memory_gb:g} GB+ of RAM; publish it once (flox publish) and install it elsewhere with --org"
    )
    return Plan(variant, "build", directory, tuple(commands), recipe, text, (warning,), directory / f"result-{variant.package}", tuple(notes), source)


def describe(plan: Plan) -> list[str]:
    lines = [f"method: {'install the published package' if plan.method == 'published' else 'build from the recipe'} ({plan.directory})"]
    if plan.recipe_file:
        lines.append(f"write recipe {plan.recipe_file}")
    lines += [f"run: {' '.join(command.argv)}" for command in plan.commands]
    return lines


def _snapshot(directory: Path) -> dict[Path, bytes]:
    env_dir = directory / ".flox" / "env"
    try:
        return {path: path.read_bytes() for path in sorted(env_dir.glob("manifest.*")) if path.is_file()} if env_dir.is_dir() else {}
    except OSError as error:
        raise OperationFailed(f"cannot read the Flox environment in {directory}: {error.strerror or error}") from error


def execute(plan: Plan, force: bool, log: Path, on_line: Callable[[str], None], timeout_s: float | None) -> None:
    """Carry out the plan. On failure the user's environment files are put back as they were."""
    before = _snapshot(plan.directory) if plan.method == "published" else {}
    try:
        if plan.recipe_file and plan.recipe_text is not None:
            pre = [c for c in plan.commands if c.argv[:2] in (("git", "init"), ("flox", "init"))]
            try:
                plan.directory.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise OperationFailed(f"cannot create the build directory {plan.directory}: {error.strerror or error}; choose one with --build-dir") from error
            run_all(pre, log, on_line, timeout_s)
            # flox init may have made .flox/pkgs: it must still be inside the build directory.
            if check_writable(plan.recipe_file, plan.recipe_text, force, root=plan.directory):
                write_atomic(plan.recipe_file, plan.recipe_text)
            run_all([c for c in plan.commands if c not in pre], log, on_line, timeout_s)
        else:
            run_all(plan.commands, log, on_line, timeout_s)
    except BaseException:
        for path, content in before.items():
            if not path.exists() or path.read_bytes() != content:
                write_atomic(path, content)
        raise
    if plan.result is not None and not plan.result.exists():
        raise OperationFailed(f"flox build succeeded but {plan.result} is missing; log: {log}")


def start_log(plan: Plan, env: Mapping[str, str] | None = None) -> Path:
    """Create this install's own new log file, before anything runs: an unwritable cache stops it here."""
    directory = cache_dir(env) / "logs"
    try:
        return create_new(directory, f"{time.strftime('%Y%m%d-%H%M%S')}-{plan.variant.package}", ".log")
    except OSError as error:
        raise OperationFailed(
            f"cannot create a log file in {directory}: {error.strerror or error}; set XDG_CACHE_HOME to a writable directory"
        ) from error


def save_last_install(plan: Plan, python: list[str] | None, env: Mapping[str, str] | None = None) -> Path:
    """Remember what was installed, so that `pickvariant verify` can default to it."""
    path = cache_dir(env) / "last-install.json"
    record = {"package": plan.variant.package, "branch": plan.variant.branch, "torch": plan.variant.torch, "method": plan.method, "directory": str(plan.directory),
              "result": str(plan.result) if plan.result else None, "python": python,
              "recipe": dict(plan.recipe_source) if plan.recipe_source else None}
    write_atomic(path, json.dumps(record, indent=2) + "\n")
    return path


def last_install(env: Mapping[str, str] | None = None) -> dict[str, object] | None:
    """What the last install recorded; None when there is none or it is unreadable."""
    try:
        record = json.loads((cache_dir(env) / "last-install.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def last_install_python(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The interpreter command the last install recorded; None when there is none or it is unreadable."""
    record = last_install(env)
    python = record.get("python") if record else None
    if isinstance(python, list) and python and all(isinstance(part, str) and part for part in python):
        return python
    return None


def interpreter_for(plan: Plan) -> list[str] | None:
    """The command that starts a Python with the installed torch, where one is known."""
    if plan.method == "published":
        return ["flox", "activate", "-d", str(plan.directory), "--", "python3"]
    if plan.result is not None:
        python = plan.result / "bin" / "python3"
        if python.exists():
            return [str(python)]
    return None
