"""What the companions asked for (--with) do to the wheel answer: the first candidate whose torch release has each of
them paired, and, where they held the set back, that said beside the sentence that chose it."""

from __future__ import annotations

from collections.abc import Sequence

from pickvariant._base.records import replace
from pickvariant.rules.decision import PrebuiltDecision
from pickvariant.rules.wording import prebuilt as said
from pickvariant.sources.nouns import Nouns
from pickvariant.sources.prebuilt import PairedRelease, PrebuiltCatalog
from pickvariant.sources.runs_on import Build


def with_companions(
    candidates: Sequence[Build],
    wheels: PrebuiltCatalog,
    projects: tuple[str, ...],
    from_pypi: bool,
    python_tag: str | None = None,
) -> tuple[Build | None, tuple[PairedRelease, ...], dict[Build, tuple[str, ...]]]:
    """The first candidate whose torch release has every companion asked for paired, and those passed over (with
    the projects each lacked). A pairing true of PyPI's builds only counts for PyPI's build installed from PyPI, and
    a companion counts only where it has a wheel for the Python stated (and, none stated, for one torch has)."""
    passed_over: dict[Build, tuple[str, ...]] = {}
    for build in candidates:
        pairs = {project: wheels.companion(build.torch, project) for project in projects}
        pairs = {
            project: pair if pair is None or _counts(pair, build, from_pypi, python_tag) else None
            for project, pair in pairs.items()
        }
        missing = tuple(project for project, pair in pairs.items() if pair is None)
        if not missing:
            return build, tuple(pair for pair in pairs.values() if pair is not None), passed_over
        passed_over[build] = missing
    return None, (), passed_over


def _counts(pair: PairedRelease, build: Build, from_pypi: bool, python_tag: str | None) -> bool:
    if pair.pypi_only and not (from_pypi and build.default_index):
        return False
    return pair.serves(python_tag) and (not pair.python or bool(set(pair.python) & set(build.python)))


def set_python(build: Build, pairs: Sequence[PairedRelease]) -> str:
    """The CPython tag a set is shown for where no Python is stated: the newest one torch and every companion have
    wheels for, a free-threaded one only where no other is."""
    tags = [tag for tag in build.python if all(pair.serves(tag) for pair in pairs)] or list(build.python)
    return next((tag for tag in reversed(tags) if not tag.endswith("t")), tags[-1])


def limited_by_companions(
    decision: PrebuiltDecision, chosen: Build, passed_over: dict[Build, tuple[str, ...]], nouns: Nouns
) -> PrebuiltDecision:
    """Where the companions asked for held the set back (a newer torch runs here, and none of theirs is paired with
    it), that is said beside the sentence that chose it, naming the torch alone would be: never "the newest torch
    that runs here" unqualified."""
    newer = next((build for build in passed_over if build.torch != chosen.torch), None)
    if newer is None:
        return decision
    sentence = said.held_back(newer.label, passed_over[newer], decision.detail.from_pypi, nouns)
    reasons, newest = list(decision.reasons), said.newest(nouns)
    at = next((n for n, reason in enumerate(reasons) if newest in reason), None)
    if at is None:
        return replace(decision, reasons=(*reasons, sentence))
    reasons[at] = reasons[at].replace(newest, said.newest_paired(passed_over[newer], nouns), 1)
    return replace(decision, reasons=(*reasons[: at + 1], sentence, *reasons[at + 1 :]))


def lacking_python(
    passed_over: dict[Build, tuple[str, ...]], wheels: PrebuiltCatalog, python_tag: str | None
) -> tuple[str, ...]:
    """Of the companions that held the set back, those paired with the newest torch passed over but with no wheel for
    the Python stated, each said with the Pythons it has: the pairing exists, the Python is what it lacks."""
    newest = next(iter(passed_over), None)
    if newest is None or python_tag is None:
        return ()
    pairs = [wheels.companion(newest.torch, project) for project in passed_over[newest]]
    return tuple(
        said.companion_lacks_python(pair.project, pair.version, newest.torch, python_tag, pair.python, wheels.nouns)
        for pair in pairs
        if pair is not None and not pair.serves(python_tag)
    )


def short_of_python(
    passed_over: dict[Build, tuple[str, ...]], wheels: PrebuiltCatalog, python_tag: str | None
) -> dict[Build, str]:
    """The builds passed over only for the Python stated: every companion they lacked is paired with their torch but
    has no wheel for that Python. Their refusal names the Python, not a missing pairing."""
    if python_tag is None:
        return {}
    short: dict[Build, str] = {}
    for build, missing in passed_over.items():
        pairs = [wheels.companion(build.torch, project) for project in missing]
        if pairs and all(pair is not None and not pair.serves(python_tag) for pair in pairs):
            short[build] = python_tag
    return short
