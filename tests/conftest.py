from __future__ import annotations

import functools
import importlib.util
import json
import os
import shlex
import stat
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

from pickvariant.sources.build import Catalog
from pickvariant.sources.flox.recipes.load import load_catalog

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

# No test reads or writes outside its temporary directories: HOME and the XDG folders (pickvariant's cache, git's,
# Ansible's, pip's) point into one folder of the run's own for the whole run, made before any test module is
# imported and removed after the last.
_ISOLATED = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
_RUN_HOME: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    import tempfile

    root = tempfile.mkdtemp(prefix="pickvariant-tests-home-")
    _RUN_HOME.append(root)
    for name in _ISOLATED:
        path = os.path.join(root, name.lower())
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.environ[name] = path
    # The AMD and Intel GPUs read are a sysfs of the tests' own (none), never this machine's (tests/test_othergpu.py
    # points it at real captures).
    os.makedirs(os.path.join(root, "sys"), mode=0o700, exist_ok=True)
    os.environ["PICKVARIANT_SYSFS"] = os.path.join(root, "sys")
    # hypothesis keeps what it learns of the code (.hypothesis/constants) in the working folder unless told.
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(root, "hypothesis")
    # pytest's own temporary folders (tmp_path) too: under TMPDIR it would keep pytest-of-USER behind after the run.
    # A pytest-xdist worker keeps the folder its controller gave it (inside the controller's root, removed with it).
    if getattr(config, "workerinput", None) is None and config.option.basetemp is None:
        config.option.basetemp = os.path.join(root, "pytest")
    # A run started in the background of a script (`cmd &`) inherits SIGINT ignored, and one started under nohup
    # SIGHUP, and every process it starts would too: Ctrl-C or a hang-up could then never reach the pickvariant the
    # tests stop (it rightly keeps a signal its caller ignored). The tests stand where a shell starts a command.
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    # What the user's shell states for pickvariant (a machine, a source, a catalog) is no test's input: each test
    # states what it means to (the sysfs above, the strict switch excepted).
    for name in [name for name in os.environ if name.startswith("PICKVARIANT_")]:
        if name not in (STRICT_ENV, "PICKVARIANT_SYSFS"):
            del os.environ[name]


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    for root in _RUN_HOME:
        shutil.rmtree(root, ignore_errors=True)


# How many cases each property test generated, printed at the end of the run.
GENERATED: Counter[str] = Counter()


def generated(label: str) -> None:
    GENERATED[label] += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    # A worker of pytest-xdist (the suite runs in several, pyproject.toml's addopts) hands its counts to the controller.
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["generated"] = dict(GENERATED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    GENERATED.update(getattr(node, "workeroutput", {}).get("generated", {}))


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


def run_folder() -> Path:
    """This test process's own folder for the run (HOME and the XDG folders are inside it), removed after the run."""
    return Path(_RUN_HOME[0])


def fresh_venv(path: Path, with_pip: bool = True) -> Path:
    """A new virtual environment at `path`, its interpreter returned. With pip: what ensurepip puts into a new
    environment (pip, and setuptools where the Python bundles it), installed by ensurepip once per test process into a
    template and copied from there: ensurepip unpacks and compiles a thousand files each time (4 s on an idle 2-core
    machine, over 10 s under the suite's load), a copy takes a tenth of a second. The environment's pip is the real pip,
    run as `python -m pip`; the template's console scripts (bin/pip) are not copied, their first line names the
    template's interpreter."""
    import venv

    venv.EnvBuilder(with_pip=False).create(path)
    if with_pip:
        import shutil

        template = _pip_template()
        (site,) = path.glob("lib/python*/site-packages")
        for entry in template.iterdir():
            if entry.is_dir():
                shutil.copytree(entry, site / entry.name, symlinks=True)
            else:
                shutil.copy2(entry, site / entry.name)
    return path / "bin" / "python"


@functools.cache
def _pip_template() -> Path:
    """The site-packages of one environment ensurepip made, for fresh_venv to copy."""
    try:
        import ensurepip  # noqa: F401
    except ImportError:
        require(False, "ensurepip is missing (Debian: the python3-venv package): no fresh venv with pip")
    import venv

    root = run_folder() / "venv-with-pip"
    venv.EnvBuilder(with_pip=True).create(root)
    (site,) = root.glob("lib/python*/site-packages")
    return site


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog(REPO / "catalog.json")


def cpuinfo_path(name: str) -> Path:
    return CPUINFO / name


@pytest.fixture(autouse=True)
def no_recipe_fetch_from_the_internet(monkeypatch) -> None:
    """Fetching defaults to the upstream repository on GitHub: no test may reach it by accident.
    Tests of fetching name their own repository; everything else meets an address nobody answers."""
    monkeypatch.setenv("PICKVARIANT_RECIPES_REPO", "git://127.0.0.1:9/nobody-listens")


class FloxStandIn:
    """tests/flox_standin.py on PATH as `flox`, with its catalog, store and login in a temporary directory.

    Calling it returns the recorded calls ({argv, cwd, pid}), oldest first."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog: Catalog) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        flox = bin_dir / "flox"
        flox.write_text(
            f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(TESTS / "flox_standin.py"))} "$@"\n'
        )
        flox.chmod(flox.stat().st_mode | stat.S_IEXEC)
        # Every install defaults to the current directory: never the checkout's.
        monkeypatch.chdir(tmp_path)
        self.state = tmp_path / "flox-state"
        (self.state / "store").mkdir(parents=True)
        self.calls_file = tmp_path / "calls.jsonl"
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_FLOX_CALLS", str(self.calls_file))
        monkeypatch.setenv("FAKE_FLOX_STATE", str(self.state))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        for name in (
            "PICKVARIANT_FLOX_ORG",
            "FLOX_FLOXHUB_TOKEN",
            "FAKE_FLOX_MODE",
            "FAKE_FLOX_OFFLINE",
            "FAKE_FLOX_VERSION",
            "FAKE_FLOX_BUILD_FAILS",
        ):
            monkeypatch.delenv(name, raising=False)
        self.site_packages = torch_site_packages()
        if self.site_packages:
            monkeypatch.setenv("FAKE_FLOX_SITE_PACKAGES", self.site_packages)
        else:
            monkeypatch.delenv("FAKE_FLOX_SITE_PACKAGES", raising=False)
        self.login("tester")
        entries: dict[str, dict] = {
            f"python{minor.replace('.', '')}": {
                "kind": "python",
                "versions": [f"{minor}.0"],
                "interpreter": sys.executable,
            }
            for minor in ("3.11", "3.12", "3.13")
        }
        # The org "acme" has published every variant of the catalog, each at its PyTorch version.
        for variant in catalog.variants:
            entry = entries.setdefault(
                f"acme/{variant.package}",
                {
                    "kind": "site-packages",
                    "versions": [],
                    "systems": [variant.platform],
                    "members": ["tester"],
                    "site_packages": self.site_packages,
                },
            )
            if variant.torch not in entry["versions"]:
                entry["versions"].append(variant.torch)
        self.write_catalog(entries)

    def __call__(self) -> list[dict]:
        return (
            [json.loads(line) for line in self.calls_file.read_text().splitlines()] if self.calls_file.exists() else []
        )

    def torch_distribution(self, version: str) -> str:
        """A site-packages directory whose torch distribution is `version` by its metadata (what importlib.metadata
        and a Flox environment's Python read), for publishing a torch of a stated release: the environment's torch
        check reads that, not the kernels (verify runs the real torch)."""
        root = self.state / f"torch-{version}-site-packages"
        (root / "torch").mkdir(parents=True, exist_ok=True)
        (root / "torch" / "__init__.py").write_text(f"__version__ = {version!r}\n")
        info = root / f"torch-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
        return str(root)

    def write_catalog(self, entries: dict[str, dict]) -> None:
        (self.state / "catalog.json").write_text(json.dumps(entries))

    def catalog(self) -> dict[str, dict]:
        return json.loads((self.state / "catalog.json").read_text())

    def login(self, handle: str) -> None:
        (self.state / "auth.json").write_text(json.dumps({"handle": handle}))

    def logout(self) -> None:
        (self.state / "auth.json").unlink(missing_ok=True)


def torch_site_packages() -> str | None:
    """The site-packages directory holding this interpreter's torch (and its dependencies), if any."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


@pytest.fixture
def fake_flox(tmp_path, monkeypatch, catalog) -> FloxStandIn:
    return FloxStandIn(tmp_path, monkeypatch, catalog)


def cli_runner():
    """typer's CliRunner with stderr kept apart from stdout, as the tests read them: click 8.2+ always keeps
    them apart; older click (which typer's lowest allowed release may bring) does so when asked."""
    from typer.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click 8.2+: no such argument, stderr is always its own
        return CliRunner()
