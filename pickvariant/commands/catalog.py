"""`pickvariant catalog sync`: the catalog (and its companions) read from the build repository and its companion
repositories, and what to print, write or check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant.sources.flox import sync as syncer
from pickvariant.sources.flox import sync_files
from pickvariant.sources.flox.sync import SyncResult


@keyword_record
class SyncOptions:
    repos: tuple[str, ...]
    output: Path | None = None
    check: bool = False
    source_urls: tuple[str, ...] = ()
    force: bool = False


@keyword_record
class Synced:
    """What sync found (the summary for stderr), and how to deliver it: printed, written or checked."""

    result: SyncResult
    options: SyncOptions
    summary: tuple[str, ...]

    def delivered(self) -> Iterator[tuple[str, bool]]:
        """(text, for stderr) to show while the catalog is printed, written or checked; writing happens here."""
        return sync_files.deliver(self.result, self.options.output, self.options.check, self.options.force)


def synced(options: SyncOptions) -> Synced:
    if options.check and options.output is None:
        raise BadInput("--check compares against a file: give it with -o FILE")
    if len(options.source_urls) > len(options.repos):
        raise BadInput(
            f"--source-url is given {len(options.source_urls)} times for {len(options.repos)} repositories: give it at "
            "most once per REPO, in their order"
        )
    urls = options.source_urls
    result = syncer.sync(
        options.repos[0], urls[0] if urls else None, companion_repos=options.repos[1:], companion_urls=urls[1:]
    )
    return Synced(result=result, options=options, summary=tuple(sync_files.summary(result)))


@keyword_record
class WheelsOptions:
    facts: Path | None = None
    output: Path | None = None
    check: bool = False
    force: bool = False


@keyword_record
class WheelsDone:
    """The wheel catalog derived from the facts: its text (printed when no --output is given) and what was done."""

    text: str
    said: tuple[str, ...]
    summary: str


def wheels(options: WheelsOptions) -> WheelsDone:
    """`pickvariant catalog wheels`: the wheel catalog from the facts file, printed, written or checked."""
    from pickvariant._base.errors import OperationFailed
    from pickvariant._base.files import check_writable, read_regular, write_atomic
    from pickvariant.sources.wheels import facts as wheel_facts

    if options.check and options.output is None:
        raise BadInput("--check compares against a file: give it with -o FILE")
    document = wheel_facts.derive(wheel_facts.read_facts(options.facts or wheel_facts.FACTS))
    text = wheel_facts.render(document)
    summary = f"{len(document['builds'])} wheel builds, {len(document['left_out'])} left out"
    if options.output is None:
        return WheelsDone(text=text, said=(), summary=summary)
    if options.check:
        found = (
            read_regular(options.output, wheel_facts.MAX_FACTS_BYTES, "wheel catalog")
            if options.output.exists()
            else b""
        )
        if found.decode("utf-8", "replace") != text:
            raise OperationFailed(
                f"{options.output} differs from what the wheel facts give: run `pickvariant catalog wheels -o {options.output}`"
            )
        return WheelsDone(text="", said=(f"{options.output} matches the wheel facts",), summary=summary)
    if check_writable(options.output, text, options.force):
        write_atomic(options.output, text)
        return WheelsDone(text="", said=(f"{options.output} written",), summary=summary)
    return WheelsDone(text="", said=(f"{options.output} unchanged",), summary=summary)
