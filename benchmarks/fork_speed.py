"""`catalog sync` under the whitelist (issue 69) against the release before it, in one run: time ratios.

    python benchmarks/fork_speed.py --repo CLONE [--previous REF] [--runs 3]

CLONE: a clone of the build repository (build-pytorch). REF: the release to compare with (default: the commit before
the first "Issue 69:" commit). It is extracted with `git archive` and run from there, in fresh processes that
alternate with the current code's; it needs the packages it depended on (tree-sitter-bash).

1. `catalog sync CLONE`: the real repository, its recipes the trusted upstream's.
2. A fork whose one recipe grew a build script of many lines (the shape whose old bash check was quadratic), at
   64 KiB (both run) and 1 MiB (the current code alone: the old one ran past an hour on it). The fork is synced
   against its upstream; the 1 MiB recipe is also judged in this process, beside the floor under it: tree-sitter's
   parse of it.
Prints medians and ratios; asserts nothing (timings belong here, not in tests).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from buildrepo import as_upstream, template  # noqa: E402  (the tests' own recipe template)

BRANCH = "pytorch-2.10-python313"
PACKAGE = "pytorch-python313-cpu-avx2"
LINE = "      echo building\n"


def previous_release(ref: str | None, into: Path) -> Path:
    """The release before issue 69's work (or `ref`), extracted as files."""
    if ref is None:
        first = subprocess.run(
            ["git", "-C", str(ROOT), "log", "--reverse", "--format=%H", "--grep=^Issue 69:"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        ref = f"{first[0]}^" if first else "HEAD"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(into, filter="data")
    return into


def timed(code: Path, argv: list[str]) -> float:
    """Wall seconds of one `pickvariant ARGV` run from `code`'s checkout, in a fresh process."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pickvariant.cli.entry import main; raise SystemExit(main(sys.argv[1:]))",
         *argv],
        cwd=code, capture_output=True, check=False, env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    if done.returncode not in (0, 2):
        raise SystemExit(f"{code}: {' '.join(argv)}: {done.stderr.decode()[-500:]}")
    return time.perf_counter() - started


def git(repo: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@example.org", "PATH": "/usr/bin:/bin", "HOME": str(repo)}  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def fork_with(scratch: Path, size: int) -> tuple[Path, Path]:
    """(upstream, fork): the fork's recipe grown to `size` bytes with build-script lines."""
    upstream, fork = scratch / f"up-{size}", scratch / f"fork-{size}"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", BRANCH)
    (upstream / ".flox/pkgs").mkdir(parents=True)
    honest = template(PACKAGE, "avx2")
    (upstream / ".flox/pkgs" / f"{PACKAGE}.nix").write_text(honest)
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "upstream")
    git(scratch, "clone", "-q", "--no-local", str(upstream), str(fork))
    grown = honest.replace("      export MAX_JOBS=32\n", "      export MAX_JOBS=32\n" + LINE * (size // len(LINE)), 1)
    (fork / ".flox/pkgs" / f"{PACKAGE}.nix").write_text(grown)
    git(fork, "commit", "-q", "-am", "grown")
    return upstream, fork


def compare(name: str, runs: int, current: Path, previous: Path | None, new: list[str], old: list[str]) -> None:
    now, before = [], []
    for _ in range(runs):  # alternating, so that the machine's load falls on both alike
        now.append(timed(current, new))
        if previous is not None:
            before.append(timed(previous, old))
    line = f"{name:>36}: now {statistics.median(now):7.2f} s"
    if before:
        line += f", before {statistics.median(before):7.2f} s, ratio {statistics.median(now) / statistics.median(before):.2f}"
    print(line)


def judged_in_process(fork: Path, upstream: Path) -> None:
    from pickvariant.sources.flox.recipes.nixtext import parse_tree
    from pickvariant.sources.flox.recipes.trusted import TrustedRecipe, Upstream

    honest = (upstream / ".flox/pkgs" / f"{PACKAGE}.nix").read_text()
    text = (fork / ".flox/pkgs" / f"{PACKAGE}.nix").read_text()
    trusted = TrustedRecipe(path=f".flox/pkgs/{PACKAGE}.nix", package=PACKAGE, blob="b", where="up", reader=0,
                            size=len(honest))  # fmt: skip
    judge = Upstream([trusted], [lambda ids: iter([("b", honest.encode())])])
    started = time.perf_counter()
    verdict = judge.judge(PACKAGE, text)
    took = time.perf_counter() - started
    started = time.perf_counter()
    parse_tree(text)
    floor = time.perf_counter() - started
    print(f"{'1 MiB recipe judged in process':>36}: {took:7.3f} s (tree-sitter's parse alone: {floor:.3f} s): "
          f"{(verdict.why or 'classified')[:60]}")  # fmt: skip
    # The same recipe against an upstream recipe as large (no size bound applies): parsed, walked to where it parts.
    large = TrustedRecipe(path=trusted.path, package=PACKAGE, blob="b", where="up", reader=0, size=len(text))
    started = time.perf_counter()
    verdict = Upstream([large], [lambda ids: iter([("b", honest.encode())])]).judge(PACKAGE, text)
    print(
        f"{'... with no size bound':>36}: {time.perf_counter() - started:7.3f} s: {(verdict.why or 'classified')[:60]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True, help="a clone of the build repository")
    parser.add_argument("--previous", help="the release to compare with (a git ref of this checkout)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        previous = previous_release(args.previous, work / "previous")
        out = ["-o", str(work / "c.json"), "--force"]
        compare("catalog sync of the repository", args.runs, ROOT, previous, ["catalog", "sync", args.repo, *out],
                ["catalog", "sync", args.repo, *out])  # fmt: skip
        for size, label in ((64 << 10, "64 KiB"), (1 << 20, "1 MiB")):
            upstream, fork = fork_with(work, size)
            argv = ["catalog", "sync", str(fork), *out]
            compare(f"sync of a fork with a {label} recipe", args.runs, ROOT, previous if size < (1 << 20) else None,
                    [*argv, *as_upstream(upstream)], argv)  # fmt: skip
        judged_in_process(fork, upstream)


if __name__ == "__main__":
    main()
