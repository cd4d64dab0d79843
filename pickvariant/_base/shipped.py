"""Where the files pickvariant ships sit: at the top of a checkout (the design card's `catalog.json`, `recipes/`), and
inside the package in an installed wheel (hatch `force-include` puts them there, pyproject.toml).

A checkout and a wheel read the same bytes: the wheel's are copies the build made of the checkout's files.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
CHECKOUT = PACKAGE.parent


def shipped(in_package: str, at_top: str) -> Path:
    """The packaged copy where there is one (an installed wheel), else the checkout's file at the top."""
    packaged = PACKAGE / in_package
    return packaged if packaged.exists() else CHECKOUT / at_top
