"""A stand-in for the Flox CLI, for tests on machines where Flox cannot run.

It follows the contract read from flox/flox's source (pickvariant/sources/flox/install/flox_contract.json: the commit,
the argument grammar, the messages, the file shapes): it refuses what the real one refuses, with
the real message and exit 1, and leaves the files the real one leaves. What it cannot do is stood in
for, and said here:
- the Flox Catalog is a JSON file (FAKE_FLOX_STATE/catalog.json) that tests publish into;
- the Nix store is FAKE_FLOX_STATE/store, standing for /nix/store (paths outside it are refused
  with the real message, which names /nix/store);
- `flox build` checks what the real one checks before building (environment, target, git
  tracking, the base catalog), parses the expression with the real `nix-instantiate --parse`
  when it is on PATH, and then, instead of building PyTorch, makes a result that holds only
  `lib/pythonX.Y/site-packages` (as a python3Packages.torch result does), whose entries link to
  FAKE_FLOX_SITE_PACKAGES (a real torch and its dependencies, where the tests have one);
- catalog packages `python3NN` hold `bin/python3`, a wrapper that runs this interpreter with -S
  (so that torch is found only through the environment's PYTHONPATH); X.Y is this interpreter's;
- companion packages (kind "companion": torchvision, torchaudio, vllm) hold their module and name their
  torch in nix-support/propagated-build-inputs; the environment is linked as buildenv/builder.pl links it
  (flox 6536dac): explicit packages by priority (default 5, lower wins), two at one priority that provide
  the same file refused with builder.pl's message, propagated inputs after them (dev mode only).
Fault injection for the subprocess seam: FAKE_FLOX_MODE=sleep:N (with FAKE_FLOX_CHILD) or long.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

CONTRACT = json.loads(
    (
        Path(__file__).resolve().parent.parent / "pickvariant" / "sources" / "flox" / "install" / "flox_contract.json"
    ).read_text(encoding="utf-8")
)
MESSAGES = CONTRACT["messages"]
FILES = CONTRACT["files"]
SYSTEM = {"x86_64": "x86_64-linux", "aarch64": "aarch64-linux", "arm64": "aarch64-linux"}.get(
    platform.machine(), "x86_64-linux"
)
STATE = Path(os.environ["FAKE_FLOX_STATE"])
STORE = STATE / "store"
PYTHON_XY = f"{sys.version_info.major}.{sys.version_info.minor}"
HUB = "https://hub.flox.dev"


class Refused(Exception):
    """An error Flox reports as `✘ ERROR: …` with exit 1."""


def say(key: str, **fields: str) -> str:
    return MESSAGES[key]["text"].format(**fields)


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- arguments, as bpaf parses them for each command's grammar ---------------------------------


def parse(command: str, args: list[str]) -> dict:
    grammar = CONTRACT["grammar"][command]
    parsed: dict = {"options": {}, "flags": set(), "positionals": [], "rest": None, "ids": {}}
    pending_id = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" and "rest_after" in grammar:
            parsed["rest"] = args[i + 1 :]
            break
        if arg.startswith("-") and arg != "-":
            name, has_value, value = arg.partition("=")
            if name in grammar["options"]:
                if not has_value:
                    i += 1
                    if i >= len(args):
                        raise Refused(f"{name} requires an argument `<{grammar['options'][name]}>`")
                    value = args[i]
                key = grammar["options"][name]
                if key == "id":
                    pending_id = value
                else:
                    parsed["options"][key] = value
            elif arg in grammar["flags"]:
                parsed["flags"].add(arg)
            else:
                raise Refused(say("unexpected_argument", argument=arg))
        elif command == "run" and "rest_after" in grammar:
            parsed["rest"] = args[i:]  # POSIX: the first positional starts the command
            break
        else:
            if grammar["positionals"] == 0 and not (grammar.get("subcommands") and not parsed["positionals"]):
                raise Refused(say("unexpected_argument", argument=arg))
            if pending_id is not None:
                parsed["ids"][len(parsed["positionals"])] = pending_id
                pending_id = None
            parsed["positionals"].append(arg)
        i += 1
    return parsed


# --- login ------------------------------------------------------------------------------------


def identity() -> tuple[str | None, str | None]:
    """(handle, problem): who is logged in, from a stored login or FLOX_FLOXHUB_TOKEN."""
    token = os.environ.get(CONTRACT["login"]["token_env"], "")
    stored = STATE / "auth.json"
    if not token and not stored.exists():
        return None, "not_logged_in"
    if os.environ.get("FAKE_FLOX_OFFLINE") == "1":
        return None, "token_unverified"
    if token:
        revoked = json.loads((STATE / "revoked.json").read_text()) if (STATE / "revoked.json").exists() else []
        return (None, "token_expired") if token in revoked else (token.split("_")[-1] or "token", None)
    return json.loads(stored.read_text())["handle"], None


def login_with_token_file(path: Path) -> int:
    """`flox auth login --token-file PATH` (auth.rs login_with_token_file): read, validate, store; no prompt. A token
    here is `flox_pat_HANDLE`; one listed in FAKE_FLOX_STATE/revoked.json is refused as expired."""
    try:
        secret = path.read_text().strip()
    except OSError:
        raise Refused(say("token_file_unreadable", path=str(path))) from None
    if not secret.startswith("flox_pat_") or not secret.removeprefix("flox_pat_"):
        raise Refused(say("token_file_invalid"))
    if os.environ.get("FAKE_FLOX_OFFLINE") == "1":
        raise Refused(say("token_file_unverified"))
    revoked = json.loads((STATE / "revoked.json").read_text()) if (STATE / "revoked.json").exists() else []
    if secret in revoked:
        raise Refused(say("token_file_expired"))
    (STATE / "auth.json").write_text(json.dumps({"handle": secret.removeprefix("flox_pat_")}))
    note(say("logged_in", handle=secret.removeprefix("flox_pat_"), url=HUB))
    return 0


def require_login(command: str) -> None:
    if command in CONTRACT["login"]["required_by"] and identity()[0] is None:
        raise Refused(say("auth_required"))


# --- environments -----------------------------------------------------------------------------


def environment_dir(parsed: dict) -> Path:
    return Path(parsed["options"].get("path") or os.getcwd())


def open_environment(directory: Path) -> dict:
    dot_flox = directory / ".flox"
    if not dot_flox.is_dir():
        raise Refused(say("no_environment", path=str(directory)))
    pointer = directory / FILES["env_json"]
    if not pointer.is_file():
        raise Refused(say("env_pointer_missing"))
    return json.loads(pointer.read_text())


def read_manifest(directory: Path) -> tuple[str, dict]:
    text = (directory / FILES["manifest"]).read_text(encoding="utf-8")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise Refused(f"Failed to parse manifest: {error}") from None


def atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def store_path(name: str, seed: str) -> Path:
    return STORE / f"{hashlib.sha256(seed.encode()).hexdigest()[:32]}-{name}"


def catalog() -> dict:
    path = STATE / "catalog.json"
    return json.loads(path.read_text()) if path.exists() else {}


def visible(pkg_path: str, entry: dict) -> bool:
    """Packages of an org's catalog are visible only to its logged-in members."""
    if "/" not in pkg_path:
        return True
    return identity()[0] in entry.get("members", [])


def version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def resolve(pkg_path: str, wanted: str | None) -> tuple[str, dict]:
    entry = catalog().get(pkg_path)
    if entry is None or not visible(pkg_path, entry):
        raise Refused(say("package_not_found", package=pkg_path))
    versions = [v for v in entry["versions"] if wanted is None or v == wanted or v.startswith(wanted + ".")]
    if not versions:
        raise Refused(say("version_not_found", group="toplevel"))
    return max(versions, key=version_key), entry


def _staging(tree: Path) -> Path:
    """A folder of this process's own to build a store tree in: nodes of a cluster realise the same path at once
    (pdsh, clush, Ansible forks), and the Nix store locks each path so that one of them builds it."""
    return tree.with_name(f"{tree.name}.partial-{os.getpid()}")


def _publish(staging: Path, tree: Path) -> None:
    """The tree moved into place, unless another process got there first (then its tree, the same, is kept)."""
    try:
        os.rename(staging, tree)
    except OSError:
        if not tree.is_dir():
            raise
        shutil.rmtree(staging, ignore_errors=True)


def realise(pkg_path: str, version: str, entry: dict) -> Path:
    """The package's store tree, made the first time it is asked for (a substitution)."""
    name = f"{pkg_path.split('/')[-1]}-{version}"
    tree = store_path(name, f"{pkg_path}@{version}")
    if tree.exists():
        return tree
    staging = _staging(tree)
    if entry["kind"] == "python":
        (staging / "bin").mkdir(parents=True)
        wrapper = staging / "bin" / "python3"
        wrapper.write_text(f'#!/bin/sh\nexec "{entry["interpreter"]}" -S "$@"\n')
        wrapper.chmod(0o755)
    elif entry["kind"] == "companion":
        # A torchvision/torchaudio/vllm package: its own module, and its torch as a propagated build input
        # (nix-support/propagated-build-inputs, as python3Packages' propagatedBuildInputs write it).
        module = staging / "lib" / f"python{PYTHON_XY}" / "site-packages" / entry["module"]
        module.mkdir(parents=True)
        (module / "__init__.py").write_text(f"# stand-in for {name}\n")
        propagated = []
        for dependency in entry.get("propagates", []):
            dep_path, _, dep_version = dependency.partition("@")
            found_version, dep_entry = resolve(dep_path, dep_version or None)
            propagated.append(str(realise(dep_path, found_version, dep_entry)))
        (staging / "nix-support").mkdir()
        (staging / "nix-support" / "propagated-build-inputs").write_text(" ".join(propagated) + "\n")
    else:
        site_packages(staging, entry.get("site_packages"))
    _publish(staging, tree)
    return tree


def site_packages(tree: Path, links_from: str | None, torch_version: str | None = None) -> None:
    """The tree's site-packages: links to a real torch where the tests have one; else, for a built torch recipe
    (`torch_version`), a module and distribution metadata of its own, as a python3Packages.torch result has them, so
    that what Flox links and what pickvariant reads back of it do not depend on torch being installed here."""
    target = tree / "lib" / f"python{PYTHON_XY}" / "site-packages"
    target.mkdir(parents=True)
    if links_from:
        for item in sorted(Path(links_from).iterdir()):
            if not item.name.startswith(("_distutils_hack", "distutils-precedence", "__pycache__")):
                (target / item.name).symlink_to(item)
    elif torch_version is not None:
        (target / "torch").mkdir()
        (target / "torch" / "__init__.py").write_text(f'__version__ = "{torch_version}"  # stand-in\n')
        metadata = target / f"torch-{torch_version}.dist-info"
        metadata.mkdir()
        (metadata / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {torch_version}\n")


def merge_into(run_dir: Path, tree: Path) -> None:
    for root, directories, files in os.walk(tree, followlinks=False):
        relative = Path(root).relative_to(tree)
        (run_dir / relative).mkdir(parents=True, exist_ok=True)
        for name in directories:
            source = Path(root) / name
            if source.is_symlink():
                link = run_dir / relative / name
                if not link.exists():
                    link.symlink_to(source.resolve())
        for name in files:
            link = run_dir / relative / name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(Path(root) / name)


def units(tree: Path) -> dict[str, Path]:
    """What buildenv would link of a package, by path in the environment: each file, or a module's __init__.py."""
    found: dict[str, Path] = {}
    site = tree / "lib" / f"python{PYTHON_XY}" / "site-packages"
    if site.is_dir():
        for child in sorted(site.iterdir()):
            unit = child / "__init__.py" if child.is_dir() and (child / "__init__.py").exists() else child
            found[f"{child.relative_to(tree)}/__init__.py" if unit is not child else str(child.relative_to(tree))] = (
                unit
            )
    return found


def link_packages(staging: Path, explicit: list[tuple[str, Path, int]], run_mode: bool) -> dict[str, str]:
    """buildenv/builder.pl at flox 6536dac: explicit packages file by file, a lower priority number winning, two at
    the same priority providing one file refused with its message; then (in dev mode only, FLOX_RECURSIVE_LINK)
    each package's propagated build inputs, at 1000 and up: below every explicit package, never a conflict."""
    owners: dict[str, tuple[int, str, Path]] = {}
    for install_id, tree, priority in explicit:
        for relative, unit in units(tree).items():
            old = owners.get(relative)
            if old is not None and old[0] == priority and old[2] != tree:
                raise Refused(
                    f"Failed to construct environment: '{old[1]}' conflicts with '{install_id}'. Both packages provide the file "
                    f"'{unit.name}'\n\nResolve by uninstalling one of the conflicting packages or setting the priority of the "
                    f"preferred package to a value lower than '{old[0]}'"
                )
            if old is None or priority < old[0]:
                owners[relative] = (priority, install_id, tree)
    ordered = [tree for _, tree, _ in sorted(explicit, key=lambda item: item[2])]
    done = set(ordered)
    if not run_mode:
        queue = list(ordered)
        while queue:
            propagated_file = queue.pop(0) / "nix-support" / "propagated-build-inputs"
            for path in propagated_file.read_text().split() if propagated_file.exists() else ():
                if Path(path) not in done:
                    done.add(Path(path))
                    ordered.append(Path(path))
                    queue.append(Path(path))
    winners: dict[str, str] = {}
    for tree in ordered:  # merge_into keeps the first link: the winner of each file comes first
        merge_into(staging, tree)
        for relative in units(tree):
            winners.setdefault(relative, tree.name)
    # The stand-in's own record of which store tree each linked file came from (Flox keeps no such file).
    return winners


def build_environment(directory: Path, pointer: dict, manifest: dict) -> Path:
    """Link every package of the manifest for this system into the environment's run directory."""
    run_dir = directory / FILES["run_dir"].format(system=SYSTEM, name=pointer["name"])
    staging = run_dir.with_name(run_dir.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    explicit: list[tuple[str, Path, int]] = []
    for install_id, spec in sorted(manifest.get("install", {}).items()):
        if SYSTEM not in spec.get("systems", [SYSTEM]):
            continue
        if "store-path" in spec:
            tree = Path(spec["store-path"])
            if not tree.exists():
                raise Refused(f"store path '{tree}' does not exist")
        else:
            version, entry = resolve(spec["pkg-path"], spec.get("version"))
            tree = realise(spec["pkg-path"], version, entry)
        explicit.append((install_id, tree, int(spec.get("priority", 5))))
    try:
        winners = link_packages(staging, explicit, manifest.get("options", {}).get("activate", {}).get("mode") == "run")
    except Refused:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    (staging / "stand-in-links.json").write_text(json.dumps(winners, indent=1, sort_keys=True) + "\n")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.replace(staging, run_dir)
    return run_dir


def toml_string(value: str) -> str:
    return json.dumps(value)


def toml_key(key: str) -> str:
    """A bare key where TOML allows one; quoted otherwise (a store path's id holds 'python3.13')."""
    return key if key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key) else json.dumps(key)


def cmd_init(parsed: dict) -> int:
    require_login("init")
    directory = environment_dir(parsed)
    if (directory / ".flox").exists():
        if (directory / FILES["env_json"]).is_file():
            raise Refused(say("environment_exists", path=json.dumps(str(directory))))
        raise Refused(say("env_pointer_missing"))
    name = parsed["options"].get("name") or directory.resolve().name
    env_dir = directory / ".flox" / "env"
    env_dir.mkdir(parents=True)  # create_dir_all: a missing --dir is created with its parents
    (directory / FILES["env_json"]).write_text(json.dumps({"name": name, "version": 1}, indent=2) + "\n")
    systems = ", ".join(toml_string(s) for s in FILES["default_systems"])
    (directory / FILES["manifest"]).write_text(
        f'schema-version = "{FILES["manifest_schema_version"]}"\n\n[install]\n\n[options]\nsystems = [{systems}]\n'
    )
    (directory / FILES["lockfile"]).write_text(json.dumps({"version": 1, "packages": []}, indent=2) + "\n")
    (directory / ".flox" / ".gitignore").write_text("run/\ncache/\nlib/\nlog/\n!env/\n")
    (directory / ".flox" / ".gitattributes").write_text(
        "env/manifest.lock linguist-generated=true linguist-language=JSON\n"
    )
    note(say("created_environment", name=name, system=SYSTEM))
    return 0


def store_path_id(descriptor: str) -> tuple[str, Path]:
    try:
        path = Path(descriptor).resolve(strict=True)
    except OSError as error:
        raise Refused(say("cannot_resolve_path", error=f"{error.strerror} (os error {error.errno})")) from None
    try:
        hash_and_name = path.relative_to(STORE).parts[0]
    except ValueError:
        raise Refused(say("store_path_outside_store")) from None
    components = hash_and_name.split("-")[1:]
    name = []
    for component in components:
        if component[:1].isdigit():
            break
        name.append(component)
    return "-".join(name), STORE / hash_and_name


def cmd_install(parsed: dict) -> int:
    require_login("install")
    directory = environment_dir(parsed)
    pointer = open_environment(directory)
    if not parsed["positionals"]:
        raise Refused("Must specify at least one package")
    text, manifest = read_manifest(directory)
    systems = manifest.get("options", {}).get("systems", FILES["default_systems"])
    lines, installed, warnings = [], [], []
    for index, descriptor in enumerate(parsed["positionals"]):
        before = len(lines)
        if descriptor.startswith(("../", "./", "/")):
            install_id, path = store_path_id(descriptor)
            install_id = parsed["ids"].get(index, install_id)
            key = toml_key(install_id)
            lines += [f"{key}.store-path = {toml_string(str(path))}", f"{key}.systems = [{toml_string(SYSTEM)}]"]
        else:
            pkg_path, _, version = descriptor.partition("@")
            install_id = parsed["ids"].get(index, pkg_path.replace("/", ".").split(".")[-1])
            if "@" in descriptor and not version:
                raise Refused("Expected version requirement after '@'.\nTry adding quotes around the argument.")
            _, entry = resolve(pkg_path, version or None)
            key = toml_key(install_id)
            lines.append(f"{key}.pkg-path = {toml_string(pkg_path)}")
            if version:
                lines.append(f"{key}.version = {toml_string(version)}")
            available = [s for s in systems if s in entry.get("systems", systems)]
            if available != list(systems):
                lines.append(f"{key}.systems = [{', '.join(toml_string(s) for s in available)}]")
                warnings.append(say("installed_for_some_systems", id=install_id, systems=", ".join(available)))
        if install_id in manifest.get("install", {}):
            # install.rs partition_installed_packages: an id already there is kept as it is, not an error.
            warnings.append(f"! Package with id '{install_id}' already installed to environment '{pointer['name']}'")
            del lines[before:]
            continue
        installed.append(install_id)
    if not installed:
        for warning in warnings:
            note(warning)
        return 0
    new_text = add_install_lines(text, lines)
    new_manifest = tomllib.loads(new_text)
    # Transactional, as Flox's: the environment is built first; the manifest changes only if that worked.
    build_environment(directory, pointer, new_manifest)
    atomic_write(
        directory / FILES["lockfile"],
        json.dumps({"version": 1, "manifest": new_manifest}, indent=2, sort_keys=True) + "\n",
    )
    atomic_write(directory / FILES["manifest"], new_text)
    note(say("installed", ids=", ".join(f"'{i}'" for i in installed), name=pointer["name"]))
    for warning in warnings:
        note(warning)
    return 0


def add_install_lines(text: str, lines: list[str]) -> str:
    rows = text.splitlines(keepends=True)
    for index, row in enumerate(rows):
        if row.strip() == "[install]":
            return "".join(rows[: index + 1] + [line + "\n" for line in lines] + rows[index + 1 :])
    return (
        text
        + ("" if text.endswith("\n") or not text else "\n")
        + "[install]\n"
        + "".join(line + "\n" for line in lines)
    )


def expressions(directory: Path) -> dict[str, Path]:
    pkgs = directory / ".flox" / "pkgs"
    found = {}
    if pkgs.is_dir():
        for item in sorted(pkgs.iterdir()):
            if item.suffix == ".nix" and item.is_file():
                found[item.stem] = item
            elif (item / "default.nix").is_file():
                found[item.name] = item / "default.nix"
    return found


def git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def cmd_build(parsed: dict) -> int:
    directory = environment_dir(parsed)
    open_environment(directory)
    _, manifest = read_manifest(directory)
    systems = manifest.get("options", {}).get("systems")
    if systems is not None and SYSTEM not in systems:  # buildenv.rs: explicit options.systems restrict the environment
        raise Refused(say("lockfile_incompatible", systems=", ".join(systems)))
    targets = parsed["positionals"]
    if targets[:1] == ["update-catalogs"]:
        raise Refused(say("update_catalogs_retired"))
    if targets[:1] in (["clean"], ["import-nixpkgs"]):
        raise Refused(f"the stand-in does not implement `flox build {targets[0]}`")
    available = expressions(directory)
    if not available:
        raise Refused(say("no_packages_to_build", expression_ref=f"path:{directory / '.flox'}"))
    for target in targets:
        if target not in available:
            raise Refused(say("target_not_found", name=target))
    chosen = targets or sorted(available)
    toplevel = git(["rev-parse", "--show-toplevel"], directory / ".flox")
    if toplevel.returncode != 0:
        raise Refused(say("build_needs_git", name=chosen[0]))
    for target in chosen:
        if git(["ls-files", "--error-unmatch", str(available[target])], Path(toplevel.stdout.strip())).returncode != 0:
            raise Refused(say("expression_not_tracked", name=target, file=str(available[target])))
    if os.environ.get("FAKE_FLOX_OFFLINE") == "1":
        raise Refused(
            say(
                "base_catalog_unreachable",
                cause="error sending request for url (https://api.flox.dev/api/v1/catalog/info/base-catalog)",
            )
        )
    for target in chosen:
        if shutil.which("nix-instantiate"):
            check = subprocess.run(
                ["nix-instantiate", "--parse", str(available[target])], capture_output=True, text=True
            )
            if check.returncode != 0:
                print(check.stderr, end="", file=sys.stderr)
                raise Refused(say("build_failed"))
        if os.environ.get("FAKE_FLOX_BUILD_FAILS") == "1":
            print(
                f"error: builder for '/nix/store/…-python{PYTHON_XY}-{target}.drv' failed with exit code 2",
                file=sys.stderr,
            )
            raise Refused(say("build_failed"))
        tree = built_tree(directory, available, target)
        link = directory / FILES["result_link"].format(name=target)
        temporary = link.with_name(link.name + ".tmp")
        if temporary.is_symlink():
            temporary.unlink()
        temporary.symlink_to(tree)
        os.replace(temporary, link)
        shown = f"./{link.name}" if Path.cwd().resolve() == directory.resolve() else str(link)
        note(say("built_output", link=shown))
    return 0


COMPANION_MODULES = {"torchvision": "torchvision", "torchaudio": "torchaudio", "vllm": "vllm"}


def built_tree(directory: Path, available: dict[str, Path], target: str) -> Path:
    """The store tree `flox build` makes of one expression (the same text builds to the same path). A PyTorch
    recipe's holds site-packages; a companion's (torchvision-, torchaudio-, vllm-) holds its module and, as its
    propagated build input, the tree of the PyTorch recipe it imports (built first, as Nix builds a dependency)."""
    text = available[target].read_text(encoding="utf-8", errors="replace")
    version = "0.0.0"
    for key in ("PYTORCH_BUILD_VERSION", "version"):
        marker = f'{key} = "'
        if marker in text:
            version = text.split(marker, 1)[1].split('"', 1)[0]
            break
    tree = store_path(f"python{PYTHON_XY}-{target}-{version}", f"{directory}/{target}/{text}")
    if tree.exists():
        return tree
    staging = _staging(tree)
    module = COMPANION_MODULES.get(target.split("-", 1)[0])
    if module is None:
        site_packages(staging, os.environ.get("FAKE_FLOX_SITE_PACKAGES"), version)
    else:
        words = (word.rstrip(";").removeprefix("./") for word in text.split() if word.startswith("./pytorch-"))
        imported = [word.removesuffix(".nix") for word in words]
        torch_trees = [str(built_tree(directory, available, name)) for name in imported if name in available]
        package = staging / "lib" / f"python{PYTHON_XY}" / "site-packages" / module
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f"# stand-in for {target}\n")
        (staging / "nix-support").mkdir()
        (staging / "nix-support" / "propagated-build-inputs").write_text(" ".join(torch_trees) + "\n")
    _publish(staging, tree)
    return tree


def activation_environment(run_dir: Path) -> dict[str, str]:
    env = dict(os.environ, FLOX_ENV=str(run_dir), PATH=f"{run_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    python = run_dir / "bin" / "python3"
    if os.access(python, os.X_OK):
        # profile.d.functions setup_python: only when the environment provides bin/python3, for its X.Y.
        xy = subprocess.run(
            [str(python), "-c", "import sys; print('{}.{}'.format(*sys.version_info[:2]))"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        suffix = run_dir / "lib" / f"python{xy}" / "site-packages"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(suffix), os.environ.get("PYTHONPATH", "")]))
    return env


def cmd_activate(parsed: dict) -> int:
    directory = environment_dir(parsed)
    pointer = open_environment(directory)
    if parsed["rest"] is None:
        raise Refused("the stand-in runs only `flox activate [-d DIR] -- COMMAND`")
    if not parsed["rest"]:
        raise Refused("No command specified.")
    _, manifest = read_manifest(directory)
    run_dir = build_environment(directory, pointer, manifest)
    env = activation_environment(run_dir)
    program = shutil.which(parsed["rest"][0], path=env["PATH"])
    if program is None:
        raise Refused(f"Failed to run '{parsed['rest'][0]}'.")
    os.execve(program, parsed["rest"], env)
    return 0  # not reached


def cmd_run(parsed: dict) -> int:
    require_login("run")
    package = parsed["options"].get("package")
    if package is None:
        raise Refused(say("run_no_package"))
    if "@" in package or "^" in package:
        raise Refused(say("run_version_unsupported", package=package))
    if not parsed["rest"]:
        raise Refused("No command specified.\nRun 'flox run --package <PACKAGE> <COMMAND> [ARGS...]'.")
    entry = catalog().get(package)
    if entry is None or not visible(package, entry):
        raise Refused(say("run_package_not_found", package=package))
    version, entry = resolve(package, None)
    tree = realise(package, version, entry)
    executable = parsed["rest"][0]
    for folder in ("bin", "sbin"):
        candidate = tree / folder / executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            os.execv(candidate, parsed["rest"])
    raise Refused(say("run_executable_not_found", executable=executable, package=package))


def cmd_auth(parsed: dict) -> int:
    if parsed["positionals"] == ["login"] and "path" in parsed["options"]:
        return login_with_token_file(Path(parsed["options"]["path"]))
    if parsed["positionals"] != ["status"]:
        raise Refused("the stand-in implements only `flox auth status` and `flox auth login --token-file PATH`")
    handle, problem = identity()
    if handle is None:
        # FAKE_FLOX_REWORDED: another Flox release that words the same refusal its own way (exit 1 all the same).
        note("✘ ERROR: no FloxHub session" if os.environ.get("FAKE_FLOX_REWORDED") == "1" else say(problem))
        return 1
    note(say("logged_in", handle=handle, url=HUB))
    return 0


COMMANDS = {
    "init": cmd_init,
    "install": cmd_install,
    "build": cmd_build,
    "activate": cmd_activate,
    "run": cmd_run,
    "auth": cmd_auth,
}


def inject_faults() -> None:
    mode = os.environ.get("FAKE_FLOX_MODE", "")
    if mode.startswith("sleep:"):
        print("building...", flush=True)
        if os.environ.get("FAKE_FLOX_CHILD"):
            # A builder that ignores SIGINT, as nix's daemon children may: stopping flox must stop it too. With
            # FAKE_FLOX_CHILD_HONOURS_SIGINT=1 it stops at SIGINT, as most do (no escalation to wait out).
            handler = (
                "signal.default_int_handler" if os.environ.get("FAKE_FLOX_CHILD_HONOURS_SIGINT") else "signal.SIG_IGN"
            )
            child = subprocess.Popen(
                [sys.executable, "-c", f"import signal, time; signal.signal(signal.SIGINT, {handler}); time.sleep(60)"]
            )
            Path(os.environ["FAKE_FLOX_CHILD"]).write_text(str(child.pid))
        time.sleep(float(mode.split(":")[1]))
    elif mode == "long":
        for i in range(500):
            print(f"log line {i}")
    elif mode.startswith("flood:"):  # far more than a pipe holds: a reader that stops reading blocks this writer
        for i in range(int(mode.split(":")[1])):
            print(f"compiling unit {i} of a very long build, with a line as long as a compiler's")


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, lambda *_: (print("flox: interrupted", flush=True), sys.exit(130)))
    with open(os.environ["FAKE_FLOX_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(json.dumps({"argv": argv, "cwd": os.getcwd(), "pid": os.getpid()}) + "\n")
    if "--version" in argv:  # main.rs: Version::check() looks at the whole argument list first
        print(os.environ.get("FAKE_FLOX_VERSION", CONTRACT["source"]["describe"].lstrip("v").split("-")[0]))
        return 0
    inject_faults()
    try:
        if not argv or argv[0] not in COMMANDS:
            raise Refused(say("unexpected_argument", argument=argv[0] if argv else ""))
        return COMMANDS[argv[0]](parse(argv[0], argv[1:]))
    except Refused as error:
        note(CONTRACT["error_prefix"] + str(error))
        return CONTRACT["error_exit_code"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
