"""`pickvariant catalog sync`: the catalog and its companions read from the build repository and its companion
repositories (sources/flox/recipes/sync.py), and what to print, write or check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pickvariant._base.errors import BadInput
from pickvariant._base.files import check_path_length
from pickvariant._base.records import keyword_record
from pickvariant.sources.flox.recipes import sync as syncer
from pickvariant.sources.flox.recipes import sync_files
from pickvariant.sources.flox.recipes.sync import SyncResult


@keyword_record
class SyncOptions:
    repos: tuple[str, ...]
    output: Path | None = None
    check: bool = False
    source_urls: tuple[str, ...] = ()
    force: bool = False
    upstreams: tuple[str, ...] = ()  # --upstream: repositories whose every branch is trusted
    trusted: tuple[str, ...] = ()  # --trust-recipes: repositories synced whose recipes the user trusts whole


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
    for flag, named in (("--upstream", options.upstreams), ("--trust-recipes", options.trusted)):
        for repo in named:
            if "://" not in repo:
                check_path_length(repo, flag)
    urls = options.source_urls
    result = syncer.sync(
        options.repos[0],
        urls[0] if urls else None,
        companion_repos=options.repos[1:],
        companion_urls=urls[1:],
        trust=syncer.TrustOptions(upstreams=options.upstreams, trusted=options.trusted),
    )
    return Synced(result=result, options=options, summary=tuple(sync_files.summary(result)))
