"""`pickvariant catalog sync` on repositories written to be slow or to exhaust memory: time and peak memory.

    python benchmarks/sync_hostile.py [--recipes 2500]

1. Linear time: a recipe of 100 KB and one of 1 MB whose `mainProgram = ''platforms=[platforms=[…'';`
   made the old pattern over raw text backtrack (292 s at 1 MB); the ratio 1 MB / 100 KB should stay
   near 10 (linear), with the time of an honest recipe beside them as the baseline.
2. Bounded memory: --recipes distinct recipes of 1 MB each (the limit per recipe), written with
   `git fast-import` (no work tree); the peak memory of the sync process should stay near that of
   syncing one, not grow with their sum (5.1 GB for 2,500 before blobs were streamed).
Each sync runs in a fresh process that reports its own ru_maxrss.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from buildrepo import PIN_NEW, recipe

_MEASURED = (
    "import resource, sys\nfrom pickvariant.cli.entry import main\ncode = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nraise SystemExit(code)"
)
BRANCH = "pytorch-2.10-python313"


def fast_import(repo: Path, files: dict[str, bytes] | None = None, generated: tuple[int, int] | None = None) -> None:
    """One commit on BRANCH holding `files`, or `generated` = (count, size) distinct recipes, streamed into git."""
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    process = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=repo, stdin=subprocess.PIPE)
    assert process.stdin is not None
    write = process.stdin.write
    write(f"commit refs/heads/{BRANCH}\ncommitter t <t@example.org> 1772290537 -0500\ndata 4\nsync\n".encode())
    honest = recipe("313", "avx512", PIN_NEW, version="2.10.0").encode()
    for name, content in (files or {}).items():
        write(f"M 644 inline .flox/pkgs/{name}\ndata {len(content)}\n".encode() + content + b"\n")
    if generated:
        count, size = generated
        for index in range(count):
            body = honest + b"# " + str(index).encode() + b" " + b"x" * (size - len(honest) - 20) + b"\n"
            write(
                f"M 644 inline .flox/pkgs/pytorch-python313-cpu-avx512-{index}.nix\ndata {len(body)}\n".encode()
                + body
                + b"\n"
            )
    process.stdin.close()
    if process.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "--git-dir", str(repo), "update-ref", "HEAD", f"refs/heads/{BRANCH}"], check=True)


def sync_once(repo: Path) -> tuple[float, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURED,
            "catalog",
            "sync",
            str(repo),
            "-o",
            str(repo.parent / "catalog.json"),
            "--force",
        ],
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    lines = done.stderr.decode().strip().splitlines()
    if done.returncode not in (0, 2):
        raise SystemExit(done.stderr.decode())
    return wall, int(lines[-1]) / 1024


def backtracking(size: int) -> bytes:
    honest = recipe("313", "avx512", PIN_NEW, version="2.10.0")
    filler = "platforms=[" * (size // len("platforms=["))
    return honest.replace("meta = old.meta", f"mainProgram = ''{filler}'';\n  meta = old.meta").encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", type=int, default=2500)
    count = parser.parse_args().recipes
    with tempfile.TemporaryDirectory() as scratch:
        rows = []
        for name, content in (
            ("honest recipe", recipe("313", "avx512", PIN_NEW, version="2.10.0").encode()),
            ("100 KB backtracking bait", backtracking(100_000)),
            ("1 MB backtracking bait", backtracking(1_000_000)),
        ):
            repo = Path(scratch) / name.replace(" ", "-") / "repo.git"
            repo.parent.mkdir()
            fast_import(repo, {"pytorch-python313-cpu-avx512.nix": content})
            wall, peak = sync_once(repo)
            rows.append((name, wall, peak))
            print(f"{name:>28}: sync {wall:6.2f} s, peak {peak:6.0f} MiB")
        print(
            f"{'ratio 1 MB / 100 KB':>28}: {rows[2][1] / rows[1][1]:.1f} (linear: about 10, less where start-up dominates)"
        )
        repo = Path(scratch) / "many" / "repo.git"
        repo.parent.mkdir()
        fast_import(repo, generated=(count, 1_000_000))
        packed = sum(path.stat().st_size for path in (repo / "objects").rglob("*") if path.is_file())
        wall, peak = sync_once(repo)
        print(
            f"{f'{count} distinct 1 MB recipes':>28}: sync {wall:6.2f} s, peak {peak:6.0f} MiB ({packed / 2**20:.1f} MiB packed)"
        )


if __name__ == "__main__":
    main()
