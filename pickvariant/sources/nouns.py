"""What a source of prebuilt builds calls its builds and where they are published: its own nouns, said by its
sentences ("PyTorch's cu126 index", "no compatible wheel"; a conda channel's "no compatible package")."""

from __future__ import annotations

from pickvariant._base.records import keyword_record


@keyword_record
class Nouns:
    build: str  # one of its builds, as a file is installed: "wheel", "package"
    builds: str  # more than one
    where: str  # what a build is published on: "index", "channel"
    wheres: str  # more than one
    installer: str  # what installs them, as its sentences name it: "pip or uv"


# PyTorch's wheels' (and any source of wheels that pip or uv installs from an index).
WHEELS = Nouns(build="wheel", builds="wheels", where="index", wheres="indexes", installer="pip or uv")
