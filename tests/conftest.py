from __future__ import annotations

import json
import os
import stat
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

from pickvariant.catalog import Catalog, load_catalog

TESTS = Path(__file__).resolve().parent
CPUINFO = TESTS / "fixtures" / "cpuinfo"
DATA = TESTS / "data"
REPO = TESTS.parent

# CI sets this so that a missing real dependency (nix-instantiate, torch) fails the run
# instead of skipping quietly.
STRICT_ENV = "PICKVARIANT_TESTS_STRICT"


# CI replays the same generated cases every run (a failure there is reproducible);
# local runs draw new ones. No deadline: CI machines are slower and noisier.
settings.register_profile("pickvariant", deadline=None, database=None, derandomize=os.environ.get(STRICT_ENV) == "1")
settings.load_profile("pickvariant")

# How many cases each property test generated, printed at the end of the run.
GENERATED: Counter[str] = Counter()


def generated(label: str) -> None:
    GENERATED[label] += 1


def pytest_terminal_summary(terminalreporter) -> None:
    if GENERATED:
        terminalreporter.section("generated cases (hypothesis)")
        for label, count in sorted(GENERATED.items()):
            terminalreporter.write_line(f"{count:6d}  {label}")
        terminalreporter.write_line(f"{sum(GENERATED.values()):6d}  in all")


def require(condition: bool, reason: str) -> None:
    """Skip with the reason printed, or fail when CI asked for every real dependency."""
    if condition:
        return
    if os.environ.get(STRICT_ENV) == "1":
        pytest.fail(f"{reason} ({STRICT_ENV}=1 turns this skip into a failure)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(REPO / "catalog.json")


def cpuinfo_path(name: str) -> Path:
    return CPUINFO / name


# A stand-in for Flox's documented CLI (init -d, install -d, build -d): Flox cannot be
# installed here. FAKE_FLOX_MODE makes it sleep, print a lot, or fail.
FAKE_FLOX = r'''#!/usr/bin/env python3
import json, os, signal, sys, time, pathlib
signal.signal(signal.SIGINT, lambda *_: (print("flox: interrupted", flush=True), sys.exit(130)))
calls = pathlib.Path(os.environ["FAKE_FLOX_CALLS"])
with calls.open("a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "pid": os.getpid()}) + "\n")
mode = os.environ.get("FAKE_FLOX_MODE", "ok")
args = sys.argv[1:]
directory = pathlib.Path(args[args.index("-d") + 1]) if "-d" in args else pathlib.Path.cwd()
if mode.startswith("sleep:"):
    print("building...", flush=True)
    if os.environ.get("FAKE_FLOX_CHILD"):
        # A builder process that ignores SIGINT, as nix's daemon children may: stopping flox must stop it too.
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)"])
        pathlib.Path(os.environ["FAKE_FLOX_CHILD"]).write_text(str(child.pid))
    time.sleep(float(mode.split(":")[1]))
if mode == "long":
    for i in range(500):
        print(f"log line {i}")
if mode.startswith("fail:") and args[0] in ("install", "build"):
    if args[0] == "install":
        (directory / ".flox/env/manifest.toml").write_text("half-written\n")
    print("error: something went wrong", flush=True)
    sys.exit(int(mode.split(":")[1]))
if args[0] == "init":
    (directory / ".flox/env").mkdir(parents=True, exist_ok=True)
    (directory / ".flox/env/manifest.toml").write_text("version = 1\n")
elif args[0] == "install":
    with (directory / ".flox/env/manifest.toml").open("a") as f:
        f.write(f"[install]\n{args[-1].split('/')[-1]}.pkg-path = \"{args[-1]}\"\n")
elif args[0] == "build":
    (directory / f"result-{args[-1]}").mkdir()
print(f"flox {args[0]} done")
'''


@pytest.fixture(autouse=True)
def no_recipe_fetch_from_the_internet(monkeypatch) -> None:
    """Fetching defaults to the upstream repository on GitHub: no test may reach it by accident.
    Tests of fetching name their own repository; everything else meets an address nobody answers."""
    monkeypatch.setenv("PICKVARIANT_RECIPES_REPO", "git://127.0.0.1:9/nobody-listens")


@pytest.fixture
def fake_flox(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    flox = bin_dir / "flox"
    flox.write_text(FAKE_FLOX)
    flox.chmod(flox.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FLOX_CALLS", str(calls))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("PICKVARIANT_FLOX_ORG", raising=False)

    def recorded() -> list[dict]:
        return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []

    return recorded
