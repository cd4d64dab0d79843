"""One environment, read and installed into (issue 70): the interpreter is resolved once, where pip will run it, to
the real executable of its environment; pip runs from a folder that shadows nothing; and the environment is read
again afterwards, so an installer that ended well but installed elsewhere is said (those two: the faults rows
`install-reads-what-pip-sees` and `installer-installs-elsewhere`, tests/test_faults.py). Real pip against a mirror on
127.0.0.1 (tests/wheel_mirror.py), and pyenv's shims: the real pyenv's where it is on PATH, else a stand-in shim
made as pyenv makes them (its version chosen as `pyenv version-file` chooses: PYENV_VERSION, else the first
`.python-version` from the working directory up, else PYENV_ROOT/version)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fresh_venv
from test_wheel_install import GTX_1080, _env, _installed, _pickvariant, _pip_install
from wheel_mirror import build_mirror, served

# What a pyenv shim does, in bash as pyenv's own (libexec/pyenv-version-file, pyenv-exec): used where no pyenv is.
_STAND_IN_SHIM = """#!/usr/bin/env bash
set -e
program="${0##*/}"
version="${PYENV_VERSION-}"
dir="$PWD"
while [ -z "$version" ]; do
  if [ -f "$dir/.python-version" ]; then read -r version < "$dir/.python-version" || true; fi
  [ -n "$version" ] || [ -z "$dir" ] && break
  dir="${dir%/*}"
done
[ -n "$version" ] || read -r version < "$PYENV_ROOT/version" || true
export PATH="$PYENV_ROOT/versions/$version/bin:$PATH"
exec "$PYENV_ROOT/versions/$version/bin/$program" "$@"
"""


# The real pyenv's shims where pyenv is on PATH (CI has none: Debian does not package it), the stand-in's always.
SHIMS = ["stand-in", *(["pyenv"] if shutil.which("pyenv") else [])]


def _pyenv(root: Path, versions: dict[str, Path], global_version: str, kind: str) -> Path:
    """A pyenv root whose versions are the given environments, and its shims folder (`pyenv rehash`'s)."""
    (root / "versions").mkdir(parents=True)
    for name, prefix in versions.items():
        (root / "versions" / name).symlink_to(prefix)
    (root / "version").write_text(f"{global_version}\n")
    shims = root / "shims"
    pyenv = shutil.which("pyenv")
    if kind == "pyenv" and pyenv is not None:
        env = {**os.environ, "PYENV_ROOT": str(root)}
        subprocess.run([pyenv, "rehash"], env=env, check=True, capture_output=True, timeout=60)
    else:
        shims.mkdir()
        for program in ("python", "python3"):
            (shims / program).write_text(_STAND_IN_SHIM)
            (shims / program).chmod(0o755)
    assert (shims / "python3").is_file()
    return shims


@pytest.fixture
def newer(tmp_path: Path):
    """The mirror: the chosen torch for a GTX 1080 and torch 2.99.0 (a release newer than the catalog knows)."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    detect = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", "--python-version", version, *GTX_1080],
        _env(tmp_path),
        tmp_path,
    )
    assert detect.returncode == 0, detect.stderr
    import json

    chosen = json.loads(detect.stdout)["recommendation"]
    newer = f"2.99.0+{chosen['variant']}"
    build_mirror(tmp_path / "mirror", {chosen["variant"]: [("torch", chosen["torch"]), ("torch", newer)]})
    with served(tmp_path / "mirror") as url:
        yield url, chosen, newer


@pytest.mark.parametrize("kind", SHIMS)
def test_a_pyenv_shim_is_read_and_installed_into_where_the_project_names_it(tmp_path, newer, kind) -> None:
    """`python3` is a pyenv shim; the project folder's `.python-version` names an environment holding torch 2.99.0,
    pyenv's global version one holding none. The plan reads the project's (the shell's `python3` there), so the
    install is refused as a downgrade without --allow-downgrade; with it, the project's torch is replaced and the
    global environment is left untouched. Before issue 70 the global one was read (no torch: nothing to refuse)
    while pip ran in the project folder and downgraded the project's torch."""
    url, chosen, newer_torch = newer
    project_python = fresh_venv(tmp_path / "project-env")
    global_python = fresh_venv(tmp_path / "global-env")
    _pip_install(project_python, newer_torch, f"{url}/{chosen['variant']}", tmp_path)
    shims = _pyenv(
        tmp_path / "pyenv", {"project": tmp_path / "project-env", "global": tmp_path / "global-env"}, "global", kind
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / ".python-version").write_text("project\n")
    env = _env(tmp_path, PYENV_ROOT=str(tmp_path / "pyenv"), PATH=f"{shims}{os.pathsep}{os.environ['PATH']}")
    args = ["install", "--source", "wheels", "--wheel-index", url, *GTX_1080, "--yes", "--no-verify"]

    refused = _pickvariant(args, env, project)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"pickvariant: --allow-downgrade: torch {newer_torch}"), refused.stderr
    assert _installed(project_python, "torch") == newer_torch

    done = _pickvariant([*args, "--allow-downgrade"], env, project)
    assert done.returncode == 0, done.stdout + done.stderr
    # Into the project environment's own interpreter (by whatever link pyenv reaches it), never the shim.
    into = Path(done.stdout.split(" into ", 1)[1].split(" (pip)", 1)[0])
    assert into.parent.resolve() == project_python.parent.resolve() and into.parent != shims
    assert _installed(project_python, "torch") == chosen["torch"]
    assert _installed(global_python, "torch") is None


def test_an_interpreters_answer_is_used_again_only_while_nothing_it_read_has_changed(tmp_path) -> None:
    """detect --source wheels starts the environment's interpreter to read it (a venv that includes the system's
    site-packages cannot be read from its files): its answer is kept, and the next reading starts nothing (no
    process is created, seen through Python's own audit events) and answers the same; once a package is installed
    there (its site-packages changes), the interpreter is asked again and the new torch is seen."""
    import venv

    from pickvariant.machine.environment import read_environment

    venv.EnvBuilder(system_site_packages=True).create(tmp_path / "env")
    python = str(tmp_path / "env" / "bin" / "python")
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": os.environ["PATH"]}
    started: list[str] = []

    def heard(event: str, args: tuple) -> None:
        if event == "subprocess.Popen" and python in str(args[:2]):
            started.append(python)

    sys.addaudithook(heard)
    first = read_environment(python, "--python", env)
    assert len(started) == 1
    again = read_environment(python, "--python", env)
    assert len(started) == 1 and again == first  # kept: nothing started, the same answer
    (site,) = (tmp_path / "env").glob("lib/python*/site-packages")
    (site / "torch-2.99.0.dist-info").mkdir()
    (site / "torch-2.99.0.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.99.0\n")
    changed = read_environment(python, "--python", env)
    assert len(started) == 2 and changed.torch == "2.99.0"
