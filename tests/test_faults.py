"""One test per row of the "What pickvariant does when…" table (docs/reference/faults.md).

The table is read from docs/reference/faults.md: every row's scenario must exist here, every
scenario must have a row, and the exit code each scenario observes must be the one
the README promises. Faults are real where they can be (files, permissions, signals,
a pty, subprocesses); NVML is the pynvml stand-in of fakenvml.py, put where the real
module is imported.
"""

from __future__ import annotations

import errno
import json
import os
import pty
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import test_trust as trust
from buildrepo import PIN_28, as_upstream, commit_branch, fork_of, make_build_repo, recipe
from conftest import REPO, cli_runner, cpuinfo_path, fresh_venv, require
from fakenvml import ERROR_TEXT, H200, fake_nvml, skip_where_the_nvidia_driver_is_installed
from typer.testing import Result

from pickvariant._base import settings
from pickvariant.cli.main import app
from pickvariant.machine import cpu, gpu

runner = cli_runner()
SKYLAKE = cpuinfo_path("linux-rhel7-skylake_avx512")
HASWELL = cpuinfo_path("linux-rhel7-haswell")
TWO_CORES = cpuinfo_path("linux-kvm-xeon-2core")
INSTALL = ["install", "--cpuinfo", str(HASWELL), "--gpu", "8.6", "--driver", "580.95.05", "--generate"]
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def readme_rows() -> list[tuple[str, int]]:
    text = (REPO / "docs" / "reference" / "faults.md").read_text(encoding="utf-8")
    section = text.split("## What pickvariant does when", 1)[1].split("\n## ", 1)[0]
    return [
        (key, int(code)) for key, code in re.findall(r"^\| `([a-z0-9-]+)` \|.*\| (\d+) \|\s*$", section, re.MULTILINE)
    ]


@dataclass
class Ctx:
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    flox_calls: Callable[[], list[dict]]

    def cli(self, *args: str, env: dict[str, str] | None = None) -> Result:
        """Run pickvariant in-process; whatever happens, no traceback and, for exit 2/3, one line."""
        result = runner.invoke(app, list(args), env=env)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
        if result.exit_code in (2, 3):
            assert result.stderr.startswith("pickvariant: ") and result.stderr.count("\n") == 1, result.stderr
        return result

    def detect(self, *args: str, env: dict[str, str] | None = None) -> tuple[Result, dict | None]:
        result = self.cli("detect", "--format", "json", *args, env=env)
        return result, json.loads(result.stdout) if result.stdout.strip() else None

    def dump(self, name: str, text: str | bytes) -> Path:
        path = self.tmp / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return path

    def with_nvml(self, module: Any) -> None:
        """Detection as on a machine whose NVIDIA library loads and whose pynvml is `module`."""
        self.monkeypatch.setattr(gpu, "nvml_library_loads", lambda: True)
        self.monkeypatch.setattr(gpu, "nvml_binding", lambda: module)


SCENARIOS: dict[str, Callable[[Ctx], int]] = {}


def row(key: str) -> Callable[[Callable[[Ctx], int]], Callable[[Ctx], int]]:
    def register(scenario: Callable[[Ctx], int]) -> Callable[[Ctx], int]:
        SCENARIOS[key] = scenario
        return scenario

    return register


@pytest.fixture
def ctx(tmp_path, monkeypatch, fake_flox) -> Ctx:
    monkeypatch.chdir(tmp_path)
    # The developer's own settings must not leak into a scenario.
    for name in (*settings.ALL, "CUDA_VISIBLE_DEVICES", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "sys").mkdir()
    monkeypatch.setenv(settings.SYSFS, str(tmp_path / "sys"))  # no AMD or Intel GPU but those a scenario puts there
    return Ctx(tmp_path, monkeypatch, fake_flox)


@pytest.mark.parametrize(("key", "documented_exit"), readme_rows())
def test_readme_row(ctx: Ctx, key: str, documented_exit: int) -> None:
    assert key in SCENARIOS, f"faults.md row {key!r} has no scenario in {__file__}"
    assert SCENARIOS[key](ctx) == documented_exit


def test_every_scenario_is_a_readme_row() -> None:
    rows = [key for key, _ in readme_rows()]
    assert len(rows) == len(set(rows)) and len(rows) >= 30
    assert sorted(SCENARIOS) == sorted(rows)


# --- CPU dumps -------------------------------------------------------------------


@row("cpuinfo-garbage")
def _(ctx: Ctx) -> int:
    codes = set()
    for name, content, says in (
        ("binary", bytes(range(256)) * 4, "binary data"),
        ("licence", "MIT License\n\nPermission is hereby granted\n", "not a /proc/cpuinfo dump"),
        ("empty", "", "not a /proc/cpuinfo dump"),
    ):
        result, _ = ctx.detect("--cpuinfo", str(ctx.dump(name, content)), "--no-gpu")
        assert says in result.stderr and not result.stdout
        codes.add(result.exit_code)
    (code,) = codes
    return code


@row("cpuinfo-huge")
def _(ctx: Ctx) -> int:
    huge = ctx.tmp / "huge"
    with open(huge, "wb") as handle:
        handle.truncate(cpu.MAX_CPUINFO_BYTES + 1)
    result, _ = ctx.detect("--cpuinfo", str(huge), "--no-gpu")
    assert "larger than 16 MiB" in result.stderr
    return result.exit_code


@row("cpuinfo-truncated")
def _(ctx: Ctx) -> int:
    whole = TWO_CORES.read_text(encoding="utf-8")
    # Cut the second core's flags line just after "avx5": that core loses every AVX-512 flag.
    cut = whole[: whole.rindex("avx512f") + 4]
    _, full = ctx.detect("--cpuinfo", str(TWO_CORES), "--no-gpu")
    result, data = ctx.detect("--cpuinfo", str(ctx.dump("cut", cut)), "--no-gpu")
    assert full["recommendation"]["cpu_isa"] == "avx512"
    assert data["recommendation"]["cpu_isa"] == "avx2"
    assert "avx5" not in data["hardware"]["cpu"]["flags"]
    assert any("does not end with a newline" in note and "'avx5'" in note for note in data["notes"])
    return result.exit_code


@row("cpuinfo-empty-flags")
def _(ctx: Ctx) -> int:
    whole = TWO_CORES.read_text(encoding="utf-8")
    first = whole.index("\nflags")
    line_end = whole.index("\n", first + 1)
    emptied = whole[:first] + "\nflags\t\t:" + whole[line_end:]
    result, data = ctx.detect("--cpuinfo", str(ctx.dump("empty-flags", emptied)), "--no-gpu")
    assert data["recommendation"] is None and data["hardware"]["cpu"]["flags"] == []
    assert any("1 of 2 cores show an empty flags line" in note for note in data["notes"])
    assert "--cpuinfo" in result.stderr
    return result.exit_code


@row("cpuinfo-hybrid")
def _(ctx: Ctx) -> int:
    block = SKYLAKE.read_text(encoding="utf-8").strip()
    efficient = re.sub(r" avx512\w*", "", block).replace("processor\t: 0", "processor\t: 1")
    result, data = ctx.detect("--cpuinfo", str(ctx.dump("hybrid", f"{block}\n\n{efficient}\n\n")), "--no-gpu")
    assert data["recommendation"]["cpu_isa"] == "avx2"
    assert not [flag for flag in data["hardware"]["cpu"]["flags"] if flag.startswith("avx512")]
    assert any("common to all 2 cores" in note for note in data["notes"])
    return result.exit_code


@row("cpuinfo-crlf")
def _(ctx: Ctx) -> int:
    text = TWO_CORES.read_text(encoding="utf-8")
    _, unix = ctx.detect("--cpuinfo", str(TWO_CORES), "--gpu", "9.0", "--driver", "580.95.05")
    result, windows = ctx.detect(
        "--cpuinfo", str(ctx.dump("crlf", text.replace("\n", "\r\n"))), "--gpu", "9.0", "--driver", "580.95.05"
    )
    assert windows["recommendation"] == unix["recommendation"] and windows["recommendation"] is not None
    assert windows["hardware"]["cpu"] == unix["hardware"]["cpu"]
    return result.exit_code


@row("cpuinfo-unreadable")
def _(ctx: Ctx) -> int:
    ctx.monkeypatch.setattr(cpu, "PROC_CPUINFO", ctx.tmp)  # a directory: read() fails like EACCES would
    result, data = ctx.detect("--no-gpu")
    assert data["recommendation"] is None and data["hardware"]["cpu"]["flags"] == []
    assert any("cannot read" in note for note in data["notes"])
    assert "--cpuinfo" in result.stderr
    return result.exit_code


# --- Stated facts and the catalog ------------------------------------------------


@row("bad-capability")
def _(ctx: Ctx) -> int:
    codes = {ctx.detect("--gpu", text)[0].exit_code for text in ("9.0a", "hopper", "sm_9", "")}
    result, _ = ctx.detect("--gpu", "9.0a")
    assert "not a compute capability" in result.stderr and "sm_89" in result.stderr
    (code,) = codes
    return code


@row("bad-driver")
def _(ctx: Ctx) -> int:
    result, _ = ctx.detect("--gpu", "9.0", "--driver", "580.x")
    assert "not an NVIDIA driver version" in result.stderr
    env_result, _ = ctx.detect("--gpu", "9.0", env={"PICKVARIANT_DRIVER": "latest"})
    assert env_result.exit_code == result.exit_code and env_result.stderr.startswith(
        "pickvariant: PICKVARIANT_DRIVER: "
    )
    cuda_result, _ = ctx.detect("--gpu", "11.0", "--driver-cuda", "13")
    assert (
        cuda_result.exit_code == result.exit_code and "--driver-cuda: '13' is not a CUDA version" in cuda_result.stderr
    )
    return result.exit_code


@row("driver-cannot-drive")
def _(ctx: Ctx) -> int:
    codes = set()
    for capability, driver, first in (
        ("12.0", "535.104.05", "an R570 driver ("),
        ("10.0", "550.54.15", "an R570 driver ("),
        ("10.3", "570.133.20", "a driver >= 580.82.07 "),
    ):
        result, data = ctx.detect("--cpuinfo", str(SKYLAKE), "--gpu", capability, "--driver", driver)
        assert data["recommendation"] is None
        assert any(
            f"driver {driver} cannot drive GPU 0 (compute capability {capability})" in reason
            for reason in data["reasons"]
        )
        assert any(hint.startswith(first) for hint in data["hints"]), data["hints"]
        codes.add(result.exit_code)
    result, data = ctx.detect("--cpuinfo", str(SKYLAKE), "--gpu", "7.0", "--driver", "590.44.01")
    assert any("newer than R580, the last driver branch" in reason for reason in data["reasons"])
    assert any("R580 or older" in hint for hint in data["hints"])
    codes.add(result.exit_code)
    (code,) = codes
    return code


SAPPHIRE_H100 = [
    "--cpuinfo",
    str(cpuinfo_path("linux-unknown-sapphirerapids")),
    "--gpu",
    "9.0",
    "--driver",
    "580.95.05",
]


@row("with-unknown-torch")
def _(ctx: Ctx) -> int:
    result, data = ctx.detect(*SAPPHIRE_H100, "--with", "torchaudio")
    assert data["recommendation"]["package"] == "pytorch-python313-cuda13_1-sm90-avx512"
    assert data["set"]["generated"] == ["torchaudio-python313-cuda13_1-sm90-avx512"]
    assert [c["torch_relation"] for c in data["companions"]] == ["generated"]
    unknown = [r for r in data["rejected"] if r["choice"].startswith("torchaudio-") and "unknown torch" in r["why"]]
    assert unknown and all(
        "a recipe that pins nixpkgs (or imports the pytorch recipe) would settle it" in r["why"] for r in unknown
    )
    assert any("20-40 minutes" in reason for reason in data["reasons"])
    return result.exit_code


@row("with-two-own-torches")
def _(ctx: Ctx) -> int:
    result = ctx.cli(
        "install", *SAPPHIRE_H100, "--with", "torchvision,vllm", "--org", "acme", "--dir", str(ctx.tmp / "env"), "--yes"
    )
    assert "nothing published makes it on one PyTorch here" in result.stderr
    assert result.stderr.endswith("install it with --build\n") and result.stderr.count("\n") == 1
    told = ctx.detect(*SAPPHIRE_H100, "--with", "torchvision,vllm")[1]
    assert any(
        "torchvision-python313-cuda12_9-sm90-avx512, vllm-python313-cuda12_9-sm90-avx512 each bring a torch of their own build"
        in reason
        for reason in told["reasons"]
    )
    assert ctx.flox_calls() == [] and not (ctx.tmp / "env").exists()
    return result.exit_code


@row("jetson-driver-number")
def _(ctx: Ctx) -> int:
    thor = ["--cpuinfo", str(cpuinfo_path("linux-rhel9-neoverse_v2")), "--gpu", "11.0"]
    result, data = ctx.detect(*thor, "--driver", "580.00")
    assert data["recommendation"] is None
    told = " ".join(data["reasons"] + data["hints"])
    assert "--driver-cuda" in told and "580.65.06" not in told and "driver >=" not in told
    stated, data = ctx.detect(*thor, "--driver", "580.00", env={"PICKVARIANT_DRIVER_CUDA": "13.0"})
    assert stated.exit_code == 0 and data["recommendation"]["package"] == "pytorch-python313-cuda13_0-sm110-armv9"
    assert data["hardware"]["driver"] == {"version": "580.00", "cuda": "13.0"}
    return result.exit_code


@row("catalog-broken")
def _(ctx: Ctx) -> int:
    codes = set()
    for field, mutate in (
        ("cuda_releases[0].min_driver", lambda d: d["cuda_releases"][0].pop("min_driver")),
        ("variants[3].cpu_isa", lambda d: d["variants"][3].update(cpu_isa="avx9")),
        ("variants[9].gpu_arch", lambda d: d["variants"][9].update(gpu_arch="sm99")),
        ("variants[967].package", lambda d: d["variants"].append(dict(d["variants"][0]))),
    ):
        data = json.loads((REPO / "catalog.json").read_text(encoding="utf-8"))
        mutate(data)
        site = ctx.dump("site-catalog.json", json.dumps(data))
        result = ctx.cli("list", env={"PICKVARIANT_CATALOG": str(site)})
        assert field in result.stderr and str(site) in result.stderr, (field, result.stderr)
        codes.add(result.exit_code)
    (code,) = codes
    return code


@row("catalog-not-json")
def _(ctx: Ctx) -> int:
    codes = set()
    for content, says in (("{not json", "not valid JSON"), (b"\xff\xfe\x00", "not valid JSON")):
        result = ctx.cli("list", env={"PICKVARIANT_CATALOG": str(ctx.dump("catalog.json", content))})
        assert says in result.stderr
        codes.add(result.exit_code)
    missing = ctx.cli("list", env={"PICKVARIANT_CATALOG": str(ctx.tmp / "nowhere.json")})
    assert "cannot read catalog" in missing.stderr
    codes.add(missing.exit_code)
    (code,) = codes
    return code


# --- NVML and GPUs -----------------------------------------------------------------


@row("nvml-missing")
def _(ctx: Ctx) -> int:
    import pynvml

    skip_where_the_nvidia_driver_is_installed()
    result, data = ctx.detect("--cpuinfo", str(HASWELL))
    assert data["hardware"]["gpus"] == [] and not data["hardware"]["gpu_detection_inconclusive"]
    assert any("libnvidia-ml.so.1" in note for note in data["notes"])
    assert data["recommendation"]["gpu_arch"] is None
    # The real pynvml, past the cheap library check, reaches the same answer.
    ctx.with_nvml(pynvml)
    _, real = ctx.detect("--cpuinfo", str(HASWELL))
    assert real["recommendation"] == data["recommendation"]
    assert any(note.startswith("no NVIDIA GPU") for note in real["notes"]), real["notes"]
    return result.exit_code


@row("driver-not-loaded")
def _(ctx: Ctx) -> int:
    ctx.with_nvml(fake_nvml(init_error="DriverNotLoaded"))
    result, data = ctx.detect("--cpuinfo", str(HASWELL))
    assert data["hardware"]["gpus"] == [] and data["recommendation"]["gpu_arch"] is None
    assert "no NVIDIA GPU: Driver Not Loaded" in data["notes"]
    return result.exit_code


@row("nvml-raises")
def _(ctx: Ctx) -> int:
    codes = set()
    for error in ("NoPermission", "LibRmVersionMismatch", "Unknown"):
        ctx.with_nvml(fake_nvml(init_error=error))
        result, data = ctx.detect("--cpuinfo", str(HASWELL))
        assert data["recommendation"] is None and data["hardware"]["gpu_detection_inconclusive"]
        assert f"NVML failed to start: {ERROR_TEXT[error]}" in data["notes"] and "--gpu" in result.stderr
        codes.add(result.exit_code)
    (code,) = codes
    return code


@row("nvml-hangs")
def _(ctx: Ctx) -> int:
    release = threading.Event()
    ctx.with_nvml(fake_nvml([H200], init_blocks_until=release))
    ctx.monkeypatch.setattr(gpu, "NVML_TIMEOUT_S", 0.5)
    started = time.monotonic()
    try:
        result, data = ctx.detect("--cpuinfo", str(HASWELL))
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert data["recommendation"] is None and any("did not answer within 0.5 s" in note for note in data["notes"])
    return result.exit_code


@row("gpu-lost")
def _(ctx: Ctx) -> int:
    ctx.with_nvml(fake_nvml([H200, H200], device_error=(1, "GpuIsLost")))
    result, data = ctx.detect("--cpuinfo", str(SKYLAKE))
    assert [g["name"] for g in data["hardware"]["gpus"]] == ["NVIDIA H200"]
    assert data["recommendation"] is None and any("GPU 1 could not be queried" in note for note in data["notes"])
    return result.exit_code


@row("unknown-gpu")
def _(ctx: Ctx) -> int:
    result, data = ctx.detect("--cpuinfo", str(SKYLAKE), "--gpu", "13.0", "--driver", "600.10")
    assert data["recommendation"] is None
    assert any("newer than every GPU architecture of this catalog (newest 12.1)" in hint for hint in data["hints"])
    assert "PICKVARIANT_CATALOG" in result.stderr
    return result.exit_code


@row("mig")
def _(ctx: Ctx) -> int:
    ctx.with_nvml(fake_nvml([dict(H200, mig=1, instances=3)]))
    result, data = ctx.detect("--cpuinfo", str(SKYLAKE))
    assert data["hardware"]["gpus"][0]["mig_enabled"] is True and data["hardware"]["gpus"][0]["mig_instances"] == 3
    assert data["recommendation"]["gpu_arch"] == "sm90"
    text = ctx.cli("detect", "--cpuinfo", str(SKYLAKE), env={"COLUMNS": "200"})
    assert "MIG on: 3 instances" in text.stdout
    return result.exit_code


@row("cuda-visible-devices")
def _(ctx: Ctx) -> int:
    ctx.with_nvml(
        fake_nvml(
            [
                {"name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "mem": 81920},
                {"name": "NVIDIA RTX A6000", "cc": (8, 6), "mem": 49140},
            ]
        )
    )
    result, data = ctx.detect("--cpuinfo", str(SKYLAKE), env={"CUDA_VISIBLE_DEVICES": "1"})
    assert data["hardware"]["cuda_visible_devices"] == "1" and len(data["hardware"]["gpus"]) == 2
    assert data["recommendation"]["gpu_arch"] == "sm80"  # runs on both, not sm86 for the visible one alone
    assert any("see 1 of the 2 GPUs" in reason for reason in data["reasons"])
    # The wheel answer says the same of the machine's GPUs (one stage words them for every source).
    _, wheels = ctx.detect("--source", "wheels", "--cpuinfo", str(SKYLAKE), env={"CUDA_VISIBLE_DEVICES": "1"})
    assert wheels is not None
    hidden_said = [reason for reason in data["reasons"] if "CUDA_VISIBLE_DEVICES" in reason]
    assert hidden_said and [r for r in wheels["reasons"] if "CUDA_VISIBLE_DEVICES" in r] == hidden_said
    # verify probes what CUDA shows; with every GPU hidden it cannot vouch for any.
    require(_has_torch(), "torch is not installed (pip install torch==2.13.0)")
    hidden = ctx.cli("verify", "--python", sys.executable, "--quick", env={"CUDA_VISIBLE_DEVICES": ""})
    assert hidden.exit_code == 1 and "hides all 2 GPU(s)" in hidden.stdout
    return result.exit_code


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


# --- Terminals, colours, locales ---------------------------------------------------


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args], capture_output=True, env={**os.environ, **(env or {})}, timeout=60
    )


def _run_in_pty(*args: str, env: dict[str, str]) -> tuple[int, bytes]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: pickvariant with a terminal on stdin, stdout and stderr
        os.execvpe(sys.executable, [sys.executable, "-m", "pickvariant", *args], {**os.environ, **env})
    output = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output


@row("no-terminal-output")
def _(ctx: Ctx) -> int:
    done = _run(
        "detect", "--cpuinfo", str(SKYLAKE), "--gpu", "9.0", "--driver", "580.95.05", env={"TERM": "xterm-256color"}
    )
    assert (
        b"\x1b[" not in done.stdout + done.stderr
        and b"Recommendation: pytorch-python313-cuda13_1-sm90-avx512" in done.stdout
    )
    code, shown = _run_in_pty(
        "detect", "--cpuinfo", str(SKYLAKE), "--gpu", "9.0", "--driver", "580.95.05", env={"TERM": "xterm-256color"}
    )
    assert code == 0 and SGR.search(shown.decode()), "on a terminal the same command does colour its output"
    # Every source's text answer: the wheels' first line is coloured on a terminal too, and plain through a pipe.
    wheels = ("detect", "--source", "wheels", "--python", sys.executable, "--cpuinfo", str(SKYLAKE), "--gpu", "9.0")
    piped = _run(*wheels, "--driver", "580.95.05", env={"TERM": "xterm-256color"})
    code, shown = _run_in_pty(*wheels, "--driver", "580.95.05", env={"TERM": "xterm-256color"})
    first = shown.decode().splitlines()[0]
    assert piped.returncode == 0 and b"\x1b[" not in piped.stdout and code == 0
    assert first == f"\x1b[1;32m{piped.stdout.decode().splitlines()[0]}\x1b[0m"
    return done.returncode


@row("no-terminal-install")
def _(ctx: Ctx) -> int:
    result = ctx.cli(*INSTALL, "--build-dir", str(ctx.tmp / "b"))
    assert "--yes" in result.stderr and ctx.flox_calls() == [] and not (ctx.tmp / "b").exists()
    return result.exit_code


@row("no-color")
def _(ctx: Ctx) -> int:
    args = ("detect", "--cpuinfo", str(SKYLAKE), "--gpu", "9.0", "--driver", "580.95.05")
    code, no_color = _run_in_pty(*args, env={"NO_COLOR": "1", "TERM": "xterm-256color"})
    colours = [
        codes
        for codes in SGR.findall(no_color.decode())
        if re.search(r"(^|;)(3[0-9]|4[0-9]|9[0-7]|10[0-7])(;|$)", codes)
    ]
    assert code == 0 and colours == [] and b"Recommendation" in no_color
    dumb_code, dumb = _run_in_pty(*args, env={"TERM": "dumb"})
    assert dumb_code == 0 and b"\x1b[" not in dumb and b"Recommendation" in dumb
    return code


@row("markup-in-input")
def _(ctx: Ctx) -> int:
    text = SKYLAKE.read_text(encoding="utf-8").replace("Intel(R) Xeon(R)", "[/] [bold red]Xeon | `x`")
    result = ctx.cli("detect", "--cpuinfo", str(ctx.dump("[bold]dump", text)), "--no-gpu", env={"COLUMNS": "250"})
    assert "[/] [bold red]Xeon" in result.stdout and "[bold]dump" in result.stdout
    markdown = ctx.cli("detect", "--cpuinfo", str(ctx.tmp / "[bold]dump"), "--no-gpu", "--format", "markdown")
    assert "| CPU | \\[/\\] \\[bold red\\]Xeon \\| \\`x\\`" in markdown.stdout  # the table keeps its columns
    data = json.loads((REPO / "catalog.json").read_text(encoding="utf-8"))
    data["source"]["repo"] = "[/] Pascal | [red]"  # a catalog from elsewhere: its variants and source are its own
    site = ctx.dump("site-catalog.json", json.dumps(data))
    listed = ctx.cli("list", env={"PICKVARIANT_CATALOG": str(site), "COLUMNS": "250"})
    assert listed.exit_code == 0 and "of [/] Pascal | [red] at" in listed.stdout
    return result.exit_code


@row("non-utf8-locale")
def _(ctx: Ctx) -> int:
    text = SKYLAKE.read_text(encoding="utf-8").replace("Intel(R) Xeon(R)", "Intel® Xeon® “Gold”…")
    dump = ctx.dump("fancy", text)
    codes = set()
    for env in (
        {"PYTHONIOENCODING": "ascii"},
        {"PYTHONIOENCODING": "latin-1"},
        {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": ""},
    ):
        for fmt in ("text", "markdown", "json"):
            done = _run("detect", "--cpuinfo", str(dump), "--no-gpu", "--format", fmt, env=env)
            assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
            assert b"Xeon" in done.stdout and b"pytorch-python313-cpu-avx512" in done.stdout
            codes.add(done.returncode)
    (code,) = codes
    return code


# --- Read-only places, clobbering, escaping paths ---------------------------------


@row("readonly-cache")
def _(ctx: Ctx) -> int:
    # Under a regular file nothing can be created, even by root (for whom chmod 0o500 means nothing).
    blocker = ctx.dump("not-a-directory", "")
    env = {"HOME": str(blocker / "home"), "XDG_CACHE_HOME": str(blocker / "cache")}
    assert ctx.cli("detect", "--cpuinfo", str(HASWELL), "--no-gpu", env=env).exit_code == 0
    assert ctx.cli("list", env=env).exit_code == 0
    assert ctx.cli("recipe", "pytorch-python313-cuda13_1-sm86-avx2", "--generate", env=env).exit_code == 0
    assert ctx.cli(*INSTALL, "--dry-run", env=env).exit_code == 0
    project = ctx.tmp / "project"
    project.mkdir()
    result = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(project), "--yes", "--no-verify", env=env)
    assert "cannot create a log file" in result.stderr and "XDG_CACHE_HOME" in result.stderr
    assert ctx.flox_calls() == [] and list(project.iterdir()) == []
    return result.exit_code


@row("clobber")
def _(ctx: Ctx) -> int:
    out = ctx.tmp / "recipes"
    package = "pytorch-python313-cuda13_1-sm90-avx512"
    assert ctx.cli("recipe", package, "--generate", "-o", str(out)).exit_code == 0
    mine = out / f"{package}.nix"
    mine.write_text("# my edits\n")
    mine.chmod(0o600)
    refused = ctx.cli("recipe", package, "--generate", "-o", str(out))
    assert "--force" in refused.stderr and mine.read_text() == "# my edits\n"
    forced = ctx.cli("recipe", package, "--generate", "-o", str(out), "--force")
    assert (
        forced.exit_code == 0 and "pytorch" in mine.read_text() and sorted(p.name for p in out.iterdir()) == [mine.name]
    )
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600  # replaced, with the permissions it had
    return refused.exit_code


@row("symlink")
def _(ctx: Ctx) -> int:
    outside = ctx.tmp / "outside"
    outside.mkdir()
    package = "pytorch-python313-cuda13_1-sm86-avx2"
    out = ctx.tmp / "recipes"
    out.mkdir()
    (out / f"{package}.nix").symlink_to(outside / "victim.nix")
    refused = ctx.cli("recipe", package, "--generate", "-o", str(out), "--force")
    assert "symbolic link" in refused.stderr
    # A build directory whose .flox/pkgs points elsewhere: the recipe would land outside it.
    build = ctx.tmp / "build"
    subprocess.run(["git", "init", "-q", str(build)], check=True)
    subprocess.run(["flox", "init", "-d", str(build)], check=True, capture_output=True)
    (build / ".flox" / "pkgs").symlink_to(outside, target_is_directory=True)
    escaped = ctx.cli(*INSTALL, "--build-dir", str(build), "--yes", "--no-verify")
    assert "outside" in escaped.stderr and escaped.exit_code == refused.exit_code
    assert list(outside.iterdir()) == [] and [call["argv"][0] for call in ctx.flox_calls()] == ["init"]
    return refused.exit_code


@row("path-escape")
def _(ctx: Ctx) -> int:
    out = ctx.tmp / "recipes"
    codes = set()
    for name in ("../../etc/passwd", "/tmp/pickvariant-escape", "..", "pytorch-python313-cpu-avx2/../../x"):
        result = ctx.cli("recipe", name, "--generate", "-o", str(out))
        assert "not a package of the catalog" in result.stderr
        codes.add(result.exit_code)
        installed = ctx.cli(*INSTALL, "--package", name, "--dry-run")
        codes.add(installed.exit_code)
    assert not out.exists() and not Path("/tmp/pickvariant-escape.nix").exists()
    (code,) = codes
    return code


@row("shell-metacharacters")
def _(ctx: Ctx) -> int:
    build = ctx.tmp / "b; touch PWNED $(touch PWNED2) `touch PWNED3` & echo"
    result = ctx.cli(*INSTALL, "--build-dir", str(build), "--yes", "--no-verify")
    assert result.exit_code == 0, result.output
    directories = [call["argv"][call["argv"].index("-d") + 1] for call in ctx.flox_calls() if "-d" in call["argv"]]
    assert directories and set(directories) == {str(build), str(ctx.tmp)}
    assert not list(ctx.tmp.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    return result.exit_code


@row("write-fails")
def _(ctx: Ctx) -> int:
    import pickvariant._base.files as fsutil

    out = ctx.tmp / "recipes"
    package = "pytorch-python313-cuda13_1-sm90-avx512"
    out.mkdir()
    mine = out / f"{package}.nix"
    mine.write_text("# the old recipe\n")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    ctx.monkeypatch.setattr(fsutil.os, "fsync", disk_full)
    result = ctx.cli("recipe", package, "--generate", "-o", str(out), "--force")
    assert "No space left on device" in result.stderr
    assert mine.read_text() == "# the old recipe\n" and [p.name for p in out.iterdir()] == [mine.name]
    return result.exit_code


@row("not-root")
def _(ctx: Ctx) -> int:
    spy_dir = ctx.tmp / "spies"
    spy_dir.mkdir()
    log = ctx.tmp / "escalations"
    for name in ("sudo", "su", "doas", "pkexec", "runuser"):
        spy = spy_dir / name
        spy.write_text(f"#!/bin/sh\necho {name} \"$@\" >> '{log}'\nexit 1\n")
        spy.chmod(spy.stat().st_mode | stat.S_IEXEC)
    ctx.monkeypatch.setenv("PATH", f"{spy_dir}{os.pathsep}{os.environ['PATH']}")
    project = ctx.tmp / "project"
    project.mkdir()
    published = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(project), "--yes", "--no-verify")
    # Another environment: one holding the published torch already refuses a second torch, as Flox's buildenv does.
    built = ctx.cli(
        *INSTALL, "--build-dir", str(ctx.tmp / "build"), "--dir", str(ctx.tmp / "project-built"), "--yes", "--no-verify"
    )
    assert published.exit_code == built.exit_code == 0, built.output
    assert not log.exists(), log.read_text()
    assert all(call["argv"][0] in ("auth", "init", "install", "build") for call in ctx.flox_calls())
    return built.exit_code


# --- Flox and the probe -------------------------------------------------------------

MINE = '# mine: café\n[vars]\nGREETING = "hello"\n'


def _users_flox_environment(ctx: Ctx) -> tuple[Path, Path]:
    """A real environment (made by the stand-in's flox init) whose manifest the user has edited."""
    project = ctx.tmp / "project"
    subprocess.run(["flox", "init", "-d", str(project)], check=True, capture_output=True)
    manifest = project / ".flox" / "env" / "manifest.toml"
    manifest.write_text(manifest.read_text() + MINE, encoding="utf-8")
    manifest.chmod(0o600)
    (ctx.tmp / "calls.jsonl").unlink()
    return project, manifest


def _untouched(manifest: Path) -> bool:
    return (
        manifest.read_text(encoding="utf-8").endswith(MINE)
        and "[install]\n\n" in manifest.read_text()
        and stat.S_IMODE(manifest.stat().st_mode) == 0o600
    )


def _gone(pid: int) -> bool:
    """True once `pid` has exited (a zombie not yet reaped by its new parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _as_from_a_shell() -> None:
    """Start pickvariant with SIGINT as a shell starts it (default, unblocked), whatever state
    earlier tests left the test process in: a disposition set there would be inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _signal_while_flox_runs(ctx: Ctx, sig: signal.Signals, *, child_ignores_sigint: bool) -> tuple[int, str]:
    """A real signal to a real pickvariant process while the fake flox is installing; flox's own child ignores
    SIGINT (pickvariant must wait out its grace and escalate) or stops at it."""
    project, manifest = _users_flox_environment(ctx)
    ctx.monkeypatch.setenv("FAKE_FLOX_MODE", "sleep:30")
    if not child_ignores_sigint:
        ctx.monkeypatch.setenv("FAKE_FLOX_CHILD_HONOURS_SIGINT", "1")
    child_pid = ctx.tmp / "builder.pid"
    ctx.monkeypatch.setenv("FAKE_FLOX_CHILD", str(child_pid))
    process = subprocess.Popen(
        [sys.executable, "-m", "pickvariant", *INSTALL, "--org", "acme", "--dir", str(project), "--yes", "--no-verify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_shell,
    )
    for _ in range(200):
        if ctx.flox_calls():
            break
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(sig)
    _, err = process.communicate(timeout=90)
    assert "was stopped" in err and "Traceback" not in err
    assert _untouched(manifest)
    assert _gone(ctx.flox_calls()[-1]["pid"])  # flox did not outlive pickvariant
    assert _gone(int(child_pid.read_text()))  # nor did what flox started, though it ignores SIGINT
    return process.returncode, err


@row("ctrl-c")
def _(ctx: Ctx) -> int:
    code, err = _signal_while_flox_runs(ctx, signal.SIGINT, child_ignores_sigint=True)
    assert "interrupted" in err
    return code


@row("sigterm")
def _(ctx: Ctx) -> int:
    code, err = _signal_while_flox_runs(ctx, signal.SIGTERM, child_ignores_sigint=False)
    assert "terminated (SIGTERM)" in err
    return code


@row("broken-pipe")
def _(ctx: Ctx) -> int:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (`| head`) is gone before pickvariant writes a byte
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pickvariant", "list"], stdout=write_end, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(write_end)
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr, done.stderr
    return done.returncode


@row("flox-missing")
def _(ctx: Ctx) -> int:
    ctx.monkeypatch.setenv("PATH", str(ctx.tmp / "empty-bin"))
    result = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(ctx.tmp), "--yes", "--no-verify")
    assert "install Flox" in result.stderr and "https://flox.dev" in result.stderr
    assert "log in" not in result.stderr.lower()  # logging in would not help: there is no flox to log in with
    # A dry run says so too, before anyone runs the plan.
    dry = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(ctx.tmp), "--dry-run")
    assert dry.exit_code == 0 and "warning: flox is not on PATH: install Flox" in dry.stdout
    return result.exit_code


@row("flox-fails")
def _(ctx: Ctx) -> int:
    project, manifest = _users_flox_environment(ctx)
    (ctx.tmp / "flox-state" / "catalog.json").write_text("{}")  # the org published nothing
    failed = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(project), "--yes", "--no-verify")
    assert (
        "exit code 1" in failed.stderr
        and "✘ ERROR: Could not find package" in failed.stderr
        and ".log" in failed.stderr
    )
    assert _untouched(manifest)
    ctx.monkeypatch.setenv("FAKE_FLOX_MODE", "sleep:30")
    slow = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(project), "--yes", "--no-verify", "--timeout", "0.5")
    assert "timed out after 0.5 s" in slow.stderr and slow.exit_code == failed.exit_code
    return failed.exit_code


def _fake_python(ctx: Ctx, body: str) -> str:
    path = ctx.tmp / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@row("probe-crash")
def _(ctx: Ctx) -> int:
    codes = set()
    for sig, says in (("ILL", "illegal instruction"), ("SEGV", "segmentation fault")):
        result = ctx.cli("verify", "--python", _fake_python(ctx, f"kill -{sig} $$"))
        assert "FAIL" in result.stdout and f"SIG{sig}" in result.stdout and says in result.stdout
        codes.add(result.exit_code)
    (code,) = codes
    return code


@row("no-torch")
def _(ctx: Ctx) -> int:
    result = ctx.cli(
        "verify", "--python", _fake_python(ctx, "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1")
    )
    assert "FAIL" in result.stdout and "no torch installed" in result.stdout
    missing = ctx.cli("verify", "--python", str(ctx.tmp / "no-such-python"))
    assert "cannot run" in missing.stdout and missing.exit_code == result.exit_code
    return result.exit_code


@row("last-install-corrupt")
def _(ctx: Ctx) -> int:
    from pickvariant.install.state import last_install_python

    require(_has_torch(), "torch is not installed (pip install torch==2.13.0)")
    record = ctx.tmp / "cache" / "pickvariant" / "last-install.json"
    record.parent.mkdir(parents=True)
    for content in (
        b"{half",
        b"\xff\xfe",
        b'["not", "a", "record"]',
        b'{"python": "python3; rm -rf ~"}',
        b'{"python": [1, 2]}',
        b'{"python": []}',
    ):
        record.write_bytes(content)
        assert last_install_python() is None, content
    result = ctx.cli("verify", "--quick", "--format", "json")
    assert json.loads(result.stdout)["probe"]["executable"] == sys.executable
    return result.exit_code


# --- First impressions (issue 10) ----------------------------------------------------


@row("no-arguments")
def _(ctx: Ctx) -> int:
    done = _run()
    shown = done.stdout + done.stderr
    assert (
        b"\\n" not in shown and b"Usage: pickvariant" in shown and b"\n  detect " in shown and b"Traceback" not in shown
    )
    return done.returncode


@row("not-a-regular-file")
def _(ctx: Ctx) -> int:
    from pickvariant._base import files

    fifo = ctx.tmp / "fifo"
    os.mkfifo(fifo)
    ctx.monkeypatch.setattr(files, "PIPE_WAIT_S", 0.3)  # a FIFO nothing writes to is refused after this
    codes = set()
    for args, env, says in (
        (("detect", "--cpuinfo", str(fifo), "--no-gpu"), None, "nothing arrived within 0.3 s"),
        (("list",), {"PICKVARIANT_CATALOG": str(fifo)}, "not a regular file"),
        (("detect", "--cpuinfo", str(ctx.tmp), "--no-gpu"), None, "a device or directory"),
        (("detect", "--cpuinfo", "/dev/zero", "--no-gpu"), None, "a device or directory"),
    ):
        result = ctx.cli(*args, env=env)
        assert says in result.stderr, result.stderr
        codes.add(result.exit_code)
    # What a FIFO or a pipe delivers is read: process substitution and `--cpuinfo -`.
    writer = threading.Thread(target=lambda: Path(fifo).write_text(HASWELL.read_text()))
    writer.start()
    fed = ctx.cli("detect", "--cpuinfo", str(fifo), "--no-gpu", "--format", "json")
    writer.join()
    piped = subprocess.run(
        [sys.executable, "-m", "pickvariant", "detect", "--cpuinfo", "-", "--no-gpu", "--format", "json"],
        input=HASWELL.read_bytes(),
        capture_output=True,
        check=False,
    )
    assert fed.exit_code == 0 and piped.returncode == 0, (fed.output, piped.stderr)
    assert json.loads(fed.stdout)["recommendation"] == json.loads(piped.stdout)["recommendation"]
    (code,) = codes
    return code


@row("catalog-nested")
def _(ctx: Ctx) -> int:
    deep = ctx.dump("deep.json", "[" * 200_000 + "]" * 200_000)
    result = ctx.cli("list", env={"PICKVARIANT_CATALOG": str(deep)})
    assert "nested too deeply" in result.stderr
    return result.exit_code


@row("symlink-loop")
def _(ctx: Ctx) -> int:
    (ctx.tmp / "loop").symlink_to(ctx.tmp / "loop")
    (ctx.tmp / "dangling").symlink_to(ctx.tmp / "nowhere")
    codes = set()
    for target, says in (
        ("loop", "a loop of symbolic links"),
        ("loop/inner", "a loop of symbolic links"),
        ("dangling", "which does not exist"),
    ):
        result = ctx.cli(
            "recipe", "pytorch-python313-cpu-avx2", "--generate", "--branch", "main", "-o", str(ctx.tmp / target)
        )
        assert says in result.stderr, result.stderr
        codes.add(result.exit_code)
    assert not (ctx.tmp / "nowhere").exists()
    (code,) = codes
    return code


def _as_nobody(args: list[str]) -> tuple[int, str]:
    """Run pickvariant in-process in a forked child that has dropped root: permission checks then bite, as for a user."""
    runner.invoke(app, args)  # import lazily-loaded modules while they can still be read
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            result = runner.invoke(app, args)
            os.write(write_end, json.dumps([result.exit_code, result.stderr]).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as handle:
        code, stderr = json.loads(handle.read() or b'[-1, "the child wrote nothing"]')
    os.waitpid(pid, 0)
    return code, stderr


@row("unsearchable-directory")
def _(ctx: Ctx) -> int:
    locked = ctx.tmp / "locked"
    (locked / "inner").mkdir(parents=True)
    locked.chmod(0o700)
    args = [
        "recipe",
        "pytorch-python313-cpu-avx2",
        "--generate",
        "--branch",
        "main",
        "-o",
        str(locked / "inner" / "out"),
    ]
    if os.geteuid() == 0:
        code, stderr = _as_nobody(args)
    else:
        result = ctx.cli(*args)
        code, stderr = result.exit_code, result.stderr
    assert "Permission denied" in stderr and str(locked / "inner" / "out") in stderr and "Traceback" not in stderr, (
        stderr
    )
    assert stderr.count("\n") == 1
    return code


@row("output-full")
def _(ctx: Ctx) -> int:
    codes = set()
    for command in (
        ["list"],
        ["detect", "--cpuinfo", str(HASWELL), "--no-gpu", "--format", "json"],
        ["recipe", "pytorch-python313-cpu-avx2", "--generate", "--branch", "main"],
    ):
        with open("/dev/full", "wb") as full:
            done = subprocess.run(
                [sys.executable, "-m", "pickvariant", *command], stdout=full, stderr=subprocess.PIPE, timeout=60
            )
        assert done.stderr.decode() == "pickvariant: cannot write the output: No space left on device\n", done.stderr
        codes.add(done.returncode)
    closed = subprocess.run(
        [sys.executable, "-m", "pickvariant", "list"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert closed.stderr.decode() == "pickvariant: standard output is closed: nothing could be printed\n"
    codes.add(closed.returncode)
    (code,) = codes
    return code


@row("probe-floods")
def _(ctx: Ctx) -> int:
    start = time.monotonic()
    result = ctx.cli("verify", "--python", "yes")
    assert "printed more than 4 MiB and was stopped" in result.stdout and time.monotonic() - start < 60
    return result.exit_code


@row("empty-variable")
def _(ctx: Ctx) -> int:
    ctx.with_nvml(fake_nvml([H200]))
    blank = {"PICKVARIANT_GPU": "", "PICKVARIANT_DRIVER": " ", "PICKVARIANT_CPUINFO": "", "PICKVARIANT_CATALOG": ""}
    result, data = ctx.detect("--cpuinfo", str(SKYLAKE), env=blank)
    assert data["sources"]["gpus"] == "detected (NVML)" and data["sources"]["driver"] == "detected (NVML)"
    assert data["recommendation"]["gpu_arch"] == "sm90", (
        "an empty PICKVARIANT_GPU must not drop the H200 for a CPU build"
    )
    plan = ctx.cli(*INSTALL, "--dry-run", env={"PICKVARIANT_FLOX_ORG": ""})
    assert "build from the recipe" in plan.stdout
    return result.exit_code


@row("gpu-uuids")
def _(ctx: Ctx) -> int:
    ctx.with_nvml(fake_nvml([H200, H200]))
    uuid = "MIG-5c1d7e3a-1b2c-4d5e-8f90-a1b2c3d4e5f6,GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    env = {"CUDA_VISIBLE_DEVICES": uuid}
    texts, codes = [], set()
    for fmt in ("json", "markdown"):
        result = ctx.cli("report", "--format", fmt, "--python", str(ctx.tmp / "no-python"), env=env)
        texts.append(result.stdout)
        codes.add(result.exit_code)
    data = json.loads(texts[0])
    assert data["hardware"]["cuda_visible_devices"] == "MIG-<uuid>,GPU-<uuid>"
    for text in texts:
        assert "5c1d7e3a" not in text and "0a1b2c3d" not in text
    assert "MIG-<uuid>" in texts[0] and "MIG-&lt;uuid>" in texts[1]  # Markdown shows the placeholder as written
    # Without detected GPUs the variable means nothing, and the JSON says null (as README promises).
    ctx.with_nvml(fake_nvml([]))
    _, none_detected = ctx.detect("--cpuinfo", str(SKYLAKE), env=env)
    assert none_detected["hardware"]["gpus"] == [] and none_detected["hardware"]["cuda_visible_devices"] is None
    (code,) = codes
    return code


@row("bad-org")
def _(ctx: Ctx) -> int:
    codes = set()
    for org in ("-rf", "a/b", "x", "acme corp", "--dir", "a" * 64):
        result = ctx.cli(*INSTALL, "--org", org, "--dry-run")
        assert "is not a Flox organisation name" in result.stderr, (org, result.stderr)
        codes.add(result.exit_code)
    assert ctx.flox_calls() == [] and ctx.cli(*INSTALL, "--org", "acme-ml_2", "--dry-run").exit_code == 0
    (code,) = codes
    return code


@row("dir-not-a-directory")
def _(ctx: Ctx) -> int:
    result = ctx.cli(*INSTALL, "--org", "acme", "--dir", "/etc/passwd", "--yes", "--no-verify")
    assert "/etc/passwd: exists and is not a directory" in result.stderr and ctx.flox_calls() == []
    build = ctx.cli(*INSTALL, "--build-dir", "/etc/passwd", "--yes", "--no-verify")
    assert (
        "--build-dir /etc/passwd: exists and is not a directory" in build.stderr and build.exit_code == result.exit_code
    )
    return result.exit_code


@row("dir-missing")
def _(ctx: Ctx) -> int:
    target = ctx.tmp / "new" / "project"
    plan = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(target), "--dry-run")
    assert "does not exist: flox init will create it" in plan.stdout
    result = ctx.cli(*INSTALL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify")
    assert result.exit_code == 0, result.output
    assert [call["argv"][:3] for call in ctx.flox_calls()] == [
        ["auth", "status"],
        ["init", "-d", str(target)],
        ["install", "-d", str(target)],
    ]
    assert (target / ".flox" / "env.json").is_file()
    return result.exit_code


@row("ctrl-c-verify")
def _(ctx: Ctx) -> int:
    child_pid = ctx.tmp / "probe-child.pid"
    # The probe's own child stops at SIGINT (a bash background job would ignore it, and waiting out pickvariant's
    # grace for it is the ctrl-c row's case).
    # It names itself once it honours SIGINT, so the interrupt never comes while it still ignores it.
    child = (
        f"'{sys.executable}' -c 'import os, pathlib, signal, time; signal.signal(signal.SIGINT, signal.default_int_handler);"
        f' pathlib.Path("{child_pid}").write_text(str(os.getpid())); time.sleep(60)\''
    )
    python = _fake_python(ctx, f"{child} &\nsleep 60")
    process = subprocess.Popen(
        [sys.executable, "-m", "pickvariant", "verify", "--python", python],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_shell,
    )
    # The interrupt must come while the probe runs: wait for the probe's own child however loaded the machine is
    # (bounded), never a fixed guess of how long starting takes.
    deadline = time.monotonic() + 120
    while not (child_pid.exists() and child_pid.read_text().strip()):
        assert process.poll() is None and time.monotonic() < deadline, "the probe never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=90)
    assert "interrupted: the probe was stopped" in err and "Traceback" not in err
    assert _gone(int(child_pid.read_text()))
    return process.returncode


# --- catalog sync ----------------------------------------------------------------


def _build_repo(ctx: Ctx) -> Path:
    require(shutil.which("git") is not None, "git is not installed")
    return make_build_repo(ctx.tmp / "build-pytorch")


@row("sync-not-a-repo")
def _(ctx: Ctx) -> int:
    plain = ctx.tmp / "plain"
    plain.mkdir()
    missing = ctx.cli("catalog", "sync", str(ctx.tmp / "nowhere"))
    assert "is neither a URL nor an existing directory" in missing.stderr and missing.exit_code == 2
    result = ctx.cli("catalog", "sync", str(plain), "-o", str(ctx.tmp / "catalog.json"))
    assert "is a directory but no git repository (no .git in it): give a clone of the build repository" in result.stderr
    assert "does not exist" not in result.stderr  # git's words would say the directory is missing
    assert not (ctx.tmp / "catalog.json").exists()
    return result.exit_code


@row("sync-unreachable")
def _(ctx: Ctx) -> int:
    require(shutil.which("git") is not None, "git is not installed")
    out = ctx.tmp / "catalog.json"
    result = ctx.cli("catalog", "sync", "file:///nonexistent/build-pytorch.git", "-o", str(out))
    assert (
        result.stderr.startswith("pickvariant: git clone on file:///nonexistent/build-pytorch.git failed: ")
        and result.stderr.count("\n") == 1
    )
    assert not out.exists()
    return result.exit_code


@row("sync-unclassified")
def _(ctx: Ctx) -> int:
    repo = _build_repo(ctx)
    out = ctx.tmp / "catalog.json"
    result = ctx.cli("catalog", "sync", str(repo), "-o", str(out), *as_upstream(repo))
    assert "2 recipe(s) not classified, left out of the catalog:" in result.stderr
    assert (
        "pytorch-2.10-python313:.flox/pkgs/pytorch-python313-cuda13_1-sm90-avx2.nix: the name says sm90"
        in result.stderr
    )
    packages = {row["package"] for row in json.loads(out.read_text())["variants"]}
    assert (
        "pytorch-python313-cuda13_1-sm90-avx2" not in packages and "pytorch-python313-cuda13_1-sm90-avx512" in packages
    )
    return result.exit_code


@row("sync-check-differs")
def _(ctx: Ctx) -> int:
    repo = _build_repo(ctx)
    out = ctx.tmp / "catalog.json"
    assert ctx.cli("catalog", "sync", str(repo), "-o", str(out), *as_upstream(repo)).exit_code == 0
    written = out.read_bytes()
    commit_branch(repo, "main", {"pytorch-python313-cpu-avx512.nix": recipe("313", "avx512", PIN_28)})
    result = ctx.cli("catalog", "sync", str(repo), "-o", str(out), "--check", *as_upstream(repo))
    assert (
        "differs from" in result.stderr
        and "variant(s) removed" in result.stderr
        and "variant(s) added" in result.stderr
    )
    assert out.read_bytes() == written
    return result.exit_code


# --- What pickvariant reads is data (issue 26): each row builds its hostile input from the synthetic build repository.


@row("git-config-runs-nothing")
def _(ctx: Ctx) -> int:
    repo = make_build_repo(ctx.tmp / "build-pytorch")
    commit_branch(
        repo, trust.BRANCH, {f"{trust.GOOD}.nix": trust.recipe_for_row(trust.SHIPPED, trust._row(trust.GOOD))}
    )
    trust._signed_head(repo)
    marks = trust._hostile(repo, ctx.tmp)
    ctx.monkeypatch.chdir(repo)
    synced = ctx.cli("catalog", "sync", str(repo), "-o", str(ctx.tmp / "c.json"), *as_upstream(repo))
    ctx.monkeypatch.setenv("PICKVARIANT_CATALOG", str(ctx.tmp / "c.json"))
    fetched = ctx.cli("recipe", trust.GOOD, "--branch", trust.BRANCH, "--repo", str(repo))
    assert fetched.exit_code == 0 and not [mark for mark in marks if mark.exists()]
    return synced.exit_code


@row("ext-transport")
def _(ctx: Ctx) -> int:
    program, mark = trust._marker_program(ctx.tmp, "ext")
    result = ctx.cli(
        "recipe",
        trust.GOOD,
        "--branch",
        trust.BRANCH,
        "--repo",
        f"ext::{program} %S",
        env={"GIT_ALLOW_PROTOCOL": "ext"},
    )
    # git itself refused the transport (its own words), whatever GIT_ALLOW_PROTOCOL said.
    assert not mark.exists() and "fatal: transport 'ext' not allowed" in result.stderr, result.stderr
    return result.exit_code


@row("credentials-in-url")
def _(ctx: Ctx) -> int:
    repo = trust._served_repo(
        ctx.tmp, {f"{trust.GOOD}.nix": trust.recipe_for_row(trust.SHIPPED, trust._row(trust.GOOD))}, ctx.monkeypatch
    )
    ctx.monkeypatch.setenv("XDG_CACHE_HOME", str(ctx.tmp / "cache"))
    result = ctx.cli(
        "recipe", trust.GOOD, "--branch", trust.BRANCH, "--repo", f"file://ci:{trust.SECRET}@localhost{repo}"
    )
    assert trust.SECRET not in result.output and not [
        p for p in (ctx.tmp / "cache").rglob("*") if trust.SECRET in str(p)
    ]
    return result.exit_code


@row("fork-not-upstream")
def _(ctx: Ctx) -> int:
    """A fork whose avx2 recipe adds NIX_CFLAGS_COMPILE: left out naming the line; `list --all` shows it; `recipe
    --repo` refuses it (every attack, with what the real tools show it builds: tests/test_fork_trust.py)."""
    honest = recipe("313", "avx2", trust.PIN_NEW, version="2.10.0")
    forged = honest.replace("  meta = old.meta", '  NIX_CFLAGS_COMPILE = "-march=sapphirerapids";\n  meta = old.meta')
    other = {"pytorch-python313-cpu-avx512.nix": recipe("313", "avx512", trust.PIN_NEW, version="2.10.0")}
    upstream, fork = fork_of(
        ctx.tmp,
        trust.BRANCH,
        {"pytorch-python313-cpu-avx2.nix": honest, **other},
        {"pytorch-python313-cpu-avx2.nix": forged},
    )
    out = ctx.tmp / "c.json"
    result = ctx.cli("catalog", "sync", str(fork), "-o", str(out), *as_upstream(upstream))
    assert re.search(r"pytorch-python313-cpu-avx2\.nix: line \d+: 'NIX_CFLAGS_COMPILE' where upstream's", result.stderr)
    listed = ctx.cli("list", "--all", env={"PICKVARIANT_CATALOG": str(out)})
    assert "1 recipes of the build repository left out" in listed.stdout and "NIX_CFLAGS_COMPILE" in listed.stdout
    assert (
        ctx.cli("catalog", "sync", str(upstream), "-o", str(ctx.tmp / "u.json"), *as_upstream(upstream)).exit_code == 0
    )
    ctx.monkeypatch.setenv("PICKVARIANT_CATALOG", str(ctx.tmp / "u.json"))
    ctx.monkeypatch.setenv("XDG_CACHE_HOME", str(ctx.tmp / "cache"))
    refused = ctx.cli("recipe", "pytorch-python313-cpu-avx2", "--branch", trust.BRANCH, "--repo", str(fork))
    assert refused.exit_code == 1 and "'NIX_CFLAGS_COMPILE' where upstream's" in refused.stderr
    return result.exit_code


@row("fork-brings-file")
def _(ctx: Ctx) -> int:
    """A fork whose recipe reads its flags from a file it adds: left out naming the line and the file."""
    honest = recipe("313", "avx2", trust.PIN_NEW, version="2.10.0", cpu_flags='"-mavx2"')
    upstream_recipe = honest.replace('cpuFlags = [ "-mavx2" ]', "cpuFlags = import ./flags.nix")
    upstream, fork = fork_of(
        ctx.tmp,
        trust.BRANCH,
        {
            "pytorch-python313-cpu-avx2.nix": upstream_recipe,
            "flags.nix": '[ "-mavx2" "-mfma" "-mf16c" ]\n',
            "pytorch-python313-cpu-avx512.nix": recipe("313", "avx512", trust.PIN_NEW, version="2.10.0"),
        },
        {"flags.nix": '[ "-mavx2" "-mfma" "-mf16c" "-mavx512f" ]\n'},
    )
    result = ctx.cli("catalog", "sync", str(fork), "-o", str(ctx.tmp / "c.json"), *as_upstream(upstream))
    assert re.search(
        r"pytorch-python313-cpu-avx2\.nix: line \d+ brings in \./flags\.nix, which the trusted upstream does not "
        r"carry as it is here",
        result.stderr,
    ), result.stderr
    return result.exit_code


@row("fork-no-upstream")
def _(ctx: Ctx) -> int:
    """A repository of its own history, no --upstream: nothing to hold its recipes against."""
    repo = _build_repo(ctx)
    result = ctx.cli("catalog", "sync", str(repo), "-o", str(ctx.tmp / "c.json"))
    assert "there is no trusted upstream to hold it against" in result.stderr
    assert "--upstream REPO" in result.stderr and "--trust-recipes REPO" in result.stderr
    assert not (ctx.tmp / "c.json").exists()
    return result.exit_code


@row("fork-template-bounds")
def _(ctx: Ctx) -> int:
    """An sm100 recipe from a template upstream builds for sm90 alone (tests/test_fork_trust.py)."""
    import test_fork_trust

    test_fork_trust.test_a_new_architecture_only_through_a_template_upstream_builds_for_several(ctx.tmp)
    return 0


@row("fork-trusted")
def _(ctx: Ctx) -> int:
    """A fork trusted whole: its forged recipe is classified by its name, and the answer says so."""
    honest = recipe("313", "avx2", trust.PIN_NEW, version="2.10.0")
    forged = honest.replace("  meta = old.meta", '  NIX_CFLAGS_COMPILE = "-march=native";\n  meta = old.meta')
    _, fork = fork_of(
        ctx.tmp, trust.BRANCH, {"pytorch-python313-cpu-avx2.nix": honest}, {"pytorch-python313-cpu-avx2.nix": forged}
    )
    out = ctx.tmp / "c.json"
    result = ctx.cli("catalog", "sync", str(fork), "-o", str(out), "--trust-recipes", str(fork))
    assert result.exit_code == 0, result.output
    answer = ctx.cli("detect", "--cpuinfo", str(HASWELL), "--no-gpu", env={"PICKVARIANT_CATALOG": str(out)})
    assert "classified by its name, not proven: you trusted" in answer.stdout, answer.stdout
    return result.exit_code


@row("cache-not-yours")
def _(ctx: Ctx) -> int:
    shared = ctx.tmp / "shared-cache"
    (shared / "pickvariant").mkdir(parents=True)
    os.chmod(shared / "pickvariant", 0o777)
    result = ctx.cli("recipe", "pytorch-python313-cpu-avx2", "--branch", "main", env={"XDG_CACHE_HOME": str(shared)})
    assert "may be written by others (mode 0777)" in result.stderr and "chmod go-w" in result.stderr
    return result.exit_code


@row("catalog-facts-edited")
def _(ctx: Ctx) -> int:
    data = json.loads((REPO / "catalog.json").read_text(encoding="utf-8"))
    avx2 = next(isa for isa in data["cpu_isas"] if isa["name"] == "avx2")
    next(isa for isa in data["cpu_isas"] if isa["name"] == "avx512")["requires"] = avx2["requires"]
    site = ctx.dump("site-catalog.json", json.dumps(data))
    result = ctx.cli("detect", "--cpuinfo", str(HASWELL), "--no-gpu", env={"PICKVARIANT_CATALOG": str(site)})
    assert "hardware facts differ from pickvariant's own at cpu_isas[avx512].requires" in result.stderr
    return result.exit_code


@row("path-too-long")
def _(ctx: Ctx) -> int:
    result = ctx.cli("detect", "--cpuinfo", str(ctx.tmp / ("x" * 300)))
    assert result.stderr.startswith("pickvariant: --cpuinfo: a name in the path is 300 bytes long")
    cached = ctx.cli(
        "recipe", "pytorch-python313-cpu-avx2", "--branch", "main", env={"XDG_CACHE_HOME": "/" + "y" * 300}
    )
    assert cached.exit_code == result.exit_code and cached.stderr.startswith("pickvariant: XDG_CACHE_HOME:")
    return result.exit_code


@row("sync-bad-branch")
def _(ctx: Ctx) -> int:
    repo = make_build_repo(ctx.tmp / "build-pytorch")
    commit_branch(
        repo, "pytorch-2.11-python313;id$(x)", {"pytorch-python313-cpu-avx512.nix": recipe("313", "avx512", PIN_28)}
    )
    result = ctx.cli("catalog", "sync", str(repo), "-o", str(ctx.tmp / "c.json"), *as_upstream(repo))
    assert "left out branch pytorch-2.11-python313;id$(x)" in result.stderr and (ctx.tmp / "c.json").exists()
    return result.exit_code


@row("recipe-huge")
def _(ctx: Ctx) -> int:
    ctx.monkeypatch.setenv("XDG_CACHE_HOME", str(ctx.tmp / "cache"))
    honest = trust.recipe_for_row(trust.SHIPPED, trust._row(trust.GOOD))
    huge = honest + "#" * (2 * 1024 * 1024) + "\n"
    upstream, fork = fork_of(ctx.tmp, trust.BRANCH, {f"{trust.GOOD}.nix": honest}, {f"{trust.GOOD}.nix": huge})
    assert (
        ctx.cli("catalog", "sync", str(upstream), "-o", str(ctx.tmp / "c.json"), *as_upstream(upstream)).exit_code == 0
    )
    ctx.monkeypatch.setenv("PICKVARIANT_CATALOG", str(ctx.tmp / "c.json"))
    result = ctx.cli("recipe", trust.GOOD, "--branch", trust.BRANCH, "--repo", str(fork))
    assert "too large to be a recipe" in result.stderr
    return result.exit_code


@row("git-stalled")
def _(ctx: Ctx) -> int:
    import socket

    with socket.socket() as listener:  # listens, never accepts: the connection waits in the backlog
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        result = ctx.cli(
            "recipe",
            trust.GOOD,
            "--branch",
            trust.BRANCH,
            "--repo",
            f"git://127.0.0.1:{listener.getsockname()[1]}/x",
            env={"PICKVARIANT_NETWORK_TIMEOUT": "1", "XDG_CACHE_HOME": str(ctx.tmp / "cache")},
        )
    assert "took longer than 1 s" in result.stderr and "PICKVARIANT_NETWORK_TIMEOUT" in result.stderr
    return result.exit_code


@row("control-characters")
def _(ctx: Ctx) -> int:
    hostile = HASWELL.read_text().replace("model name\t: ", "model name\t: \x1b]0;PWNED\x07\x1b[2J\x1b[41m", 1)
    dump = ctx.dump("hostile-cpuinfo", hostile)
    codes = set()
    for output in ("text", "markdown"):
        result = ctx.cli(
            "detect", "--cpuinfo", str(dump), "--no-gpu", "--format", output, env={"TERM": "dumb", "NO_COLOR": "1"}
        )
        # Shown as escapes; in Markdown those escapes are escaped again, so that they render as written.
        shown = "\\e]0;PWNED\\x07" if output == "text" else "\\\\e\\]0;PWNED\\\\x07"
        assert "\x1b" not in result.output and "\x07" not in result.output and shown in result.output
        codes.add(result.exit_code)
    line = json.loads(ctx.detect("--cpuinfo", str(HASWELL), "--no-gpu")[0].stdout)
    nodes = ctx.dump("nodes.jsonl", json.dumps({"label": "n1\nforged: 0 node(s)\x1b[2J", **line}) + "\n")
    plan = ctx.cli("plan", str(nodes))
    assert "\x1b" not in plan.output and "forged" not in plan.output.replace("n1\\nforged", "")
    codes.add(plan.exit_code)
    # An interpreter whose path holds an escape sequence: every output of the wheel answer that names it.
    python = fresh_venv(ctx.tmp / "a\x1b[31mred" / "venv", with_pip=False)
    escaped: list[bool] = []
    for args in (["detect"], ["detect", "--format", "markdown"], ["detect", "--explain"], ["report"],
                 ["install", "--dry-run"]):  # fmt: skip
        # A real process through a pipe: click's own echo (the test runner's) strips escapes a plain write does not.
        done = subprocess.run(
            [sys.executable, "-m", "pickvariant", *args, "--source", "wheels", "--python", str(python), "--no-gpu",
             "--cpuinfo", str(HASWELL)],
            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=ctx.tmp,
        )  # fmt: skip
        assert "\x1b" not in done.stdout + done.stderr, (args, done.stdout)
        escaped.append("\\e[31mred" in done.stdout)
        codes.add(done.returncode)
    assert all(escaped[:3]), escaped  # detect's answers name the interpreter: escaped
    (code,) = codes
    return code


@row("plan-org-injection")
def _(ctx: Ctx) -> int:
    line = json.loads(ctx.detect("--cpuinfo", str(HASWELL), "--no-gpu")[0].stdout)
    nodes = ctx.dump("nodes.jsonl", json.dumps(line) + "\n")
    result = ctx.cli("plan", str(nodes), "--org", "my org; rm -rf ~")
    assert "rm -rf" not in result.stdout and "--org" in result.stderr
    return result.exit_code


@row("missing-dependency")
def _(ctx: Ctx) -> int:
    """A package pickvariant needs that does not load here (a partial install, a native library missing): the solver
    `plan` uses, in a real process, shadowed by one that fails to load as a broken extension does."""
    line = json.loads(ctx.detect("--cpuinfo", str(HASWELL), "--no-gpu")[0].stdout)
    nodes = ctx.dump("nodes.jsonl", json.dumps(line) + "\n")
    shadow = ctx.tmp / "shadow"
    shadow.mkdir()
    failing = 'raise ImportError("libhighs.so.1: cannot open shared object file", name="highspy")\n'
    (shadow / "highspy.py").write_text(failing, encoding="utf-8")
    done = _run("plan", str(nodes), env={"PYTHONPATH": os.pathsep.join([str(shadow), *sys.path[1:]])})
    lines = done.stderr.decode().splitlines()
    assert b"Traceback" not in done.stderr and len(lines) == 1 and done.stdout == b""
    assert "highspy, a package pickvariant needs" in lines[0] and "pip install highspy" in lines[0]
    return done.returncode


@row("plan-line-malformed")
def _(ctx: Ctx) -> int:
    good = json.loads(ctx.detect("--cpuinfo", str(HASWELL), "--no-gpu")[0].stdout)
    bad = json.loads(json.dumps(good))
    bad["hardware"]["cpu"]["flags"] = [1, "avx"]
    nodes = ctx.dump("nodes.jsonl", json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    result = ctx.cli("plan", str(nodes))
    assert "hardware.cpu.flags[0]: expected string, got int 1" in result.stdout
    return result.exit_code


@row("probe-result-malformed")
def _(ctx: Ctx) -> int:
    codes = set()
    for printed in (
        '{"torch": "2.10.0"}',
        '{"torch": "2.10.0", "cuda": null, "cpu_capability": "AVX2", "arch_list": [90], '
        '"cuda_available": false, "devices": [], "checks": []}',
    ):
        python = ctx.dump("python", f"#!/bin/sh\necho '{printed}'\n")
        python.chmod(0o755)
        for argv in (
            ["verify", "--python", str(python)],
            ["report", "--python", str(python)],
            ["report", "--python", str(python), "--format", "json"],
        ):
            result = ctx.cli(*argv)
            assert "is not its result" in result.output
            if argv[0] == "verify":
                codes.add(result.exit_code)
    (code,) = codes
    return code


@row("probe-daemon")
def _(ctx: Ctx) -> int:
    # aten_cpu_capability: the dispatch level is a stated choice, so the verdict does not depend on this CPU.
    result_line = (
        '{"torch": "2.10.0", "cuda": null, "cpu_capability": "AVX2", "aten_cpu_capability": "avx2", '
        '"arch_list": [], "cuda_available": false, "devices": [], "checks": []}'
    )
    from pickvariant._base import capture

    graces: list[float] = []
    real_join = capture.join

    def join(*readers: threading.Thread, grace_s: float = 5.0) -> bool:
        graces.append(grace_s)
        return real_join(*readers, grace_s=grace_s)

    ctx.monkeypatch.setattr(capture, "join", join)
    pid_file = ctx.tmp / "daemon.pid"
    # A daemon that leaves the probe's group holding its stdout, and a background job in the group.
    python = ctx.dump(
        "python",
        f"#!/bin/sh\nsetsid sh -c 'echo $$ > {pid_file}; exec sleep 120' &\nsleep 60 &\necho '{result_line}'\n",
    )
    python.chmod(0o755)
    try:
        result = ctx.cli("verify", "--python", str(python))
    finally:
        for _ in range(50):  # the daemon writes its pid as it starts
            if pid_file.exists() and pid_file.read_text().strip():
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
                break
            time.sleep(0.1)
    # What the probe printed was judged: the verdict names its torch, and the run came back after
    # waiting 2 s at most for the pipes the daemon holds.
    assert "- torch 2.10.0 (CUDA none), CPU capability AVX2" in result.stdout, result.output
    assert "verify: FAIL" in result.stdout and "- the probe ran no check: nothing was computed" in result.stdout
    assert graces == [2.0], graces
    return result.exit_code


@row("plan-not-a-file")
def _(ctx: Ctx) -> int:
    device, missing = ctx.cli("plan", "/dev/zero"), ctx.cli("plan", str(ctx.tmp / "missing.jsonl"))
    assert device.stderr == "pickvariant: plan input '/dev/zero' is not a regular file, a directory or a FIFO\n"
    assert missing.stderr == f"pickvariant: plan input {str(ctx.tmp / 'missing.jsonl')!r}: No such file or directory\n"
    codes = {device.exit_code, missing.exit_code}
    fifo = ctx.tmp / "fifo"
    os.mkfifo(fifo)
    from pickvariant.rules import cluster_input

    ctx.monkeypatch.setattr(cluster_input, "FIFO_WAIT_S", 0.2)
    nobody = ctx.cli("plan", str(fifo))
    assert nobody.stderr == f"pickvariant: plan input {str(fifo)!r} is a FIFO that nothing wrote to within 0.2 s\n"
    codes.add(nobody.exit_code)
    (code,) = codes
    return code


@row("plan-long-label")
def _(ctx: Ctx) -> int:
    line = json.loads(ctx.detect("--cpuinfo", str(HASWELL), "--no-gpu")[0].stdout)
    nodes = ctx.dump(
        "nodes.jsonl", json.dumps({"label": "n1", **line}) + "\n" + json.dumps({"label": "x" * 100_000, **line}) + "\n"
    )
    result = ctx.cli("plan", str(nodes))
    assert "label: 100000 characters, more than 256" in result.stdout
    return result.exit_code


# --- Nothing lost, nothing injected, nothing hangs (issue 34) ----------------------------------------------------


@row("plan-deep-nesting")
def _(ctx: Ctx) -> int:
    good = ctx.detect("--cpuinfo", str(HASWELL), "--no-gpu", "--compact", "--label", "n1")[0].stdout
    deep = "[" * 3000 + "]" * 3000
    nodes = ctx.dump(
        "nodes.txt",
        good + f'web01 | CHANGED | rc=0 | (stdout) {{"a":{deep}}}\n' + f'{{"label":{deep}}}\n',
    )
    result = ctx.cli("plan", str(nodes), "--format", "json")
    plan = json.loads(result.stdout)
    assert [node["label"] for node in plan["nodes"]] == ["n1"] and plan["input"]["bad_lines"] == 2
    assert plan["input"]["bad"][0]["why"] == "Ansible's line for web01 holds no complete JSON object"
    return result.exit_code


@row("manifest-not-a-file")
def _(ctx: Ctx) -> int:
    target = ctx.tmp / "env"
    (target / ".flox" / "env").mkdir(parents=True)
    (target / ".flox" / "env.json").write_text('{"name": "env", "version": 1}')
    os.mkfifo(target / ".flox" / "env" / "manifest.toml")
    result = ctx.cli(
        "install", "--cpuinfo", str(HASWELL), "--no-gpu", "--org", "acme", "--dir", str(target), "--dry-run"
    )
    assert "is not a regular file" in result.stderr and "the Flox manifest" in result.stderr
    return result.exit_code


@row("pasted-command")
def _(ctx: Ctx) -> int:
    """A catalog synced from a clone whose origin URL holds a command substitution: the publish note install prints
    is quoted, so pasting it into a shell runs no part of the address."""
    repo = _build_repo(ctx)
    hostile = "https://github.com/acme$(touch${IFS}PWNED)/build-pytorch"
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", hostile], check=True, capture_output=True)
    site = ctx.tmp / "site.json"
    assert ctx.cli("catalog", "sync", str(repo), "-o", str(site), *as_upstream(repo)).exit_code == 0
    ctx.monkeypatch.setenv("PICKVARIANT_CATALOG", str(site))
    result = ctx.cli(
        "install",
        "--cpuinfo",
        str(HASWELL),
        "--no-gpu",
        "--generate",
        "--dir",
        str(ctx.tmp / "e"),
        "--build-dir",
        str(ctx.tmp / "b"),
        "--dry-run",
    )
    (note,) = [line for line in result.stdout.splitlines() if "flox publish -o ORG" in line]
    command = note.split("`")[1]
    stubs = ctx.tmp / "stubs"
    stubs.mkdir()
    for name in ("git", "flox"):
        (stubs / name).write_text("#!/bin/sh\nexit 0\n")
        (stubs / name).chmod(0o755)
    # git and flox are stubs; everything else (touch among them) is the real thing, as in a user's shell.
    bash = shutil.which("bash") or "/bin/bash"
    shell = ctx.tmp / "shell"
    shell.mkdir()
    pasted = subprocess.run(
        [bash, "-c", command], cwd=shell, env={"PATH": f"{stubs}:/usr/bin:/bin"}, capture_output=True
    )
    assert pasted.returncode != 0  # cd into the clone fails: the stub cloned nothing
    assert not list(ctx.tmp.rglob("PWNED"))
    assert shlex_split(command)[4] == hostile
    return result.exit_code


def shlex_split(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


@row("report-names-no-path")
def _(ctx: Ctx) -> int:
    customer = ctx.tmp / "srv" / "tickets" / "customers" / "acme"
    customer.mkdir(parents=True)
    dump = customer / "node17.internal.acme.com"
    dump.write_bytes(HASWELL.read_bytes())
    results = [
        ctx.cli("report", "--format", output, "--cpuinfo", str(dump), "--no-gpu") for output in ("markdown", "json")
    ]
    for result in results:
        assert "acme" not in result.output and "node17" not in result.output, result.output
    assert "(source: --cpuinfo (a stated CPU dump))" in results[0].stdout
    (code,) = {result.exit_code for result in results}
    return code


@row("value-named")
def _(ctx: Ctx) -> int:
    zero = ctx.cli("detect", "--cpuinfo", str(HASWELL), "--gpu", "0.0")
    assert zero.stderr.startswith("pickvariant: --gpu: '0.0' is not a compute capability")
    banana = ctx.cli("detect", "--cpuinfo", str(HASWELL), env={"PICKVARIANT_GPU": "9.0,banana"})
    assert banana.stderr.startswith("pickvariant: PICKVARIANT_GPU: 'banana' is not a compute capability")
    missing = ctx.cli("detect", "--no-gpu", env={"PICKVARIANT_CPUINFO": str(ctx.tmp / "nonexistent")})
    assert missing.stderr.startswith("pickvariant: PICKVARIANT_CPUINFO: cannot read the CPU dump")
    (code,) = {zero.exit_code, banana.exit_code, missing.exit_code}
    return code


@row("log-disk-full")
def _(ctx: Ctx) -> int:
    """The install log's disk is full (writes fail with ENOSPC, as /dev/full's do) while flox writes far more than a
    pipe holds: the output is still drained, flox runs to its end, and install says the log is incomplete and where."""
    from pickvariant.sources.flox.install import flow

    ctx.monkeypatch.setattr(flow, "start_log", lambda plan, env=None: Path("/dev/full"))
    ctx.monkeypatch.setenv("FAKE_FLOX_MODE", "flood:20000")
    target = ctx.tmp / "env"
    result = ctx.cli(
        "install", "--cpuinfo", str(HASWELL), "--no-gpu", "--org", "acme", "--dir", str(target), "--yes", "--no-verify"
    )
    assert "warning: the log /dev/full is incomplete: writing it failed (No space left on device)" in result.stderr
    assert "Traceback" not in result.output and (target / ".flox" / "env" / "manifest.toml").is_file()
    return result.exit_code


@row("sync-too-large")
def _(ctx: Ctx) -> int:
    """A sync whose catalog or companions file would be larger than pickvariant reads back (16 MiB; here the bound is
    made small): nothing is written, and it says which file and why, rather than leaving one every command refuses."""
    import types

    from pickvariant._base import strictjson
    from pickvariant.sources.flox.recipes import sync_files

    repo = _build_repo(ctx)
    out = ctx.tmp / "site.json"
    # The bound as sync's writer sees it (reading hardware.json keeps the real one).
    ctx.monkeypatch.setattr(
        sync_files, "strictjson", types.SimpleNamespace(MAX_DOCUMENT_BYTES=4096, loads=strictjson.loads)
    )
    assert strictjson.MAX_DOCUMENT_BYTES == 16 * 1024 * 1024
    result = ctx.cli("catalog", "sync", str(repo), "-o", str(out), *as_upstream(repo))
    assert f"{out} would be" in result.stderr and "nothing was written" in result.stderr, result.stderr
    assert not out.exists() and not (ctx.tmp / "site.companions.json").exists()
    return result.exit_code


@row("dry-run-offline")
def _(ctx: Ctx) -> int:
    """install --build --dry-run when the recipe repository cannot be reached: the plan is shown, with what could not
    be checked; the real install (not a dry run) still refuses to build a recipe it could not fetch and check."""
    unreachable = "http://127.0.0.1:9/build-pytorch.git"
    common = ["install", "--cpuinfo", str(HASWELL), "--no-gpu", "--dir", str(ctx.tmp / "env"), "--repo", unreachable]
    dry = ctx.cli(*common, "--dry-run")
    assert "the recipe could not be fetched now, so nothing of it was checked" in dry.stdout, dry.output
    assert "flox build" in dry.stdout and "http://127.0.0.1:9/build-pytorch.git" in dry.stdout
    real = ctx.cli(*common, "--yes", "--no-verify")
    assert real.exit_code == 1 and "cannot fetch" in real.stderr
    return dry.exit_code


@row("markdown-injection")
def _(ctx: Ctx) -> int:
    """A node label, a CPU model name and a companion repository's name holding a Markdown link and an HTML tag:
    every Markdown output (plan, detect, report) shows them as written, escaped, and renders neither."""
    link, tag = "[Click to fix your cluster](https://evil.example/x)", "<img src=x onerror=alert(1)>"
    dump = ctx.dump("cpuinfo", HASWELL.read_text().replace("model name\t: ", f"model name\t: {tag} ", 1))
    line = ctx.detect("--cpuinfo", str(dump), "--no-gpu", "--compact", "--label", link)[0].stdout
    nodes = ctx.dump("nodes.jsonl", line)
    outputs = [
        ctx.cli("plan", str(nodes), "--format", "markdown"),
        ctx.cli("detect", "--format", "markdown", "--cpuinfo", str(dump), "--no-gpu"),
        ctx.cli("report", "--cpuinfo", str(dump), "--no-gpu"),
    ]
    # A companions file whose repository is named with a link: detect --with names it in its reasons.
    from buildrepo import companion_recipe, make_companion_repo

    repo = _build_repo(ctx)
    vision = make_companion_repo(
        ctx.tmp / "build-torchvision",
        {"main": {"torchvision-python313-cpu-avx2.nix": companion_recipe("torchvision", "313", "avx2", pin=PIN_28)}},
    )
    site = ctx.tmp / "site.json"
    synced = ctx.cli(
        "catalog",
        "sync",
        str(repo),
        str(vision),
        "--source-url",
        "https://example.org/b",
        "--source-url",
        link,
        "-o",
        str(site),
        *as_upstream(repo, vision),
    )
    assert synced.exit_code == 0, synced.output
    outputs.append(
        ctx.cli(
            "detect",
            "--format",
            "markdown",
            "--cpuinfo",
            str(HASWELL),
            "--no-gpu",
            "--with",
            "torchvision",
            env={"PICKVARIANT_CATALOG": str(site)},
        )
    )
    for result in outputs:
        assert "<img" not in result.stdout and link not in result.stdout, result.stdout
    assert "\\[Click to fix your cluster\\](https://evil.example/x)" in outputs[0].stdout
    assert "&lt;img src=x onerror=alert(1)>" in outputs[1].stdout and "&lt;img" in outputs[2].stdout
    assert "\\[Click to fix your cluster\\]" in outputs[3].stdout
    (code,) = {result.exit_code for result in outputs[:3]}
    return code


@row("forged-catalog")
def _(ctx: Ctx) -> int:
    """PICKVARIANT_CATALOG names a catalog whose stamp was recomputed over a CUDA package set that is Nix code and a
    package named as a path: it is checked whole (the stamp spares only the shipped catalog) and refused."""
    from pickvariant.sources.flox.recipes.sync_files import render as sync_render

    forged = json.loads((REPO / "catalog.json").read_text())
    forged["branches"][0]["cuda_lines"][0]["cuda_packages"] = (
        'cudaPackages_12_9; pwned = builtins.readFile "/etc/hostname"'
    )
    catalog = ctx.dump("forged.json", sync_render(forged))
    result = ctx.cli(*INSTALL, "--dir", str(ctx.tmp / "e"), "--dry-run", env={"PICKVARIANT_CATALOG": str(catalog)})
    assert "cuda_packages" in result.stderr and "pwned" not in result.stdout
    assert not (ctx.tmp / "e").exists()
    return result.exit_code


@row("installs-race")
def _(ctx: Ctx) -> int:
    """Three installs into one new --dir at once (a job array on a shared filesystem), each flox call slowed so that
    all three plan a `flox init`: they take turns on the environment's lock, the later ones find the environment
    made and do not init it again, nothing is removed that another made, and every "Done" has its environment."""
    target = ctx.tmp / "shared" / "env"
    ctx.monkeypatch.setenv("FAKE_FLOX_MODE", "sleep:0.3")
    argv = [sys.executable, "-m", "pickvariant", "install", "--cpuinfo", str(HASWELL), "--no-gpu", "--org", "acme"]
    argv += ["--dir", str(target), "--yes", "--no-verify"]
    runs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    finished = [run.communicate(timeout=240) for run in runs]
    codes = {run.returncode for run in runs}
    for (stdout, stderr), run in zip(finished, runs, strict=True):
        assert run.returncode == 0, stderr
        assert "Done: pytorch-python313-cpu-avx2" in stdout
    assert (target / ".flox" / "env.json").is_file() and not (target / ".pickvariant-install.lock").exists()
    assert sum("waiting for another pickvariant install" in stderr for _, stderr in finished) >= 1
    (code,) = codes
    return code


def _plan_of(ctx: Ctx, label: str, *machine: str) -> Path:
    line = json.loads(ctx.detect("--compact", "--label", label, *machine)[0].stdout)
    nodes = ctx.dump("nodes.jsonl", json.dumps(line) + "\n")
    return ctx.dump("plan.json", ctx.cli("plan", str(nodes), "--format", "json").stdout)


def _verify_line(plan: Path, label: str) -> dict:
    """A real H100 verify line (tests/data/verify-h100.json) as node `label` sends it for the plan's first build."""
    node = json.loads(plan.read_text())["nodes"][0]
    line = json.loads((Path(__file__).parent / "data" / "verify-h100.json").read_text())
    line.update(label=label, package=node["package"], branch=node["branch"])
    return line


@row("install-plan-changed")
def _(ctx: Ctx) -> int:
    plan = _plan_of(ctx, "n1", "--cpuinfo", str(HASWELL), "--gpu", "9.0", "--driver", "580.95.05")
    now = ["--cpuinfo", str(HASWELL), "--gpu", "9.0", "--driver", "550.54.15"]
    result = ctx.cli("install", "--plan", str(plan), "--label", "n1", "--org", "acme", "--yes", *now)
    assert "driver 580.95.05 in the plan, 550.54.15 now" in result.stderr and ctx.flox_calls() == []
    return result.exit_code


@row("install-plan-hostile")
def _(ctx: Ctx) -> int:
    plan = _plan_of(ctx, "n1", "--cpuinfo", str(HASWELL), "--no-gpu")
    document = json.loads(plan.read_text())
    document["nodes"][0]["package"] = "$(reboot)"
    plan.write_text(json.dumps(document))
    result = ctx.cli("install", "--plan", str(plan), "--label", "n1", "--org", "acme", "--yes")
    endless = ctx.cli("install", "--plan", "/dev/zero", "--label", "n1", "--org", "acme", "--yes")
    assert str(plan) in result.stderr and endless.exit_code == 2 and ctx.flox_calls() == []
    return result.exit_code


@row("install-plan-unserved")
def _(ctx: Ctx) -> int:
    machine = ["--cpuinfo", str(HASWELL), "--gpu", "3.5", "--driver", "470.256.02"]
    plan = _plan_of(ctx, "kepler", *machine)
    result = ctx.cli("install", "--plan", str(plan), "--label", "kepler", "--org", "acme", "--yes", *machine)
    assert "serves node 'kepler' no variant" in result.stderr and ctx.flox_calls() == []
    return result.exit_code


@row("fleet-hostile-lines")
def _(ctx: Ctx) -> int:
    plan = _plan_of(ctx, "n1", "--cpuinfo", str(HASWELL), "--no-gpu")
    good = _verify_line(plan, "n1")
    lines = ["not json", "[" * 100000, "\x1b]0;pwned\x07{}", "x" * (3 << 20), json.dumps(good)]
    results = ctx.dump("results.jsonl", "\n".join(lines) + "\n")
    result = ctx.cli("fleet", str(plan), str(results))
    assert "input lines that are not verify lines (4)" in result.stdout and "\x1b" not in result.stdout
    assert "proven (1) [n1]" in result.stdout
    return result.exit_code


# --- issue 51: a build script read as bash reads it, a whole install, no credential shown, a line from its node ---


@row("wheel-index-credentials")
def _(ctx: Ctx) -> int:
    """`--wheel-index https://user:SECRET@host/whl`: no output names the secret (tests/test_credentials.py)."""
    root = "https://deploy:SECRET@wheels.example.invalid/whl"
    machine = ["--cpuinfo", str(HASWELL), "--gpu", "9.0", "--driver", "580.95.05"]
    codes = set()
    for args in (
        ["detect", "--source", "wheels"],
        ["report", "--source", "wheels"],
        ["detect", "--source", "wheels", "--format", "json"],
    ):
        result = ctx.cli(*args, "--wheel-index", root, *machine)
        assert "SECRET" not in result.output and "wheels.example.invalid" in result.stdout
        codes.add(result.exit_code)
    (code,) = codes
    return code


@row("wheel-index-query")
def _(ctx: Ctx) -> int:
    result = ctx.cli("detect", "--source", "wheels", "--wheel-index", "https://host/whl?token=T", "--no-gpu")
    assert (
        "--wheel-index" in result.stderr and "query or a fragment" in result.stderr and "token=T" not in result.stderr
    )
    return result.exit_code


@row("wheel-install-stopped")
def _(ctx: Ctx) -> int:
    """Ctrl-C once pip has removed the old torch: the old torch is put back whole, or the new one is there whole, and
    said (tests/test_install_whole.py stops it at every moment, with SIGTERM and --timeout too)."""
    import signal as signals

    import test_install_whole as whole
    from wheel_mirror import build_mirror, served

    python = fresh_venv(ctx.tmp / "venv")
    detect = ctx.cli("detect", "--source", "wheels", "--format", "json", "--python", str(python), *whole.GTX_1080)
    chosen = json.loads(detect.stdout)["recommendation"]
    old = f"{chosen['release']}+cu130"
    build_mirror(ctx.tmp / "mirror", {chosen["variant"]: [("torch", chosen["torch"])], "cu130": [("torch", old)]}, 2000)
    with served(ctx.tmp / "mirror") as url:
        whole._put_back(python, url, old, ctx.tmp)
        done = whole._run_until(python, url, ctx.tmp, "old torch removed", signals.SIGINT)
    assert whole._assert_whole(python, old, chosen["torch"], done) in (old, chosen["torch"])
    return done.returncode


@row("wheel-install-hangup")
def _(ctx: Ctx) -> int:
    """SIGHUP (the SSH session closed) once pip has removed the old torch: stopped and mended as for Ctrl-C, exit 129
    (tests/test_install_whole.py stops it with SIGHUP at every moment)."""
    import test_install_whole as whole
    from wheel_mirror import build_mirror, served

    python = fresh_venv(ctx.tmp / "venv")
    detect = ctx.cli("detect", "--source", "wheels", "--format", "json", "--python", str(python), *whole.GTX_1080)
    chosen = json.loads(detect.stdout)["recommendation"]
    old = f"{chosen['release']}+cu130"
    build_mirror(ctx.tmp / "mirror", {chosen["variant"]: [("torch", chosen["torch"])], "cu130": [("torch", old)]}, 2000)
    with served(ctx.tmp / "mirror") as url:
        whole._put_back(python, url, old, ctx.tmp)
        site = whole._site(python)
        (site / "_pv_hangup.py").write_text(_HANG_UP_ONCE_THE_OLD_TORCH_IS_GONE)
        (site / "_pv_hangup.pth").write_text("import _pv_hangup\n")
        done = whole._install(python, url, ctx.tmp)
    assert whole._assert_whole(python, old, chosen["torch"], done) == old, done.stderr
    assert "hung up (SIGHUP" in done.stderr, done.stderr
    return done.returncode


# In the environment's own Python, so in pip: the moment pip first writes into torch/ with the old torch's dist-info
# gone (uninstalled, the new one not yet written), the session hangs up on pickvariant (SIGHUP to pip's parent) and
# pip waits there, as a pip whose terminal closed would be caught. A moment pip itself reaches, not a race with it.
_HANG_UP_ONCE_THE_OLD_TORCH_IS_GONE = """\
import glob, os, signal, sys, time
_SITE = os.path.dirname(os.path.abspath(__file__))
_OLD = glob.glob(os.path.join(_SITE, "torch-*.dist-info"))
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT


def _hook(event, args):
    if event != "open" or not _OLD or not isinstance(args[0], str):
        return
    mode, flags = args[1], args[2]
    writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITES)
    if writes and args[0].startswith(os.path.join(_SITE, "torch", "")) and not os.path.exists(_OLD[0]):
        _OLD.clear()
        os.kill(os.getppid(), signal.SIGHUP)
        time.sleep(120)


sys.addaudithook(_hook)
"""


@row("wheel-install-killed-before")
def _(ctx: Ctx) -> int:
    """What an install killed with SIGKILL left (its kept folder, the old torch half removed, its lock file): the next
    install finds it, says so, puts the environment right and installs (tests/test_install_whole.py kills a real one
    while pip waits, and sees pip end with it)."""
    import test_install_whole as whole
    from test_wheel_install import _env, _pickvariant
    from wheel_mirror import build_mirror, served

    from pickvariant.install import whole as kept

    python = fresh_venv(ctx.tmp / "venv")
    detect = ctx.cli("detect", "--source", "wheels", "--format", "json", "--python", str(python), *whole.GTX_1080)
    chosen = json.loads(detect.stdout)["recommendation"]
    old = f"{chosen['release']}+cu130"
    build_mirror(ctx.tmp / "mirror", {chosen["variant"]: [("torch", chosen["torch"])], "cu130": [("torch", old)]}, 50)
    with served(ctx.tmp / "mirror") as url:
        whole._put_back(python, url, old, ctx.tmp)
        site = whole._site(python)
        kept.keep(site)  # as the killed install left it: never settled
        (site / ".pickvariant-install.lock").touch()
        shutil.rmtree(site / "torch" / "lib")  # pip had begun removing the old torch
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *whole.GTX_1080]
        done = _pickvariant([*args, "--yes", "--no-verify"], _env(ctx.tmp), ctx.tmp)
    said = done.stdout + done.stderr
    assert "an earlier install into this environment was killed before it finished" in said, said
    assert f"torch {old} is there as it was (put back)" in said and "taken over" in said, said
    assert not [entry.name for entry in site.iterdir() if entry.name.startswith((".pickvariant-", "~"))]
    return done.returncode


@row("install-reads-what-pip-sees")
def _(ctx: Ctx) -> int:
    """The working directory holds `pip/__main__.py` (a checkout): the environment's real pip installs, the planted
    module never runs (tests/test_install_environment.py: pyenv shims, an installer that installs elsewhere)."""
    import test_install_whole as whole
    from test_wheel_install import _env, _installed, _pickvariant
    from wheel_mirror import build_mirror, served

    python = fresh_venv(ctx.tmp / "venv")
    detect = ctx.cli("detect", "--source", "wheels", "--format", "json", "--python", str(python), *whole.GTX_1080)
    chosen = json.loads(detect.stdout)["recommendation"]
    build_mirror(ctx.tmp / "mirror", {chosen["variant"]: [("torch", chosen["torch"])]})
    checkout, marker = ctx.tmp / "checkout", ctx.tmp / "planted-ran"
    (checkout / "pip").mkdir(parents=True)
    (checkout / "pip" / "__init__.py").write_text("")
    (checkout / "pip" / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    with served(ctx.tmp / "mirror") as url:
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *whole.GTX_1080]
        done = _pickvariant([*args, "--yes", "--no-verify"], _env(ctx.tmp), checkout)
    assert not marker.exists() and _installed(python, "torch") == chosen["torch"], done.stderr
    return done.returncode


@row("installer-installs-elsewhere")
def _(ctx: Ctx) -> int:
    """PIP_TARGET in the user's shell: pip installs into another folder and ends with exit 0; the environment, read
    again, lacks the torch, which is said instead of "Done"."""
    import test_install_whole as whole
    from test_wheel_install import _env, _pickvariant
    from wheel_mirror import build_mirror, served

    python = fresh_venv(ctx.tmp / "venv")
    detect = ctx.cli("detect", "--source", "wheels", "--format", "json", "--python", str(python), *whole.GTX_1080)
    chosen = json.loads(detect.stdout)["recommendation"]
    build_mirror(ctx.tmp / "mirror", {chosen["variant"]: [("torch", chosen["torch"])]})
    with served(ctx.tmp / "mirror") as url:
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *whole.GTX_1080]
        env = _env(ctx.tmp, PIP_TARGET=str(ctx.tmp / "elsewhere"))
        done = _pickvariant([*args, "--yes", "--no-verify"], env, ctx.tmp)
    assert "Done" not in done.stdout and "it was not installed there" in done.stderr.splitlines()[-1], done.stderr
    return done.returncode


@row("wheel-refresh-hostile")
def _(ctx: Ctx) -> int:
    """A PyPI page that answers with a bad status line: one line naming the URL (tests/test_wheel_refresh_hostile.py
    sends each hostile answer, and drips a page past the refresh's deadline)."""
    from test_wheel_refresh import _run
    from test_wheel_refresh_hostile import HOSTILE, canned

    with canned(HOSTILE["bad status line"]) as url:
        done = _run(["catalog", "wheels", "--refresh", "--pypi", f"{url}/simple", "--wheel-index", url], ctx.tmp)
    assert done.stderr.count("\n") == 1 and "127.0.0.1" in done.stderr, done.stderr
    return done.returncode


@row("wheel-refresh-partial")
def _(ctx: Ctx) -> int:
    """PyTorch's index unreachable, PyPI answering: 2.16.0 still judged from PyPI's own wheels."""
    from test_wheel_refresh import H100, _run, build_indexes, range_server

    build_indexes(ctx.tmp / "www")
    with range_server(ctx.tmp / "www", {}) as url:
        done = _run(["catalog", "wheels", "--refresh", "--pypi", f"{url}/pypi", "--wheel-index", f"{url}/no"], ctx.tmp)
    h100 = json.loads(_run(["detect", "--source", "wheels", "--format", "json", *H100], ctx.tmp).stdout)
    assert h100["recommendation"]["release"] == "2.16.0", done.stderr
    return done.returncode


def _before_the_takeover(path: str, line: int) -> bool:
    """Is this traceback frame Python's own start, in effect: pickvariant/__init__.py before its first statement
    has taken Ctrl-C over (the interpreter acts on a pending signal at a function's first instruction, so a signal
    that landed while the file loaded is raised there)? Every line after the takeover is pickvariant's to handle."""
    init = REPO / "pickvariant" / "__init__.py"
    if Path(path) != init:
        return False
    source = init.read_text().splitlines()
    first_def = next(n for n, text in enumerate(source, 1) if text.startswith("def "))
    start = next(n for n, text in enumerate(source, 1) if text.startswith("def _take_over_ctrl_c"))
    takeover = next(n for n, text in enumerate(source, 1) if "_signal.signal(_signal.SIGINT, _interrupted" in text)
    caller = next(n for n, text in enumerate(source, 1) if text == "_take_over_ctrl_c()")
    return line < first_def or start <= line <= takeover or line == caller


@row("ctrl-c-at-start")
def _(ctx: Ctx) -> int:
    """Ctrl-C at any moment of a command's start: one line and 130 (or the interpreter's own start, before pickvariant's
    first line, which is Python's), never a traceback through pickvariant's code."""
    codes = set()
    for step in range(24):
        process = subprocess.Popen(
            [sys.executable, "-m", "pickvariant", "detect", "--cpuinfo", str(HASWELL), "--no-gpu"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_shell,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        time.sleep(step * 0.0125)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        frames = re.findall(r'File "([^"]+)", line (\d+)', err)
        ours = [(path, int(line)) for path, line in frames if "pickvariant" in path]
        assert all(_before_the_takeover(path, line) for path, line in ours), err
        if process.returncode == 130:
            assert err == "pickvariant: interrupted\n", err
        codes.add(process.returncode)
    assert 130 in codes, codes  # some Ctrl-C landed in pickvariant's own start
    return 130


@row("fleet-line-of-another-node")
def _(ctx: Ctx) -> int:
    """n2's result file holds a passing line labelled n1 beside n1's own failed one: n1 stays failed."""
    plan = _plan_of(ctx, "n1", "--cpuinfo", str(HASWELL), "--no-gpu")
    document = json.loads(plan.read_text())
    document["nodes"].append({**document["nodes"][0], "label": "n2"})
    plan.write_text(json.dumps(document))
    good = _verify_line(plan, "n1")
    (ctx.tmp / "results").mkdir()
    ctx.dump("results/n1.json", json.dumps({**good, "label": "n1", "passed": False, "reasons": ["x"]}) + "\n")
    ctx.dump("results/n2.json", json.dumps({**good, "label": "n2"}) + "\n" + json.dumps({**good, "label": "n1"}))
    result = ctx.cli("fleet", str(plan), str(ctx.tmp / "results"), "--format", "json")
    found = {n["label"]: n["status"] for n in json.loads(result.stdout)["nodes"]}
    assert found == {"n1": "failed", "n2": "proven"}
    return result.exit_code


@row("json-non-finite")
def _(ctx: Ctx) -> int:
    """A verify line whose figure is NaN or Infinity: a bad line (no JSON has them), the output strict JSON."""
    plan = _plan_of(ctx, "n1", "--cpuinfo", str(HASWELL), "--no-gpu")
    line = json.dumps(_verify_line(plan, "n1")).replace('"tflops": ', '"tflops": NaN, "x": ', 1)
    result = ctx.cli("fleet", str(plan), str(ctx.dump("r.jsonl", line + "\n")), "--format", "json")
    found = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(c))
    assert found["input"]["bad_lines"] == 1 and found["nodes"][0]["status"] == "missing"
    return result.exit_code


@row("python-by-name")
def _(ctx: Ctx) -> int:
    """`--python python3` with a ./python3 planted in the working directory: the PATH's is read and named; the planted
    one never runs."""
    marker = ctx.tmp / "ran"
    planted = ctx.dump("python3", f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    planted.chmod(0o755)
    bin_dir = ctx.tmp / "path-bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    ctx.monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = ctx.cli("detect", "--source", "wheels", "--format", "json", "--python", "python3", "--no-gpu",
                     "--cpuinfo", str(HASWELL))  # fmt: skip
    assert json.loads(result.stdout)["environment"]["interpreter"] == str(bin_dir / "python3")
    assert not marker.exists()
    return result.exit_code


@row("plan-too-large")
def _(ctx: Ctx) -> int:
    plan = ctx.dump("plan.json", b"{" + b" " * (25 * 1024 * 1024) + b"}")
    result = ctx.cli("install", "--plan", str(plan), "--label", "n1", "--org", "acme", "--yes")
    assert "larger than 24 MiB" in result.stderr and ctx.flox_calls() == []
    return result.exit_code


@row("sync-pair-disk-full")
def _(ctx: Ctx) -> int:
    """`catalog sync -o` onto a disk that fills (a file-size limit): neither file of the pair is replaced
    (tests/test_sync.py)."""
    import test_sync

    (ctx.tmp / "sync").mkdir()
    test_sync.test_sync_onto_a_disk_that_fills_replaces_neither_file_of_the_pair(ctx.tmp / "sync")
    return 1
