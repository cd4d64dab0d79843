"""The companions beside a catalog (torchvision, torchaudio, vLLM recipes): read only when a command asks for them.

`catalog sync REPO [COMPANION…] -o CATALOG` writes them beside CATALOG (`catalog.json` ->
`catalog.companions.json`), so that `detect` without `--with` never reads or parses them: the
shipped companions double the catalog's size. They are checked against their schema and against the
catalog they sit beside (the same hardware facts; an identical torch must be a variant of it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.memo import per_object
from pickvariant._base.records import record
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant._base.strictjson import load_file
from pickvariant._base.urls import public_url
from pickvariant.sources.build import Catalog, Companion, Source, axes_of
from pickvariant.sources.flox.recipes.rows import DATA_DIR, HARDWARE_KEY, check_hardware

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

SCHEMA = Path(DATA_DIR) / "companions.schema.json"


def companions_path(catalog_path: Path) -> Path:
    """Where a catalog's companions are: beside it, its stem + ".companions.json"."""
    return catalog_path.with_name(catalog_path.stem + ".companions.json")


@record
class Stack:
    """A catalog's companions and the repositories they were read from."""

    sources: tuple[Source, ...]
    companions: tuple[Companion, ...]
    path: Path | None  # None: the catalog has no companions file

    def of_project(self, project: str) -> tuple[Companion, ...]:
        return tuple(companion for companion in self.companions if companion.project == project)


@per_object
def load_stack(catalog: Catalog) -> Stack:
    """The companions beside `catalog` (none when it has no companions file), read once per catalog."""
    path = companions_path(catalog.path)
    if not path.exists():
        return Stack((), (), None)
    data = load_file(path, "companions")
    try:
        validate(data, load_schema(SCHEMA))
    except SchemaError as error:
        raise BadInput(f"companions {path}: {error}") from None
    if data["catalog_source"]["commit"] != catalog.source.commit:
        raise BadInput(
            f"companions {path} were synced with {data['catalog_source']['repo']} at {data['catalog_source']['commit'][:12]}, "
            f"the catalog beside them is at {catalog.source.commit[:12]}: sync both again"
        )
    trusted = {
        public_url(entry["repo"])
        for entry in [data["catalog_source"], *data["companion_sources"]]
        if entry.get("trusted_by_user")
    }
    try:
        rows = checked_rows(data["companions"], catalog, trusted)
    except SchemaError as error:
        raise BadInput(f"companions {path}: {error}") from None
    return Stack(
        tuple(Source(public_url(entry["repo"]), entry["commit"], entry["date"]) for entry in data["companion_sources"]),
        rows,
        path,
    )


def checked_rows(
    rows: Sequence[Mapping[str, Any]], catalog: Catalog, trusted: Collection[str] = ()
) -> tuple[Companion, ...]:
    """The companion rows, each checked as a variant's hardware is, an identical one against the variant it imports;
    those of a repository in `trusted` (the user trusted its recipes whole) say so."""
    checked: set[tuple[Any, ...]] = set()
    seen: set[tuple[str, str, str]] = set()
    variants = {(v.branch, v.package): v for v in catalog.variants}
    for index, row in enumerate(rows):
        where = f"companions[{index}]"
        if (key := HARDWARE_KEY(row)) not in checked:
            check_hardware(where, row, catalog.hardware)
            checked.add(key)
        identity = (row["repo"], row["branch"], row["package"])
        if identity in seen:
            raise SchemaError(f"{where}.package", f"duplicate {row['package']!r} on {row['repo']} {row['branch']}")
        seen.add(identity)
        if not row["package"].startswith(row["project"] + "-"):
            raise SchemaError(f"{where}.package", f"{row['package']!r} is not a {row['project']} package")
        if (row["torch_relation"] == "unknown") != (row["torch"] is None):
            raise SchemaError(f"{where}.torch", "a torch is known exactly when its relation is not unknown")
        if row["torch_relation"] == "identical":
            own = variants.get((row["branch"], row["torch_of"] or ""))
            if own is None or own.torch != row["torch"] or axes_of(own) != axes_of(row):
                raise SchemaError(
                    f"{where}.torch_of",
                    f"{row['torch_of']!r} is no variant of branch {row['branch']} with this companion's torch and axes",
                )
        elif row["torch_of"] is not None:
            raise SchemaError(f"{where}.torch_of", "only an identical torch names the variant it is")
    # A companions file written by hand (or by an older sync) may hold credentials in an address: never shown.
    return tuple(
        Companion.from_row(
            {**row, "repo": public_url(row["repo"]), "trusted_by_user": public_url(row["repo"]) in trusted}
        )
        for row in rows
    )
