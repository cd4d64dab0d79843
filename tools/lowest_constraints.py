"""Print a pip constraints file that holds every dependency pyproject.toml names (and the test extras) at the
lowest version it allows: `python tools/lowest_constraints.py > lowest.txt; pip install -c lowest.txt -e '.[test]'`.

CI installs this beside the newest releases and runs a fast part of the suite on it (.ci/run), so a lower
bound the code no longer works with fails there rather than on a user's machine. Only `>=` bounds are read:
a requirement without one has no lowest version to test, and is reported on stderr.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def lowest(pyproject: Path, extras: tuple[str, ...] = ("test",)) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    texts = list(project.get("dependencies", []))
    for extra in extras:
        texts += project.get("optional-dependencies", {}).get(extra, [])
    pins: dict[str, str] = {}
    for text in texts:
        requirement = Requirement(text)
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if not floors:
            print(f"{requirement.name}: no lower bound, not pinned", file=sys.stderr)
            continue
        pins[canonicalize_name(requirement.name)] = floors[0]
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(lowest(root / "pyproject.toml")))
