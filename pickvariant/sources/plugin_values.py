"""What pickvariant takes of a plug-in's catalog: values of the shapes the rules and the terminal read, nothing else.

A plug-in's code may read its catalog from a channel or an index nobody vouches for. Before the rules read a build,
every value the catalog holds must have the shape they expect: a release of numbers, CPython tags, a CUDA or ROCm
line, compute capabilities and driver versions as their own parsers give them, gfx targets and device names as the
wheel catalog's schema writes them, names of letters and digits, text without control characters. The first value
of any other shape is named (its build, its field) and the catalog is refused whole: a wrong build is worse than
none. Whitelists only: a shape not listed here is refused, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pickvariant._base.versions import ComputeCapability, DriverVersion, parse_compute_capability, parse_driver_version
from pickvariant.sources.accelerator import Cuda, Rocm, Xpu
from pickvariant.sources.prebuilt import PLATFORMS, LeftOut, PairedRelease, PrebuiltCatalog
from pickvariant.sources.runs_on import Build

# The wheel catalog's own patterns (sources/wheels/catalog/data/wheel-catalog.schema.json), a release of two parts
# beside its three, and a name (an index, a channel's variant, a platform, a project) of letters, digits and ._+-.
RELEASE = r"[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?"
LINE = r"[0-9]{1,2}\.[0-9]{1,2}"
CPYTHON = r"cp3[0-9]{1,2}t?"
TARGET = r"gfx[0-9]{1,2}[0-9a-f]{2}|[a-z][a-z0-9]{1,7}(-[a-z0-9]{1,4})?"
NAME = r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}"
URL = r"https?://[!-~]{1,512}"
MOST = 4096  # builds, rows, releases or tags in one list: the wheel catalog's own bound on its builds


def misvalued(catalog: PrebuiltCatalog) -> str | None:
    """The first value of `catalog` outside the shapes above, said with where it is; None where every one fits."""
    shaped = (
        isinstance(catalog.builds, tuple)
        and all(isinstance(build, Build) for build in catalog.builds)
        and isinstance(catalog.left_out, tuple)
        and isinstance(catalog.companions, Mapping)
        and isinstance(catalog.sources, Mapping)
    )
    if not shaped:
        return "builds and left_out: tuples of Build and LeftOut; companions and sources: mappings"
    if not _fits(URL, catalog.index_root):
        return f"index_root {catalog.index_root!r:.80}: an http(s) address"
    if not (_text(catalog.facts_compiled, 40) and catalog.facts_compiled):
        return f"facts_compiled {catalog.facts_compiled!r:.40}: text (when or from what its facts were read)"
    if not _texts(tuple(catalog.sources.keys())) or not _texts(tuple(catalog.sources.values())):
        return "sources: a mapping of text to text"
    if not (catalog.refreshed is None or _text(catalog.refreshed, 40)) or not (
        catalog.based_on is None or _fits(r"[0-9a-f]{64}", catalog.based_on)
    ):
        return "refreshed (text) and based_on (a sha256): each, or none"
    platforms = catalog.platforms
    if not isinstance(platforms, Mapping) or not all(
        key in PLATFORMS and _fits(NAME, name) for key, name in platforms.items()
    ):
        return "platforms: its names of the (os, arch) machine facts report"
    for lists in (catalog.builds, catalog.left_out, catalog.companions):
        if len(lists) > MOST:
            return f"more than {MOST} builds, rows or releases"
    for build in catalog.builds:
        wrong = _build_wrong(build)
        if wrong:
            return f"build {build.label!r:.80}: {wrong}"
    for row in catalog.left_out:
        if not isinstance(row, LeftOut) or not _row_fits(row):
            return f"left_out row {row!r:.80}: a LeftOut of a release, a name, a platform and text"
    return _companions_wrong(catalog.companions)


def _build_wrong(build: Build) -> str | None:
    """What of one build is outside the shapes, or None."""
    checks = (
        ("label", _text(build.label, 200) and bool(build.label)),
        ("torch", _fits(RELEASE, build.torch)),
        ("os and arch", (build.os, build.arch) in PLATFORMS),
        ("platform", _fits(NAME, build.platform)),
        ("python", _all(CPYTHON, build.python) and bool(build.python)),
        ("cpu_isa", build.cpu_isa is None),  # a prebuilt build requires none: ATen dispatches at run time
        ("index", _fits(NAME, build.index)),
        ("default_index", isinstance(build.default_index, bool)),
        ("sources", _texts(build.sources)),
        ("note", _text(build.note, 600)),
        ("source", _fits(NAME, build.source)),
    )
    wrong = next((field for field, fits in checks if not fits), None)
    if wrong is not None:
        return f"{wrong} {getattr(build, wrong.partition(' ')[0])!r:.80}: not of the shape pickvariant reads"
    return _code_wrong(build.code)


def _code_wrong(code: object) -> str | None:
    """Its GPU code: of one of the families the rules judge, each value of its shape. Code of another family is
    left out where the catalog is read (prebuilt.judged_only), so only its family's name is read of it."""
    if code is None:
        return None
    if isinstance(code, Cuda):
        listed = isinstance(code.sass, tuple) and isinstance(code.ptx, tuple) and len(code.sass + code.ptx) <= MOST
        capabilities = (*code.sass, *code.ptx) if listed else ()
        fits = listed and _fits(LINE, code.line)
        fits = fits and all(_capability_fits(capability) for capability in capabilities)
        fits = fits and (code.min_driver is None or _driver_fits(code.min_driver))
        return None if fits and isinstance(code.ptx_known, bool) else "its CUDA code: a line, capabilities, a driver"
    if isinstance(code, Rocm):
        fits = _fits(LINE, code.stack) and _all(TARGET, code.targets) and _text(code.inferred, 600)
        return None if fits else "its ROCm code: a release and gfx targets"
    if isinstance(code, Xpu):
        fits = _all(TARGET, code.aot) and isinstance(code.jit, bool) and _text(code.inferred, 600)
        return None if fits else "its XPU code: device targets"
    return None if _fits(NAME, getattr(code, "family", "")) else "its GPU code names no family"


def _companions_wrong(companions: Mapping[str, Mapping[str, PairedRelease | None]]) -> str | None:
    for torch, projects in companions.items():
        if not _fits(RELEASE, torch) or not isinstance(projects, Mapping):
            return f"companions of {torch!r:.40}: a release, and its projects"
        for project, pair in projects.items():
            if not _fits(NAME, project) or not (pair is None or _pair_fits(pair)):
                return f"companion {project!r:.40} of torch {torch}: a PairedRelease of a release and CPython tags"
    return None


def _pair_fits(pair: object) -> bool:
    return (
        isinstance(pair, PairedRelease)
        and _fits(NAME, pair.project)
        and _fits(RELEASE, pair.version)
        and (pair.requires is None or _text(pair.requires, 40))
        and isinstance(pair.pypi_only, bool)
        and _texts(pair.sources)
        and _all(CPYTHON, pair.python)
    )


def _row_fits(row: LeftOut) -> bool:
    platform = row.platform == "every platform" or _fits(NAME, row.platform)
    return _fits(RELEASE, row.torch) and _fits(NAME, row.variant) and platform and _text(row.why, 600)


def _capability_fits(value: object) -> bool:
    """A compute capability as its parser makes it of its own text: a record built any other way is not taken."""
    try:
        return isinstance(value, ComputeCapability) and parse_compute_capability(str(value)) == value
    except Exception:  # the parser's refusal, or a record whose text cannot be made, whatever it raises
        return False


def _driver_fits(value: object) -> bool:
    """A driver version as its parser makes it of its own text."""
    try:
        return isinstance(value, DriverVersion) and parse_driver_version(value.text) == value
    except Exception:  # the parser's refusal, whatever it raises
        return False


def _fits(pattern: str, value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def _all(pattern: str, values: object) -> bool:
    return isinstance(values, tuple) and len(values) <= MOST and all(_fits(pattern, value) for value in values)


def _text(value: object, most: int) -> bool:
    """Text a terminal shows as it is: printable, on one line, at most `most` characters."""
    return isinstance(value, str) and len(value) <= most and value.isprintable()


def _texts(values: object) -> bool:
    return isinstance(values, tuple) and len(values) <= MOST and all(_text(value, 600) for value in values)
