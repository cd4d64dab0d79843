"""The front door: a README a newcomer reads on a screen or two, and the docs tree it points into, whole."""

from __future__ import annotations

import re

from conftest import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _links(path):
    return [target for target in LINK.findall(path.read_text(encoding="utf-8")) if "://" not in target]


def test_the_readme_is_short_and_says_the_two_commands_and_what_detect_prints() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "pip install . && pickvariant detect" in text and "pip install -e '.[test]' && python -m pytest" in text
    assert "Recommendation: pytorch-python313-" in text  # detect's text answer, as a person sees it
    for heading in ("## Commands", "## Exit codes"):
        assert heading in text


def test_the_docs_are_in_the_four_shapes_and_every_relative_link_resolves() -> None:
    docs = REPO / "docs"
    for kind in ("tutorial", "how-to", "reference", "explanation"):
        assert any((docs / kind).glob("*.md")), kind
    pages = [REPO / "README.md", REPO / "ARCHITECTURE.md", *docs.rglob("*.md")]
    broken = [
        f"{page.relative_to(REPO)} -> {target}"
        for page in pages
        for target in _links(page)
        if not (page.parent / target).exists()
    ]
    assert broken == []
    linked = {(REPO / target).resolve() for target in _links(REPO / "README.md")}
    assert {page.resolve() for page in docs.rglob("*.md") if page.name != "index.md"} <= linked


def test_every_row_of_the_trust_model_names_tests_that_exist() -> None:
    """docs/reference/trust.md: each input pickvariant reads names the tests that hold what its row promises."""
    rows = [
        line for line in (REPO / "docs" / "reference" / "trust.md").read_text().splitlines() if line.startswith("| ")
    ]
    inputs = rows[1:]  # the header row first; the |---| row does not start with "| "
    assert len(inputs) >= 10
    for row in inputs:
        named = re.findall(r"`(tests/[a-z_]+\.py)`", row)
        assert named and all((REPO / name).is_file() for name in named), row[:120]


_NAMED_PATH = re.compile(r"`([A-Za-z_./-]+/[A-Za-z_.-]+\.(?:py|json|toml|md))`")


def _missing_paths(text: str) -> list[str]:
    """Each file a map names (`rules/compat.py`, `sources/data/hardware.json`) that is in neither the package nor
    the checkout."""
    named = set(_NAMED_PATH.findall(text))
    return sorted(p for p in named if not (REPO / "pickvariant" / p).exists() and not (REPO / p).exists())


def test_the_architecture_is_a_one_screen_map_and_names_only_files_that_exist() -> None:
    """Issue 71: ARCHITECTURE.md fits a screen (lines of 120 characters at most); it, and the rule table in
    rules/__init__.py's docstring, name only files that exist."""
    import pickvariant.rules

    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 60 and max(len(line) for line in text.splitlines()) <= 120
    table = pickvariant.rules.__doc__ or ""
    assert table.count("\n- ") >= 40  # every rule has its line
    assert _missing_paths(text) == [] and _missing_paths(table) == []
