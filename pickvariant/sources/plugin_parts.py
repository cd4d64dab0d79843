"""A plug-in's code as pickvariant calls it: what fails there is named as the plug-in's, in one line.

pickvariant runs a plug-in's code as the user installed it. What it takes back from that code is checked before
anything reads it: its catalog (sources/plugin_values.py), and the words of its packaging part, which become a
command shown to be pasted, a plan's per-node command and a document's pins. A failure there is one line naming the
plug-in (exit 1), never a traceback from someone else's code, never a command of words nobody can see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pickvariant._base.errors import OperationFailed, PickVariantError
from pickvariant._base.text import visible
from pickvariant.sources.plugin_values import misvalued
from pickvariant.sources.prebuilt import PrebuiltCatalog

MOST_WORDS = 256  # words in one command or one list of pins
MOST_CHARACTERS = 4096  # characters in one word (an index URL with its credentials fits)


def failed(name: str, what: str, error: Exception) -> OperationFailed:
    """A plug-in's code failed while pickvariant read `what` of it: one line naming it, its outside text shown safe."""
    said = f"{type(error).__name__}: {str(error)[:200]}"
    return OperationFailed(f"source plug-in {name!r}: reading {visible(what[:200])} failed: {visible(said)}")


def catalog_of(name: str, builds: Callable[[], object]) -> PrebuiltCatalog:
    """A plug-in's catalog as its code reads it: pickvariant's own errors pass (a plug-in may refuse its input with
    BadInput); any other error, a value that is not a PrebuiltCatalog, or one holding a value of a shape the rules
    do not read (sources/plugin_values.py), is one line naming the plug-in."""
    try:
        read = builds()
    except PickVariantError:
        raise
    except Exception as error:  # any error of a third party's code is that plug-in's failure
        raise failed(name, "its catalog", error) from None
    if not isinstance(read, PrebuiltCatalog):
        raise OperationFailed(
            f"source plug-in {name!r}: its catalog is {type(read).__name__}, not a PrebuiltCatalog "
            "(pickvariant.sources.prebuilt)"
        )
    wrong = misvalued(read)
    if wrong is not None:
        raise OperationFailed(f"source plug-in {name!r}: its catalog is refused: {visible(wrong)}")
    return read


class CheckedPackaging:
    """A plug-in's packaging part (`pins`, `command`), each answer a list of printable words or one line naming it."""

    def __init__(self, name: str, inner: Any) -> None:
        self.name, self.inner = name, inner

    def pins(self, *args: Any) -> list[str]:
        return self._words("pins", lambda: self.inner.pins(*args))

    def command(self, *args: Any) -> list[str]:
        return self._words("command", lambda: self.inner.command(*args))

    def _words(self, what: str, call: Callable[[], object]) -> list[str]:
        try:
            words = call()
        except PickVariantError:
            raise  # the plug-in's own refusal, said as it says it
        except Exception as error:  # any error of a third party's code is that plug-in's failure
            raise failed(self.name, f"its packaging part's {what}", error) from None
        if not (isinstance(words, list) and 0 < len(words) <= MOST_WORDS and all(_word(word) for word in words)):
            raise OperationFailed(
                f"source plug-in {self.name!r}: its packaging part's {what} gave {type(words).__name__}, not a list "
                "of printable words"
            )
        return [str(word) for word in words]


def _word(word: object) -> bool:
    return isinstance(word, str) and 0 < len(word) <= MOST_CHARACTERS and word.isprintable()
