"""An install is whole or not at all (issue 51): the real pip, stopped at several moments, never leaves half a torch.

A virtual environment holds a torch of 2,500 files (from a mirror on 127.0.0.1, tests/wheel_mirror.py);
`pickvariant install --source wheels --yes` replaces it with the chosen build and is stopped by Ctrl-C (SIGINT) or
SIGTERM at a moment seen in the environment itself (pip about to start, pip just launched, the old torch just
removed by pip, the new one being written), or by `--timeout`. Whatever the moment, the environment's torch afterwards is the old one or
the new one, every file its RECORD names there at its size (checked by the environment's own importlib.metadata,
not by pickvariant's code), nothing of pip's or pickvariant's left beside it, and pickvariant's last line says which.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, fresh_venv
from test_wheel_install import GTX_1080, _env, _pickvariant
from wheel_mirror import build_mirror, served

pytestmark = pytest.mark.slow  # real pip and uv into fresh environments

PADDING = 2500
_WHOLE = """\
import importlib.metadata as m, json, os
try:
    dist = m.distribution("torch")
except m.PackageNotFoundError:
    print(json.dumps(None)); raise SystemExit
missing = [str(f) for f in dist.files if not os.path.exists(f.locate()) or (f.size is not None and
           os.path.getsize(f.locate()) != f.size)]
print(json.dumps({"version": dist.version, "missing": missing[:5], "files": len(dist.files)}))
"""


def _torch_state(python: Path) -> dict | None:
    out = subprocess.run([str(python), "-c", _WHOLE], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def _site(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture
def stage(tmp_path: Path):
    """A chosen torch and an old one (thousands of files each) served from 127.0.0.1, and a venv holding the old one:
    each test its own, so that nothing one leaves can start another's moment early."""
    python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    detect = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", "--python-version", python_version, *GTX_1080],
        _env(tmp_path),
        tmp_path,
    )
    assert detect.returncode == 0, detect.stderr
    chosen = json.loads(detect.stdout)["recommendation"]
    old = f"{chosen['release']}+cu130"
    build_mirror(
        tmp_path / "mirror", {chosen["variant"]: [("torch", chosen["torch"])], "cu130": [("torch", old)]}, PADDING
    )
    with served(tmp_path / "mirror") as url:
        python = fresh_venv(tmp_path / "venv")
        yield python, url, old, chosen["torch"]


def _put_back(python: Path, url: str, old: str, tmp_path: Path) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "--force-reinstall", "--no-deps", f"torch=={old}", "--index-url", f"{url}/cu130"],
        env=_env(tmp_path), check=True, capture_output=True, timeout=300,
    )  # fmt: skip


def _install(python: Path, url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The install run to its end, stopped by nothing but what the environment itself does (a hang-up included)."""
    argv = [sys.executable, "-m", "pickvariant", "install", "--source", "wheels", "--python", str(python)]
    argv += ["--wheel-index", url, *GTX_1080, "--yes", "--no-verify"]
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)


def _run_until(python: Path, url: str, tmp_path: Path, moment: str, sig: int) -> subprocess.CompletedProcess[str]:
    """The install, signalled once `moment` shows in the environment's site-packages."""
    site, old_dist_info = _site(python), None
    old_dist_info = next(site.glob("torch-*.dist-info"))
    argv = [sys.executable, "-m", "pickvariant", "install", "--source", "wheels", "--python", str(python)]
    argv += ["--wheel-index", url, *GTX_1080, "--yes", "--no-verify"]
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    logs = set(tmp_path.glob("pickvariant-wheels-*.log"))  # the install log gets its `$ pip …` line as pip starts
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = {
        "pip starts": lambda: any(site.glob(".pickvariant-kept-*")),
        "pip launched": lambda: any(
            log.stat().st_size for log in set(tmp_path.glob("pickvariant-wheels-*.log")) - logs
        ),
        "old torch removed": lambda: not old_dist_info.exists(),
        "new torch being written": lambda: any(p != old_dist_info for p in site.glob("torch-*.dist-info")),
    }[moment]
    deadline = time.monotonic() + 240
    while process.poll() is None and not seen() and time.monotonic() < deadline:
        time.sleep(0.002)
    if process.poll() is None:
        process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def _run_stopped_twice(python: Path, url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The install stopped by Ctrl-C once pip has removed the old torch, then sent SIGTERM every 2 ms until it ends:
    the second signal lands while the stopped install is put right (or just before), as a batch system's would."""
    site = _site(python)
    old_dist_info = next(site.glob("torch-*.dist-info"))
    argv = [sys.executable, "-m", "pickvariant", "install", "--source", "wheels", "--python", str(python)]
    argv += ["--wheel-index", url, *GTX_1080, "--yes", "--no-verify"]
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while process.poll() is None and old_dist_info.exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    sent = 0
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
                sent += 1
            time.sleep(0.002)
    stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, f"{stderr}\n(SIGTERM sent {sent} times)")


def _installers_running(python: Path) -> list[str]:
    """The processes still running this environment's pip: none may outlive the pickvariant that started it."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and argv[:3] == [str(python).encode(), b"-m", b"pip"]:
            found.append(entry.name)
    return found


def _no_traceback_of_ours(stderr: str) -> bool:
    """pickvariant ended with its one line, never a traceback of its own. The installer it stopped may print one of
    its own as it dies (pip's, on KeyboardInterrupt): that is the installer's output, relayed and in the log's tail."""
    frames = [line for line in stderr.splitlines() if line.strip().startswith('File "')]
    return not any(str(REPO / "pickvariant") in frame or "/pickvariant/" in frame for frame in frames)


def _assert_whole(python: Path, old: str, new: str, done: subprocess.CompletedProcess[str]) -> str:
    assert _installers_running(python) == [], done.stderr  # a pip left running on would change it after this check
    state = _torch_state(python)
    assert state is not None, f"{done.stderr}\nsite-packages: {sorted(p.name for p in _site(python).iterdir())}"
    assert state["version"] in (old, new) and not state["missing"], (state, done.stderr)
    assert state["files"] > PADDING
    leftovers = [p.name for p in _site(python).iterdir() if p.name.startswith(("~", ".pickvariant-"))]
    assert leftovers == [], leftovers
    if done.returncode != 0:
        said = f"torch {state['version']} is there"
        assert said in done.stderr, done.stderr
    return str(state["version"])


# SIGHUP is stopped as SIGTERM is (the same handler): the faults row `wheel-install-hangup` sends it at the moment
# that matters most, the old torch removed.
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_install_stopped_at_any_moment_leaves_the_old_torch_or_the_new_one_whole(stage, tmp_path, sig) -> None:
    python, url, old, new = stage
    _put_back(python, url, old, tmp_path)
    outcomes = []
    for moment in ("pip starts", "pip launched", "old torch removed", "new torch being written"):
        done = _run_until(python, url, tmp_path, moment, sig)
        if done.returncode != 0:
            assert done.returncode == 128 + sig, (moment, done.stderr)
            assert _no_traceback_of_ours(done.stderr), done.stderr
        outcomes.append((moment, _assert_whole(python, old, new, done)))
        if outcomes[-1][1] != old:
            _put_back(python, url, old, tmp_path)
    assert any(version == old for _, version in outcomes), outcomes  # the moments did catch pip at work


@pytest.mark.parametrize("seconds", ["0.5", "2"])
def test_an_install_past_its_timeout_leaves_the_environment_whole(stage, tmp_path, seconds) -> None:
    python, url, old, new = stage
    _put_back(python, url, old, tmp_path)
    done = _pickvariant(
        ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *GTX_1080, "--yes",
         "--no-verify", "--timeout", seconds],
        _env(tmp_path), tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert _no_traceback_of_ours(done.stderr), done.stderr
    _assert_whole(python, old, new, done)


def test_python_given_by_name_is_the_one_on_path_never_a_file_in_the_working_directory(stage, tmp_path) -> None:
    """`--python python3` with a ./python3 in the working directory and PATH starting with an empty entry and `.`:
    the PATH's own is read and installed into, and the plan names it by its absolute path; the planted one never
    runs."""
    python, url, _, _ = stage
    planted = tmp_path / "work" / "python3"
    planted.parent.mkdir()
    marker = tmp_path / "planted-ran"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    planted.chmod(0o755)
    # An empty entry first, and a relative one: each means the working directory to a shell, never to pickvariant.
    env = {**_env(tmp_path), "PATH": os.pathsep.join(["", ".", str(python.parent), os.environ.get("PATH", "")])}
    dry = _pickvariant(
        ["install", "--source", "wheels", "--python", "python3", "--wheel-index", url, *GTX_1080, "--dry-run"],
        env, planted.parent,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert f"into {python.parent / 'python3'} (pip)" in dry.stdout
    assert f"$ {python.parent / 'python3'} -m pip install" in dry.stdout
    assert not marker.exists()


def _distribution(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """A distribution as pip leaves one: its files, and a RECORD naming each with its size (its own line without)."""
    info = f"{name}-{version}.dist-info"
    files = {**files, f"{info}/METADATA": f"Name: {name}\nVersion: {version}\n".encode()}
    for path, data in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(data)
    rows = [f"{path},sha256=,{len(data)}" for path, data in files.items()] + [f"{info}/RECORD,,"]
    (site / info / "RECORD").write_text("\n".join(rows) + "\n")


def test_a_distribution_an_installer_half_replaced_is_put_back_and_its_leftovers_removed(tmp_path) -> None:
    from pickvariant.install import whole

    site = tmp_path / "site-packages"
    _distribution(site, "demo", "1.0", {"demo/__init__.py": b"old = 1\n", "demo/core.so": b"\0" * 4096})
    kept = whole.keep(site)
    (site / "demo").rename(site / "~emo")  # what pip's uninstall does: the old files moved aside
    (site / "demo-1.0.dist-info").rename(site / "~emo-1.0.dist-info")
    (site / "demo").mkdir()
    (site / "demo" / "__init__.py").write_bytes(b"new = 2\n")  # the new one, half-written when it was stopped
    said = whole.settle(kept, False, ("demo",))
    assert said == ["demo 1.0 is there as it was (put back)"]
    assert sorted(p.name for p in site.iterdir()) == ["demo", "demo-1.0.dist-info"]
    assert (site / "demo" / "__init__.py").read_bytes() == b"old = 1\n"


def test_a_distribution_that_cannot_be_put_back_is_said_with_what_is_missing_and_its_files_kept(tmp_path) -> None:
    from pickvariant.install import whole

    site = tmp_path / "site-packages"
    _distribution(site, "demo", "1.0", {"demo/__init__.py": b"old = 1\n", "demo/core.so": b"\0" * 4096})
    kept = whole.keep(site)
    shutil.rmtree(site / "demo")
    (kept.folder / "demo" / "core.so").unlink()  # the one file nothing can bring back
    said = whole.settle(kept, False, ("demo",))
    assert said == [
        f"demo 1.0 could not be put back (1 of its 4 files missing or changed, the first demo/core.so): its files "
        f"are kept in {kept.folder}"
    ]
    assert (kept.folder / "demo" / "__init__.py").read_bytes() == b"old = 1\n"  # kept for the user, not removed


def test_an_environment_that_changes_while_it_is_kept_is_refused_before_anything_runs(tmp_path, monkeypatch) -> None:
    """Another installer renaming a distribution away while its files are being kept (simulated: the first link
    made, the package's folder is moved aside, as pip's uninstall moves it): the copy would be incomplete, so the
    install is refused before it starts, naming the distribution, and nothing of the kept folder is left."""
    from pickvariant._base.errors import OperationFailed
    from pickvariant.install import whole

    site = tmp_path / "site-packages"
    _distribution(site, "demo", "1.0", {"demo/__init__.py": b"old = 1\n", "demo/core.so": b"\0" * 4096})
    real_link = whole._link
    moved: list[Path] = []

    def link_then_another_installer_moves_it(source: Path, target: Path) -> None:
        real_link(source, target)
        if not moved:
            (site / "demo").rename(site / "~emo")
            moved.append(site / "~emo")

    monkeypatch.setattr(whole, "_link", link_then_another_installer_moves_it)
    with pytest.raises(OperationFailed, match="demo changed while being kept"):
        whole.keep(site)
    assert not any(p.name.startswith(whole.KEPT_PREFIX) for p in site.iterdir())


def test_a_distribution_whose_record_is_cut_short_while_written_is_not_taken_for_whole(tmp_path) -> None:
    """pip stopped while it extracts the new wheel: its RECORD is cut short, and every row written so far names a
    file already there. Taken for whole, the new one's dist-info was removed as owned by nothing and the old one was
    not put back (issue 51, seen as "2506 of its 5007 files missing"). A RECORD that does not name itself is one
    being written: the old distribution is put back whole, and what the stopped install wrote is removed."""
    from pickvariant.install import whole

    site = tmp_path / "site-packages"
    files = {f"demo/part{index}.py": f"old {index}\n".encode() for index in range(6)}
    _distribution(site, "demo", "1.0", files)
    kept = whole.keep(site)
    (site / "demo").rename(site / "~emo")
    (site / "demo-1.0.dist-info").rename(site / "~emo-1.0.dist-info")
    new = {f"demo/part{index}.py": f"new {index}\n".encode() for index in range(6)}
    _distribution(site, "demo", "2.0", new)
    record = site / "demo-2.0.dist-info" / "RECORD"
    record.write_text("".join(record.read_text().splitlines(keepends=True)[:3]))  # cut after its third row
    said = whole.settle(kept, False, ("demo",))
    assert said == ["demo 1.0 is there as it was (put back)"]
    assert sorted(p.name for p in site.iterdir()) == ["demo", "demo-1.0.dist-info"]
    assert sorted((site / "demo").iterdir()) == sorted(site / path for path in files)
    assert all((site / path).read_bytes() == data for path, data in files.items())


def test_what_a_killed_install_left_is_put_right_by_the_next_one(tmp_path) -> None:
    """An install killed (SIGKILL: no handler runs) while pip wrote the new distribution leaves the kept folder, the
    old files moved aside by pip and a half-written new one. The next install, holding the lock, finds the folder,
    puts the old distribution back from it, removes what the killed one wrote, says so, and leaves no kept folder."""
    from pickvariant.install import whole

    site = tmp_path / "site-packages"
    _distribution(site, "demo", "1.0", {"demo/__init__.py": b"old = 1\n", "demo/core.so": b"\0" * 4096})
    _distribution(site, "other", "3.0", {"other.py": b"x = 3\n"})
    whole.keep(site)  # never settled: the process that kept it was killed
    (site / "demo").rename(site / "~emo")
    (site / "demo-1.0.dist-info").rename(site / "~emo-1.0.dist-info")
    (site / "demo").mkdir()
    (site / "demo" / "__init__.py").write_bytes(b"new = 2\n")
    (site / "demo-2.0.dist-info").mkdir()  # its RECORD cut short: it does not name itself
    (site / "demo-2.0.dist-info" / "RECORD").write_text("demo/__init__.py,sha256=,8\n")
    said = whole.recover(site)
    assert len(said) == 1 and "was killed before it finished" in said[0], said
    assert said[0].endswith("demo 1.0 is there as it was (put back)"), said
    assert sorted(p.name for p in site.iterdir()) == ["demo", "demo-1.0.dist-info", "other-3.0.dist-info", "other.py"]
    assert (site / "demo" / "__init__.py").read_bytes() == b"old = 1\n"
    assert whole.recover(site) == []  # nothing is left to find


def test_a_distribution_a_killed_install_finished_writing_is_kept(tmp_path) -> None:
    """Killed after pip wrote the new distribution whole: the new one stays, the old one's kept files go."""
    from pickvariant.install import whole

    site = tmp_path / "site-packages"
    _distribution(site, "demo", "1.0", {"demo/__init__.py": b"old = 1\n"})
    whole.keep(site)
    shutil.rmtree(site / "demo")
    shutil.rmtree(site / "demo-1.0.dist-info")
    _distribution(site, "demo", "2.0", {"demo/__init__.py": b"new = 2\n"})
    said = whole.recover(site)
    assert len(said) == 1 and said[0].endswith("demo 2.0 is there, complete"), said
    assert sorted(p.name for p in site.iterdir()) == ["demo", "demo-2.0.dist-info"]


def test_an_installer_never_outlives_a_killed_pickvariant_and_the_next_install_says_what_it_left(
    stage, tmp_path
) -> None:
    """pickvariant killed with SIGKILL (the OOM killer, a batch system's hard limit: no handler runs) while pip waits
    on a download that does not come: the kernel ends pip with it, where pip would otherwise wait on, unseen. The kept
    folder and the lock stay behind; the next install finds both, says so, puts the environment right and installs."""
    python, url, old, new = stage
    _put_back(python, url, old, tmp_path)
    site = _site(python)
    release = threading.Event()
    with _stalling(url, release) as (stalled, asked):
        argv = [sys.executable, "-m", "pickvariant", "install", "--source", "wheels", "--python", str(python)]
        argv += ["--wheel-index", stalled, *GTX_1080, "--yes", "--no-verify"]
        env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
        process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _until(lambda: bool(asked) and bool(_installers_running(python)))
        finally:
            process.kill()
            process.wait(timeout=60)
        _until(lambda: not _installers_running(python), 30.0)
        assert _installers_running(python) == []  # a pip left waiting is still at work 30 s on (its retries: 90 s)
        assert any(site.glob(".pickvariant-kept-*")) and (site / ".pickvariant-install.lock").exists()
        release.set()
    done = _pickvariant(
        ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *GTX_1080, "--yes",
         "--no-verify"],
        _env(tmp_path), tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "was left by an install that was killed: taken over" in said, said
    assert "an earlier install into this environment was killed before it finished" in said, said
    assert _assert_whole(python, old, new, done) == new


@contextlib.contextmanager
def _stalling(url: str, release: threading.Event):
    """A front to the mirror at `url` whose wheels never arrive until `release` is set: pip waits on one. Yields its
    URL and the wheels asked for so far."""
    import urllib.request

    from wheel_mirror import serving

    class Stall(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith(".whl"):
                asked.append(self.path)
                release.wait(300)
                return
            with urllib.request.urlopen(url + self.path, timeout=30) as answer:
                body = answer.read()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    asked: list[str] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stall)
    server.daemon_threads = True
    with serving(server) as served_url:
        try:
            yield served_url, asked
        finally:
            release.set()


def _until(condition, limit_s: float = 240.0) -> None:
    """Wait until `condition()` holds, at most `limit_s` (a bound on a hang, not a measurement)."""
    end = time.monotonic() + limit_s
    while not condition() and time.monotonic() < end:
        time.sleep(0.02)


def test_a_second_signal_while_a_stopped_install_is_put_right_never_stops_that(stage, tmp_path) -> None:
    """Ctrl-C once pip removed the old torch, then SIGTERM again and again: the environment is put right all the
    same, whole, with no kept copy or lock left in site-packages, the line says which torch is there, and the first
    signal decides how it ends (130): none of the later ones stops the mending or that line."""
    python, url, old, new = stage
    _put_back(python, url, old, tmp_path)
    done = _run_stopped_twice(python, url, tmp_path)
    assert done.returncode == 128 + signal.SIGINT, done.stderr
    assert _no_traceback_of_ours(done.stderr), done.stderr
    assert _assert_whole(python, old, new, done) == old  # stopped before pip had written the new torch


# The install run as `python -m pickvariant` does, with a real SIGINT sent to itself at the one moment no wait of
# the installer's covers: pip has ended with the new torch written, and nothing is settled yet (settle's entry).
_SIGINT_AS_SETTLE_STARTS = """\
import os, runpy, signal, sys
from pickvariant.install import whole
real = whole.settle
def settle(kept, finished, projects=("torch",)):
    if finished and not getattr(settle, "sent", False):
        settle.sent = True
        os.kill(os.getpid(), signal.SIGINT)
    return real(kept, finished, projects)
whole.settle = settle
sys.argv = ["pickvariant", *sys.argv[1:]]
runpy.run_module("pickvariant", run_name="__main__")
"""


def test_a_ctrl_c_after_pip_ended_and_before_it_settled_still_settles_the_environment(stage, tmp_path) -> None:
    """Ctrl-C after pip ended and before the environment is settled: the new torch stays, whole, the kept copy of
    the old one and the lock are removed, the exit is 130 and the line says pip had finished and which torch is
    there. Deterministic: the signal is sent at settle's first line, not raced."""
    python, url, old, new = stage
    _put_back(python, url, old, tmp_path)
    argv = [sys.executable, "-c", _SIGINT_AS_SETTLE_STARTS, "install", "--source", "wheels", "--python", str(python)]
    argv += ["--wheel-index", url, *GTX_1080, "--yes", "--no-verify"]
    env = {**_env(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 128 + signal.SIGINT, done.stderr
    assert _no_traceback_of_ours(done.stderr), done.stderr
    assert "pip had finished" in done.stderr, done.stderr
    assert _assert_whole(python, old, new, done) == new
