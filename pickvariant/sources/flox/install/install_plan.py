"""An install's plan, and the pieces every way of installing makes it of: the login step, the environment's
commands, the checks on the directories (the organisation named is checked by `install/options.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.proc import Command
from pickvariant._base.records import keyword_record
from pickvariant.sources.build import Companion, Variant
from pickvariant.sources.flox.install import floxcontract

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Method = Literal["published", "build"]


@keyword_record
class InstallPlan:
    """Everything an install will run, in order: `--dry-run` prints exactly these commands."""

    variant: Variant
    method: Method
    directory: Path  # the Flox environment the user gets, with torch and a matching Python
    commands: tuple[Command, ...]
    recipe_file: Path | None = None
    recipe_text: str | None = None
    # The recipe is written after this many commands (the build directory's git and flox init).
    recipe_after: int = 0
    warnings: tuple[str, ...] = ()
    result: Path | None = None
    notes: tuple[str, ...] = ()
    # Where the recipe came from: {repo, branch, commit, path} when fetched, {generated: …} when rendered.
    recipe_source: Mapping[str, str] | None = None
    build_dir: Path | None = None
    creates_environment: bool = False
    # With --with: the companions installed with (or, with a torch of their own, instead of) the variant.
    companions: tuple[Companion, ...] = ()
    # The PyTorch release the environment must link once the commands ran (a set: a companion installed by name
    # may resolve to a build on another torch); checked before success is declared, the environment put back if not.
    torch_check: str | None = None
    # A set built from source: each generated companion's recipe, written beside the variant's, and its result.
    companion_recipes: tuple[tuple[Path, str], ...] = ()
    companion_results: tuple[Path, ...] = ()


def check_token_file(path: Path) -> None:
    """A token file flox can read: a regular file (not stdin, which is the user's terminal here, nor a FIFO flox would
    wait on). pickvariant names the path and never reads the token."""
    if str(path) == "-":
        raise BadInput("--token-file -: flox would read the token from pickvariant's stdin; give a file")
    if not path.is_file():
        raise BadInput(f"--token-file {path}: {'not a regular file' if path.exists() else 'no such file'}")


def check_directory(directory: Path, option: str) -> None:
    """A directory flox can use or create: not a file, and not a `.flox` without an environment in it."""
    if directory.exists() and not directory.is_dir():
        raise BadInput(f"{option} {directory}: exists and is not a directory")
    if (directory / ".flox").exists() and not floxcontract.has_environment(directory):
        raise BadInput(
            f"{option} {directory}: {directory / '.flox'} exists but holds no Flox environment (no .flox/env.json); "
            "flox init refuses it and flox install cannot use it: move it away or choose another directory"
        )


def environment_commands(target: Path, cwd: Path, packages: list[str], what: str) -> tuple[list[Command], list[str]]:
    """`flox init` where the target has no environment yet, then one transactional `flox install`."""
    commands, notes = [], []
    if not target.exists():
        notes.append(f"{target} does not exist: flox init will create it")
    if not floxcontract.has_environment(target):
        # --no-auto-setup: no language prompts or suggestions, the same environment on every machine.
        commands.append(
            Command(
                ("flox", "init", "-d", str(target), "--no-auto-setup"), cwd, f"create a Flox environment in {target}"
            )
        )
        notes.append(f"{target} has no Flox environment: one will be created (and removed again if the install fails)")
    commands.append(Command(("flox", "install", "-d", str(target), *packages), cwd, what))
    return commands, notes


def login_check(cwd: Path, token_file: Path | None = None) -> Command:
    """`flox auth status` (Flox's own login requirement, checked before anything changes), or, with a token file,
    `flox auth login --token-file PATH`: a non-interactive login (a cluster, CI) that fails as clearly."""
    login = floxcontract.contract()["login"]
    if token_file is not None:
        return Command(
            ("flox", "auth", "login", login["token_file_flag"], str(token_file)),
            cwd,
            f"log in to FloxHub with the token in {token_file} (Flox >= {login['token_file_min_version']})",
        )
    return Command(("flox", *login["status_command"]), cwd, "check the FloxHub login (flox init and install need one)")
