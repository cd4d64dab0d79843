"""The wheel facts file: read bounded, checked against its schema, and derived into the wheel catalog.

"Nothing guessed": a row becomes a build only where its SASS list is verified (V) or documented by PyTorch's
maintainers (D). An inferred (I) or unknown (U) list and a variant whose lists could not be read are left out, each
with why. A ROCm or XPU build (`gpu_builds`: gfx targets, AOT device targets) becomes one where its list is verified,
documented, or inferred (said as inferred, from what, wherever it is chosen); an unknown one is left out. A PTX
list that is not known is written as none: a build judged by its SASS alone can only be refused where it would have
run, never chosen where it would not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from pickvariant._base import strictjson
from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_regular
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant.sources.prebuilt import UNLABELLED_PLATFORMS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# As text: detect reads the catalog without importing pathlib (_base/files.py says why).
DATA_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "data")
FACTS = os.path.join(DATA_DIR, "wheel-facts.json")
CATALOG = os.path.join(DATA_DIR, "wheels.json")
SCHEMA = os.path.join(DATA_DIR, "wheel-facts.schema.json")
MAX_FACTS_BYTES = 4 * 1024 * 1024
TRUSTED = frozenset({"V", "D", "W"})
_STACKS = {"rocm": "ROCm", "xpu": "XPU"}
MARKS = {"V": "verified", "D": "documented", "W": "read from the wheel", "I": "only inferred", "U": "not known"}
SCHEMA_VERSION = 1


def read_facts(path: str | os.PathLike[str] = FACTS) -> Mapping[str, Any]:
    """The facts file, or BadInput naming it and its first bad field."""
    raw = read_regular(path, MAX_FACTS_BYTES, "wheel facts")
    try:
        data = strictjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise BadInput(f"wheel facts {path}: not JSON ({error})") from None
    return checked(data, str(path))


def checked(data: Any, name: str) -> Mapping[str, Any]:
    """Facts that hold to the schema and cite only sources they list; BadInput naming `name` otherwise."""
    try:
        validate(data, load_schema(SCHEMA))
    except SchemaError as error:
        raise BadInput(f"wheel facts {name}: {error}") from None
    unknown = sorted(_sources_used(data) - set(data["sources"]))
    if unknown:
        raise BadInput(f"wheel facts {name}: sources {', '.join(unknown)} are cited but not listed under sources")
    return data


def facts_digest(path: str | os.PathLike[str] = FACTS) -> str:
    """The shipped facts' sha256: a refreshed catalog records the facts it was derived from, and is set aside once
    pickvariant ships others."""
    import hashlib

    return hashlib.sha256(read_regular(path, MAX_FACTS_BYTES, "wheel facts")).hexdigest()


def refreshed_file(env: Mapping[str, str] | None = None) -> str:
    """Where `catalog wheels --refresh` keeps the catalog it derived (the shipped facts and what it read)."""
    from pickvariant._base.files import cache_folder, joined

    return joined(cache_folder(env), "wheels-refreshed.json")


def refreshed_path(env: Mapping[str, str] | None = None) -> Path:
    """refreshed_file as a Path, for writing it."""
    from pathlib import Path

    return Path(refreshed_file(env))


def derive(facts: Mapping[str, Any], refreshed: str | None = None, based_on: str | None = None) -> dict[str, Any]:
    """The wheel catalog: every build whose SASS is verified or documented, and every row left out with why."""
    floors = {entry["cuda_major"]: entry for entry in facts["driver_floors"]}
    builds: list[dict[str, Any]] = []
    left_out: list[dict[str, str]] = []
    for release in facts["releases"]:
        for row in release["builds"]:
            why = _left_out_why(row, floors)
            if why:
                left_out.append(_left_out(release["torch"], row["variant"], row["platform"], why))
            else:
                builds.append(_build(release, row, floors, facts["index_root"]))
        left_out += [
            _left_out(release["torch"], entry["variant"], entry["platform"], entry["why"])
            for entry in release["not_chosen"]
        ]
        left_out += [
            _left_out(release["torch"], entry["variant"], "every platform", entry["why"])
            for entry in release["unknown"]
        ]
        for row in release.get("gpu_builds", ()):
            if row["mark"] == "U" or row["targets"] is None:
                why = f"{_STACKS[row['family']]}: its targets are not known ({row['note']})"
                left_out.append(_left_out(release["torch"], row["variant"], row["platform"], why))
            else:
                builds.append(_gpu_build(release, row, facts["index_root"]))
    return {
        "$comment": "Generated by `pickvariant catalog wheels` from wheel-facts.json; do not edit.",
        "schema_version": SCHEMA_VERSION,
        "facts_compiled": facts["compiled"],
        "index_root": facts["index_root"],
        "sources": facts["sources"],
        "builds": builds,
        "left_out": left_out,
        "companions": {release["torch"]: release["companions"] for release in facts["releases"]},
        **({"refreshed": refreshed, "based_on": based_on} if refreshed else {}),
    }


def render(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=1) + "\n"


def _left_out_why(row: Mapping[str, Any], floors: Mapping[str, Any]) -> str | None:
    if row["sass_confidence"] not in TRUSTED or row["sass"] is None:
        said = f"its SASS list is {MARKS[row['sass_confidence']]}"
        return f"{said} ({row['note']})" if row["note"] else said
    if row["cuda"] is not None and row["cuda"].split(".")[0] not in floors:
        return f"no driver floor is known for CUDA {row['cuda']}"
    return None


def _build(release: Mapping[str, Any], row: Mapping[str, Any], floors: Mapping[str, Any], root: str) -> dict[str, Any]:
    variant, platform = row["variant"], row["platform"]
    floor = floors[row["cuda"].split(".")[0]] if row["cuda"] else None
    trusted_ptx = row["ptx_confidence"] in TRUSTED and row["ptx"] is not None
    return {
        "torch": release["torch"],
        "variant": variant,
        # As `torch.__version__` says it: the macOS wheels carry no local label (sources/prebuilt.py).
        "local": release["torch"] if platform in UNLABELLED_PLATFORMS else f"{release['torch']}+{variant}",
        "platform": platform,
        "python": release["python"],
        "sass": row["sass"],
        "ptx": row["ptx"] if trusted_ptx else [],
        "ptx_known": trusted_ptx,
        "cuda": row["cuda"],
        "min_driver": floor["min_driver"] if floor else None,
        "index_url": f"{root}/{variant}",
        "pypi": release["pypi"][platform] == variant,
        "confidence": {"sass": row["sass_confidence"], "ptx": row["ptx_confidence"]},
        "sources": sorted({*row["sources"], *(floor["sources"] if floor else ())}),
        "note": row["note"],
    }


def _gpu_build(release: Mapping[str, Any], row: Mapping[str, Any], root: str) -> dict[str, Any]:
    """A ROCm or XPU build: no CUDA code, its targets as the facts give them, said as inferred where they are. Its
    Pythons are the release's, free-threaded ones excepted (no such ROCm or XPU wheel was seen)."""
    variant, mark = row["variant"], row["mark"]
    inferred = "" if mark in TRUSTED else f"inferred from {row['note']} ({', '.join(row['sources'])})"
    return {
        "torch": release["torch"],
        "variant": variant,
        "local": f"{release['torch']}+{variant}",
        "platform": row["platform"],
        "python": [tag for tag in release["python"] if not tag.endswith("t")],
        "sass": [],
        "ptx": [],
        "ptx_known": True,
        "cuda": None,
        "min_driver": None,
        "index_url": f"{root}/{variant}",
        "pypi": False,
        "confidence": {"sass": mark, "ptx": mark},
        "sources": sorted(row["sources"]),
        "note": row["note"],
        "gpu_code": {"family": row["family"], "targets": row["targets"], "inferred": inferred},
    }


def _left_out(torch: str, variant: str, platform: str, why: str) -> dict[str, str]:
    return {"torch": torch, "variant": variant, "platform": platform, "why": why}


def _sources_used(data: Mapping[str, Any]) -> set[str]:
    used = {source for floor in data["driver_floors"] for source in floor["sources"]}
    for release in data["releases"]:
        used.update(release["pypi_sources"])
        for row in (*release["builds"], *release["not_chosen"], *release.get("gpu_builds", ())):
            used.update(row["sources"])
        for pair in release["companions"].values():
            if pair is not None and len(pair) > 2:
                used.update(pair[2]["sources"])
    return used
