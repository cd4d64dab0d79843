"""The script that reads a Python environment, run inside its interpreter (`python -E -S -c SCRIPT`) or, for this
process's own interpreter and a virtual environment whose files say enough, here (its `FIND` and `READ` parts).

It imports only the standard library and finds the folders `site` would put on sys.path, in its order, without its
side effects, and each distribution's version in at most 64 KiB of its METADATA; torch is never imported.
"""

from __future__ import annotations

# Each project's .dist-info in the folders given, in their order, and its version from at most 64 KiB of METADATA:
# run inside the interpreter (the script below) and here alike, where a virtual environment's files say enough. Each
# folder is listed once for every project (a conda or CUDA environment's site-packages holds hundreds of entries).
FIND = r"""
import os
def normal(name):
    out = ""
    for char in name.lower():
        out += ("" if out.endswith("_") else "_") if char in "-_." else char
    return out
def version_in(head):
    for line in head.split("\n"):
        value = line[8:].lstrip(" ") if line.startswith("Version:") else ""
        if value[:1] and not value[:1].isspace():
            return value.split(None, 1)[0]
    return None
def found(names, sites):
    wanted = {normal(name): name for name in names}
    result = dict.fromkeys(names)
    for place in sites:
        try:
            entries = sorted(os.listdir(place))
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith(".dist-info"):
                continue
            name = wanted.get(normal(entry.split("-", 1)[0]))
            if name is None or result[name] is not None:
                continue
            try:
                with open(os.path.join(place, entry, "METADATA"), "rb") as stream:
                    version = version_in(stream.read(65536).decode("utf-8", "replace"))
            except OSError:
                continue
            if version:
                result[name] = {"version": version, "site": place, "dist_info": entry}
    return result
"""
# Run as `python -E -S -c SCRIPT torch torchvision torchaudio`: no PYTHON* variable read, and without `site`, so no
# `.pth` file of the environment runs. It imports only the standard library and finds the folders `site` would put on
# sys.path, in its order, without its side effects: a virtual environment's own (found as site.venv() finds it, from
# the pyvenv.cfg beside or above the executable, read with the venv scheme: Debian's default scheme would name
# local/.../dist-packages), with the system's where it includes them; else the user's site (where enabled) and the
# system's (site.getsitepackages(), Debian's dist-packages included). Each distribution's .dist-info is looked for
# there, and at most 64 KiB of its METADATA read for the version: a METADATA of hundreds of MB costs nothing.
# Neither re nor json is imported (23 ms together, re's 16 of them, of a 45-50 ms run on a 2-core VM): names are normalised as PEP 503 says
# and Version: read as `^Version: *(\S+)` (re.M) would, pyvenv.cfg's lines split as site.venv() splits them, and the
# answer written with CPython's own JSON string encoder (_json's, as json.dumps(ensure_ascii=True) writes strings).
READ = (
    """\
import os, site, sys, sysconfig
def read(projects):
    here = os.path.dirname(os.path.abspath(sys.executable))
    cfg = next((os.path.join(d, "pyvenv.cfg") for d in (here, os.path.dirname(here))
                if os.path.isfile(os.path.join(d, "pyvenv.cfg"))), None)
    def own(prefix, scheme):
        paths = sysconfig.get_paths(scheme=scheme, vars={"base": prefix, "platbase": prefix})
        return [paths["purelib"], paths["platlib"]]
    if cfg:
        system = False
        with open(cfg, encoding="utf-8", errors="replace") as stream:
            for line in stream.read(65536).splitlines():
                key, equals, value = line.partition("=")
                if equals and key.strip().lower() == "include-system-site-packages":
                    system = value.strip().lower() == "true"
        schemes = sysconfig.get_scheme_names()
        sites = own(os.path.dirname(cfg), "venv" if "venv" in schemes else "posix_prefix")
        target = sites[0]
        sites += site.getsitepackages() if system else []
    else:
        user = [site.getusersitepackages()] if site.check_enableusersite() else []
        paths = sysconfig.get_paths()
        sites = user + [paths["purelib"], paths["platlib"]] + site.getsitepackages()
        # Where pip writes: the system's site-packages where this user may, else the user's own.
        target = paths["purelib"] if os.access(paths["purelib"], os.W_OK) or not user else user[0]
    # What this answer depends on, as it stands before the folders are read: each folder's (and pyvenv.cfg's) time
    # of change, "" where it is not there. A cached answer holds only while each is the same (environment_cache).
    watch = {}
    for place in [os.path.join(d, "pyvenv.cfg") for d in (here, os.path.dirname(here))] + sites:
        try:
            watch[place] = str(os.stat(place).st_mtime_ns)
        except OSError:
            watch[place] = ""
    sites = [s for s in dict.fromkeys(sites) if os.path.isdir(s)] or sites[:1]
    return {
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "watch": watch,
        "version": ".".join(str(part) for part in sys.version_info[:3]),
        "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "installed": found(projects, sites),
        "site": target,
    }
"""
    + FIND
)
# The answer as JSON, written with CPython's own string encoder (what json.dumps(ensure_ascii=True) writes strings with).
WRITE = """
try:
    from _json import encode_basestring_ascii as quoted
except ImportError:
    from json.encoder import encode_basestring_ascii as quoted
def dumped(value):
    if isinstance(value, dict):
        return "{" + ", ".join(quoted(key) + ": " + dumped(item) for key, item in value.items()) + "}"
    if isinstance(value, str):
        return quoted(value)
    return "null" if value is None else "true" if value else "false"
"""
# Run in the directory pickvariant was started in (where a pyenv shim picks the interpreter its `.python-version`
# names, as the user's shell would), its first line takes that directory off sys.path before anything is imported
# from it: `import sys` is built in, and nothing else is imported before.
SAFE_PATH = 'import sys\nsys.path[:] = [entry for entry in sys.path if entry not in ("", ".")]\n'
SCRIPT = SAFE_PATH + READ + WRITE + "print(dumped(read(sys.argv[1:])))\n"
