"""PyTorch's own wheels as the registry names them: prebuilt builds on PyPI and PyTorch's indexes."""

from __future__ import annotations

from pickvariant.sources.nouns import WHEELS
from pickvariant.sources.registry import Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pickvariant.sources.prebuilt import PrebuiltCatalog


def _catalog() -> PrebuiltCatalog:
    from pickvariant.sources.wheels.catalog.load import load_wheel_catalog

    return load_wheel_catalog()


# Its parts, as a third party names its own (a prebuilt source's pipeline, installed with pip or uv).
PARTS = (
    ("pipeline", "pickvariant.pipelines.prebuilt:PIPELINE"),
    ("installation", "pickvariant.commands.installation:prebuilt_installation"),
    ("packaging", "pickvariant.install.pip_command:PACKAGING"),
)
COMMANDS = (("catalog wheels", "pickvariant.sources.wheels.commandline:catalog_wheels"),)  # the command only it has
SOURCE = Source(
    name="wheels",
    pipeline="prebuilt",
    builds=_catalog,
    publisher="PyTorch",
    nouns=WHEELS,
    parts=PARTS,
    commands=COMMANDS,
)
