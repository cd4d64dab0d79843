"""The Python environment a wheel would be installed into: its interpreter's version and the torch already there.

Read by running that interpreter once (bounded in time and output) with a short script that finds the installed
distributions' versions in their METADATA: torch itself is never imported, so a broken or CUDA-less torch costs
nothing and runs nothing of its own. What comes back is data: each value is checked before it is kept. A virtual
environment whose files say enough is read from them, and the interpreter running pickvariant by the same script in
this process: neither starts an interpreter.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from types import MappingProxyType

from pickvariant._base import strictjson
from pickvariant._base.errors import BadInput
from pickvariant._base.files import joined
from pickvariant._base.records import keyword_record
from pickvariant._base.text import visible
from pickvariant.machine.environment_script import FIND, READ, SCRIPT

TYPE_CHECKING = False  # typing (3 ms), shutil and subprocess stay off detect's path: loaded where used
if TYPE_CHECKING:
    from typing import Any

    from pickvariant._base.capture import Capturing
    from pickvariant._base.request import Request

READ_TIMEOUT_S = 30.0
MAX_OUTPUT = 64 * 1024
PROJECTS = ("torch", "torchvision", "torchaudio")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}(\+[a-z0-9.]{1,32})?")
_PYTHON = re.compile(r"3\.[0-9]{1,2}\.[0-9]{1,3}")
_DIST_INFO = re.compile(r"[A-Za-z0-9_.]{1,64}-[A-Za-z0-9_.+!]{1,64}\.dist-info")

# What `python -E -S` ignores and this process may not have: where one is set (or this process was started with -s or
# -I), the interpreter's own answer can differ from this process's, and it is asked.
_ENV_THAT_CHANGES_SITES = ("PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "PYTHONPLATLIBDIR")


@keyword_record
class PythonEnvironment:
    interpreter: str
    version: str  # "3.12.3"
    free_threaded: bool
    # The installed version of each of PROJECTS found there ("2.14.1+cu130"), None where none is.
    installed: Mapping[str, str | None]
    given_as: str  # "--python", "VIRTUAL_ENV", "PATH"…: where the interpreter was named
    # Where each installed one's files are: (site-packages folder, its .dist-info folder's name).
    locations: Mapping[str, tuple[str, str]] = MappingProxyType({})
    site: str = ""  # the site-packages folder an installer writes to (absolute), "" where it did not say

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
            return joined(prefix, "Scripts/python.exe" if os.name == "nt" else "bin/python"), variable
    found = _on_path("python3", env.get("PATH")) or _on_path("python", env.get("PATH"))
    return (found, "PATH") if found else (sys.executable, "pickvariant's own interpreter")


def _on_path(name: str, path: str | None) -> str | None:
    """`name` as a shell finds it on PATH (shutil.which's answer). On POSIX without shutil, whose imports (bz2, lzma,
    zlib) cost detect milliseconds; on Windows (PATHEXT) through shutil."""
    if os.name == "nt":
        import shutil

        return shutil.which(name, path=path)
    for folder in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        if not os.path.isabs(folder):
            continue  # an empty or relative entry means the working directory: never looked in
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve_interpreter(interpreter: str, given_as: str, env: Mapping[str, str]) -> str:
    """The one absolute path every later step reads, prints and hands to pip or uv: a bare name (`python3`) is looked
    up on PATH as a shell would, never taken from the working directory; a path is made absolute but not resolved
    (a virtual environment's python is a link to the base interpreter, which finds its environment only when started
    by the link's own path). BadInput naming `given_as` where there is no executable there."""
    named = f"{given_as} {visible(interpreter)!r:.200}"
    if os.sep not in interpreter and not (os.altsep and os.altsep in interpreter):
        found = _on_path(interpreter, env.get("PATH", os.defpath))
        if found is None:
            raise BadInput(f"{named}: no such interpreter on PATH (give its path)")
        interpreter = found
    path = os.path.abspath(interpreter)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise BadInput(f"{named}: no executable Python interpreter there")
    return path


def wanted(request: Request, env: Mapping[str, str]) -> tuple[str, str] | None:
    """The interpreter whose environment a wheel is for, and what named it: the request's (--python), else the active
    one where the machine is this one; None for a stated machine with no --python (no environment here is its)."""
    if request.interpreter is not None:
        return request.interpreter, request.interpreter_given_as
    return None if request.machine_stated(env) else active_interpreter(env)


# A reading started by the entry point before the rest of the program loads (start_early), for reading() to take.
_EARLY: dict[tuple[str, str], Reading] = {}


def start_early(interpreter: str, given_as: str, env: Mapping[str, str]) -> None:
    _EARLY[(interpreter, given_as)] = Reading(interpreter, given_as, env)


def reading(interpreter: str, given_as: str, env: Mapping[str, str]) -> Reading:
    """The reading of that interpreter started early, else one started now."""
    return _EARLY.pop((interpreter, given_as), None) or Reading(interpreter, given_as, env)


def discard_early() -> None:
    """A reading no command took is stopped: its interpreter is not left running."""
    while _EARLY:
        _EARLY.popitem()[1].stop()


def read_environment(interpreter: str, given_as: str, env: Mapping[str, str] | None = None) -> PythonEnvironment:
    """That interpreter's version and installed torch, or BadInput naming it (`given_as`) and what went wrong.

    A virtual environment whose files say enough (its pyvenv.cfg names the version, its own site-packages is there,
    no system site-packages) is read from them, without starting its interpreter; any other is asked (SCRIPT)."""
    reading = Reading(interpreter, given_as, env)
    try:
        return reading.result()
    finally:
        reading.stop()


class Reading:
    """read_environment's answer, begun now: where the interpreter must be asked, it is started here and runs while
    the caller reads the machine and the catalog (a Python started through a pyenv shim takes 100 ms); `result()`
    waits for it, or raises the BadInput found; `stop()` ends one whose answer is not wanted (an error on the way)."""

    def __init__(self, interpreter: str, given_as: str, env: Mapping[str, str] | None = None) -> None:
        self._found: PythonEnvironment | BadInput | None = None
        self._child: Capturing | None = None
        try:
            self._path = path = resolve_interpreter(interpreter, given_as, os.environ if env is None else env)
            self._given_as, self._named = given_as, f"{given_as} {visible(path)!r:.200}"
            self._found = _from_files(path, given_as)
            if self._found is None and _is_this_interpreter(path):  # its answer is this process's: not started
                self._found = _checked(_read_here(), path, given_as, self._named)
        except BadInput as error:
            self._found = error
        self._env = os.environ if env is None else env
        if self._found is None:
            self._found = _kept(self._path, given_as, self._named, self._env)
        if self._found is None:
            # Without PYTHON* variables or `site`, from the working directory (where a shim picks its interpreter as
            # the user's shell would), which the script takes off sys.path first (_SAFE_PATH).
            from pickvariant._base.capture import Capturing  # subprocess, threads: only where it runs

            argv = [path, "-E", "-S", "-c", SCRIPT, *PROJECTS]
            self._child = Capturing(argv, READ_TIMEOUT_S, MAX_OUTPUT, self._named, cwd=_working_directory())

    def result(self) -> PythonEnvironment:
        if self._child is not None:
            captured, self._child = self._child.result(), None
            if captured.problem or captured.returncode != 0:
                said = captured.problem or f"exit code {captured.returncode}"
                self._found = BadInput(f"{self._named}: could not read its version and packages ({said})")
            else:
                data = _json(captured.stdout)
                self._found = _checked(data, self._path, self._given_as, self._named)
                from pickvariant.machine import environment_cache

                environment_cache.store(self._path, data, self._env)
        if isinstance(self._found, BadInput):
            raise self._found
        assert self._found is not None
        return self._found

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None


def _working_directory() -> str:
    try:
        return os.getcwd()
    except OSError:  # removed under it: a shim then resolves as it would anywhere
        return "/"


def _is_this_interpreter(path: str) -> bool:
    """`path` is the executable this process runs, started as `python -E -S` would see the same folders: none of the
    variables -E ignores that move them is set here, and this process was not started with -s or -I."""
    if os.path.abspath(path) != os.path.abspath(sys.executable) or sys.flags.no_user_site or sys.flags.isolated:
        return False
    return not any(name in os.environ for name in _ENV_THAT_CHANGES_SITES)


def _read_here() -> Any:
    """What SCRIPT prints, computed in this process (the same code: pickvariant's own, exec'd as _from_files does)."""
    reader: dict[str, Any] = {}
    exec(READ, reader)
    return reader["read"](PROJECTS)


_CFG_LINE = re.compile(r"^\s*([A-Za-z_-]+)\s*=\s*(.*?)\s*$", re.M)


def _from_files(path: str, given_as: str) -> PythonEnvironment | None:
    """A POSIX virtual environment read from its files, as `site` would find its packages; None where they do not
    say enough (no pyvenv.cfg, another implementation, system site-packages included, an unexpected layout)."""
    here = os.path.dirname(path)
    cfg = next(
        (os.path.join(d, "pyvenv.cfg") for d in (here, os.path.dirname(here)) if _is_file(d, "pyvenv.cfg")), None
    )
    if cfg is None or os.name != "posix":
        return None
    try:
        with open(cfg, encoding="utf-8", errors="replace") as stream:
            keys = {key.lower(): value for key, value in _CFG_LINE.findall(stream.read(65536))}
    except OSError:
        return None
    version = keys.get("version_info") or keys.get("version") or ""
    version = ".".join(version.split(".")[:3])
    if not _PYTHON.fullmatch(version) or keys.get("include-system-site-packages", "false").lower() == "true":
        return None
    if keys.get("implementation", "cpython").lower() != "cpython":
        return None
    minor = ".".join(version.split(".")[:2])
    prefix = os.path.dirname(cfg)
    layouts = [(os.path.join(prefix, "lib", f"python{minor}{t}", "site-packages"), t == "t") for t in ("", "t")]
    present = [(site, threaded) for site, threaded in layouts if os.path.isdir(site)]
    if len(present) != 1:
        return None
    site, free_threaded = present[0]
    finder: dict[str, Any] = {}
    exec(FIND, finder)  # pickvariant's own finder, the same the interpreter runs (SCRIPT)
    installed = finder["found"](PROJECTS, [site])
    document = {"implementation": "cpython", "version": version, "free_threaded": free_threaded}
    return _checked({**document, "installed": installed, "site": site}, path, given_as, given_as)


def _is_file(folder: str, name: str) -> bool:
    return os.path.isfile(os.path.join(folder, name))


def _json(text: str) -> Any:
    try:
        return strictjson.loads(text)
    except ValueError:
        return None


def _kept(path: str, given_as: str, named: str, env: Mapping[str, str]) -> PythonEnvironment | None:
    """The interpreter's answer as it gave it before, where nothing it depends on changed (environment_cache)."""
    from pickvariant.machine import environment_cache

    data = environment_cache.lookup(path, env)
    if data is None:
        return None
    try:
        return _checked(data, path, given_as, named)
    except BadInput:
        return None


def _checked(data: Any, interpreter: str, given_as: str, named: str) -> PythonEnvironment:
    """The environment from what was found (the interpreter's JSON, or its files), each value checked."""
    try:
        version, free_threaded, installed = data["version"], data["free_threaded"], data["installed"]
    except (KeyError, TypeError):
        raise BadInput(f"{named}: what it printed is not the expected JSON") from None
    if data.get("implementation") != "cpython" or not isinstance(version, str) or not _PYTHON.fullmatch(version):
        raise BadInput(f"{named}: not a CPython 3 interpreter (PyTorch's wheels are built for CPython)")
    kept = {name: found for name in PROJECTS if (found := _found(installed, name)) is not None}
    return PythonEnvironment(
        interpreter=_real(data.get("executable"), interpreter),
        version=version,
        free_threaded=free_threaded is True,
        installed={name: kept[name][0] if name in kept else None for name in PROJECTS},
        given_as=given_as,
        locations={name: (site, dist_info) for name, (_, site, dist_info) in kept.items()},
        site=site if isinstance(site := data.get("site"), str) and os.path.isabs(site) else "",
    )


def _real(executable: object, named: str) -> str:
    """The executable the environment's interpreter says it is (`sys.executable`: a pyenv shim's real python), which
    pip and uv are then run with, else the one named."""
    stated = isinstance(executable, str) and os.path.isabs(executable) and executable.isprintable()
    if stated and os.path.isfile(str(executable)) and os.access(str(executable), os.X_OK):
        return str(executable)
    return named


def _found(installed: object, name: str) -> tuple[str, str, str] | None:
    """(version, site-packages, .dist-info name) of one project as the child said, each value checked."""
    entry = installed.get(name) if isinstance(installed, dict) else None
    if not isinstance(entry, dict):
        return None
    version, site, dist_info = entry.get("version"), entry.get("site"), entry.get("dist_info")
    if not (isinstance(version, str) and _VERSION.fullmatch(version) and isinstance(site, str)):
        return None
    if not (os.path.isabs(site) and isinstance(dist_info, str) and _DIST_INFO.fullmatch(dist_info)):
        return None
    return version, site, dist_info
