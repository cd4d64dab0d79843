"""The Python environment a wheel would be installed into: its interpreter's version and the torch already there.

Read by running that interpreter once (bounded in time and output) with a short script that asks importlib.metadata
for the installed distributions' versions: torch itself is never imported, so a broken or CUDA-less torch costs
nothing and runs nothing of its own. What comes back is data: each value is checked before it is kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.proc import capture
from pickvariant._base.records import keyword_record

READ_TIMEOUT_S = 30.0
MAX_OUTPUT = 64 * 1024
PROJECTS = ("torch", "torchvision", "torchaudio")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}(\+[a-z0-9.]{1,32})?")
_PYTHON = re.compile(r"3\.[0-9]{1,2}\.[0-9]{1,3}")

# Run as `python -c SCRIPT torch torchvision torchaudio`: prints one JSON object; imports only the standard library.
_SCRIPT = """\
import importlib.metadata as metadata, json, sys, sysconfig
def version(name):
    try:
        return metadata.version(name)
    except Exception:
        return None
print(json.dumps({
    "implementation": sys.implementation.name,
    "version": ".".join(str(part) for part in sys.version_info[:3]),
    "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "installed": {name: version(name) for name in sys.argv[1:]},
}))
"""


@keyword_record
class PythonEnvironment:
    interpreter: str
    version: str  # "3.12.3"
    free_threaded: bool
    # The installed version of each of PROJECTS found there ("2.14.1+cu130"), None where none is.
    installed: Mapping[str, str | None]
    given_as: str  # "--python", "VIRTUAL_ENV", "PATH"…: where the interpreter was named

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def tag(self) -> str:
        """Its CPython wheel tag: cp312, or cp314t for a free-threaded build."""
        return "cp" + self.minor.replace(".", "") + ("t" if self.free_threaded else "")

    @property
    def torch(self) -> str | None:
        return self.installed.get("torch")


def active_interpreter(env: Mapping[str, str]) -> tuple[str, str]:
    """The interpreter of the active environment, and what named it: an activated virtual environment or conda
    environment, else the first python3 on PATH, else the one running pickvariant."""
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(variable)
        if prefix and prefix.strip():
            candidate = Path(prefix) / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
            return str(candidate), variable
    found = shutil.which("python3", path=env.get("PATH")) or shutil.which("python", path=env.get("PATH"))
    return (found, "PATH") if found else (sys.executable, "pickvariant's own interpreter")


def read_environment(interpreter: str, given_as: str) -> PythonEnvironment:
    """That interpreter's version and installed torch, or BadInput naming it (`given_as`) and what went wrong."""
    named = f"{given_as} {interpreter!r:.200}"
    # Absolute (it runs from /, below) but not resolved: a virtual environment's python is a link to the base
    # interpreter, which finds its environment only when started by the link's own path.
    path = Path(os.path.abspath(interpreter))
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BadInput(f"{named}: no executable Python interpreter there")
    # Run from the root directory: `python -c` puts its working directory first on sys.path, and a json.py there
    # would otherwise be imported in place of the standard library's.
    captured = capture([str(path), "-c", _SCRIPT, *PROJECTS], READ_TIMEOUT_S, MAX_OUTPUT, f"{named}", cwd="/")
    if captured.problem or captured.returncode != 0:
        said = captured.problem or f"exit code {captured.returncode}"
        raise BadInput(f"{named}: could not read its version and packages ({said})")
    return _parsed(captured.stdout, interpreter, given_as, named)


def _parsed(text: str, interpreter: str, given_as: str, named: str) -> PythonEnvironment:
    try:
        data = json.loads(text)
        version, free_threaded, installed = data["version"], data["free_threaded"], data["installed"]
    except (ValueError, KeyError, TypeError):
        raise BadInput(f"{named}: what it printed is not the expected JSON") from None
    if data.get("implementation") != "cpython" or not isinstance(version, str) or not _PYTHON.fullmatch(version):
        raise BadInput(f"{named}: not a CPython 3 interpreter (PyTorch's wheels are built for CPython)")
    kept = {
        name: value
        for name in PROJECTS
        if isinstance(value := installed.get(name) if isinstance(installed, dict) else None, str)
        and _VERSION.fullmatch(value)
    }
    return PythonEnvironment(
        interpreter=interpreter,
        version=version,
        free_threaded=free_threaded is True,
        installed={name: kept.get(name) for name in PROJECTS},
        given_as=given_as,
    )
