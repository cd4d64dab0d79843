"""Every byte a user sees, kept: each case of tests/corpus_cases.py against its recorded output.

A refactor of the command line, the rules or the outputs must change none of them. Each case is a real
`python -m pickvariant` process (the console script's own path, typer-free detect included) with the machine
stated, in an empty folder; its exit code, stdout and stderr are compared whole. The folder's own path is
written `<dir>` in the record, and the package's `<pickvariant>`. `python tests/test_output_corpus.py --write` records them again (an intended change).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from conftest import cpuinfo_path
from corpus_cases import CASES, CLUSTER

import pickvariant

CORPUS = Path(__file__).parent / "corpus"
PACKAGE = Path(pickvariant.__file__).parent
DUMPS = {
    "haswell": "linux-rhel7-haswell",
    "sapphirerapids": "linux-unknown-sapphirerapids",
    "neoverse_v2": "linux-rhel9-neoverse_v2",
    "m2": "darwin-monterey-m2",
}


def _folder(tmp_path: Path) -> Path:
    tmp_path.mkdir(exist_ok=True)
    for name, dump in DUMPS.items():
        shutil.copyfile(cpuinfo_path(dump), tmp_path / name)
    if (CORPUS / "cluster.jsonl").exists():
        shutil.copyfile(CORPUS / "cluster.jsonl", tmp_path / "cluster.jsonl")
    (tmp_path / "home").mkdir()
    return tmp_path


def run_case(args: list[str], folder: Path) -> str:
    """The record of one run: exit code, stdout, stderr, with the folder's path as `<dir>`."""
    env = {
        # No flox, git or nix: what is found on PATH would change what install and recipe print.
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(folder / "home"),
        "XDG_CACHE_HOME": str(folder / "home" / "cache"),
        "LANG": "C.UTF-8",
        "COLUMNS": "100",
        "TERM": "dumb",
        "PICKVARIANT_RECIPES_REPO": "git://127.0.0.1:9/nobody-listens",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pickvariant", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=folder,
        timeout=300,
        check=False,
    )
    record = f"exit {done.returncode}\n--- stdout\n{done.stdout.decode()}\n--- stderr\n{done.stderr.decode()}"
    return record.replace(str(folder), "<dir>").replace(str(PACKAGE), "<pickvariant>")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_output_is_byte_for_byte_the_recorded_one(name: str, tmp_path: Path) -> None:
    expected = (CORPUS / f"{name}.txt").read_text()
    assert run_case(CASES[name], _folder(tmp_path)) == expected


def declared_commands() -> dict[str, Any]:
    """Every command's help and options as pickvariant declares them to typer (typer and click render them)."""
    import inspect
    import typing

    import typer

    from pickvariant.cli.main import app

    def described_parameter(parameter: inspect.Parameter) -> dict[str, Any]:
        base, *extras = typing.get_args(parameter.annotation) or (parameter.annotation,)
        info = next((extra for extra in extras if hasattr(extra, "param_decls")), None)
        return {
            "name": parameter.name,
            "type": getattr(base, "__name__", repr(base)),
            "choices": [member.value for member in base] if isinstance(base, type) and issubclass(base, Enum) else None,
            "declared": list(info.param_decls or ()) if info is not None else None,
            "help": info.help if info is not None else None,
            "metavar": info.metavar if info is not None else None,
            "default": repr(parameter.default.value if isinstance(parameter.default, Enum) else parameter.default),
        }

    def described(group: typer.Typer) -> dict[str, Any]:
        commands = {
            command.name or command.callback.__name__: {
                "help": inspect.getdoc(command.callback),
                "params": [
                    described_parameter(parameter)
                    for parameter in inspect.signature(command.callback, eval_str=True).parameters.values()
                ],
            }
            for command in group.registered_commands
            if command.callback is not None
        }
        groups = {sub.name: described(sub.typer_instance) for sub in group.registered_groups if sub.typer_instance}
        return {"help": group.info.help, "commands": commands, "groups": groups}

    return described(app)


def test_every_command_declares_the_recorded_options_and_help() -> None:
    expected = json.loads((CORPUS / "commands.json").read_text())
    assert declared_commands() == expected


def write(folder: Path) -> None:
    """Record the cluster input, then every case's output and the declared commands."""
    CORPUS.mkdir(exist_ok=True)
    (CORPUS / "commands.json").write_text(json.dumps(declared_commands(), indent=1) + "\n")
    lines = []
    for label, machine in CLUSTER.items():
        done = run_case(["detect", *machine, "--compact", "--label", label], _folder(folder / label))
        lines.append(done.split("--- stdout\n", 1)[1].split("\n", 1)[0])
    (CORPUS / "cluster.jsonl").write_text("\n".join(lines) + "\n")
    for name, args in CASES.items():
        (CORPUS / f"{name}.txt").write_text(run_case(args, _folder(folder / name)))


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        write(Path(scratch))
