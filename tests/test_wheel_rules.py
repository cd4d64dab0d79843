"""The wheels source's decision on stated machines (issue 45's must-hold list), each expected answer worked out from
the shipped wheel catalog rather than written down: the newest torch with a cu126 wheel, the CUDA line that ships
12.0 kernels, ... A PTX-bearing build (none ships in a release) is judged with a catalog made here."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli_runner, cpuinfo_path, require, torch_site_packages
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant._base.versions import ComputeCapability, parse_driver_version
from pickvariant.api import decide_prebuilt
from pickvariant.cli.main import app
from pickvariant.output.prebuilt_answer import prebuilt_json, prebuilt_text_lines, pyproject_text, requirements_text
from pickvariant.rules.prebuilt_walk import pick_prebuilt
from pickvariant.sources.prebuilt import PrebuiltCatalog, published
from pickvariant.sources.runs_on import Build
from pickvariant.sources.wheels.catalog.load import load_wheel_catalog

HASWELL = cpuinfo_path("linux-rhel7-haswell")
runner = cli_runner()
GRACE = cpuinfo_path("linux-rhel9-neoverse_v2")
WHEELS = load_wheel_catalog()


def _answer(cpuinfo: Path = HASWELL, gpus: tuple[str, ...] = (), driver: str | None = None, **pins):
    request = Request(cpuinfo=cpuinfo, gpus=gpus, no_gpu=not gpus, driver=driver, **pins)
    return decide_prebuilt(request, env={})


def _json(**machine) -> dict:
    return prebuilt_json(_answer(**machine))


def _newest(platform: str, keep) -> Build:
    found = [b for b in WHEELS.builds if b.platform == platform and keep(b)]
    return max(found, key=lambda b: Version(b.torch))


def _why(document: dict, variant: str) -> str:
    return next(r["why"] for r in document["rejected"] if r["subject"] == {"axis": "wheel_variant", "name": variant})


@pytest.mark.parametrize("gpu", ["6.1", "7.0"])
def test_a_gtx_1080_or_a_v100_gets_cu126_of_the_newest_torch_that_has_one(gpu: str) -> None:
    document = _json(gpus=(gpu,), driver="580.95.05")
    expected = _newest("linux-x86_64", lambda b: b.index == "cu126")
    recommendation = document["recommendation"]
    assert recommendation["torch"] == expected.label
    assert recommendation["index_url"] == f"{WHEELS.index_root}/cu126"
    cu130 = _newest("linux-x86_64", lambda b: b.index == "cu130")
    listed = ", ".join(str(c) for c in cu130.sass)
    assert f"ships kernels for {listed}" in _why(document, "cu130")
    assert f"GPU 0 ({gpu}) has none" in _why(document, "cu130")


def test_an_h100_on_r580_gets_a_cuda_13_line_and_on_r550_a_cuda_12_line_with_cuda_13_refused_by_its_floor() -> None:
    assert _json(gpus=("9.0",), driver="580.95.05")["recommendation"]["cuda"].startswith("13.")
    document = _json(gpus=("9.0",), driver="550.54.15")
    expected = _newest("linux-x86_64", lambda b: (b.cuda or "").startswith("12.") and any(c.major == 9 for c in b.sass))
    assert document["recommendation"]["torch"] == expected.label
    assert "580.65.06" in _why(document, "cu130")
    assert next(r for r in document["rejected"] if r["subject"]["name"] == "cu130")["kind"] == "driver"


def test_an_rtx_5090_on_r570_gets_a_cuda_12_line_with_12_0_kernels_and_on_r565_nothing_naming_r570() -> None:
    recommendation = _json(gpus=("12.0",), driver="570.86.16")["recommendation"]
    assert recommendation["cuda"].startswith("12.") and "12.0" in recommendation["sass"]
    done = subprocess.run(
        [sys.executable, "-m", "pickvariant", "detect", "--source", "wheels", "--gpu", "12.0", "--driver", "565.57.01",
         "--cpuinfo", str(HASWELL)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3
    assert "R570" in done.stderr and done.stderr.count("\n") == 1


def test_a_t4_on_r470_gets_no_cuda_wheel_and_the_driver_floor_is_named() -> None:
    answer = _answer(gpus=("7.5",), driver="470.256.02")
    assert answer.decision.build is None
    floor = min(b.cuda_min_driver for b in WHEELS.builds if b.cuda_min_driver is not None)
    assert any(f"a driver >= {floor}" in hint for hint in answer.decision.hints)
    # The nearest index named is one the smallest driver update reaches (issue 53), and the cpu wheel is offered.
    lowest = {b.index for b in WHEELS.builds if b.cuda_min_driver == floor}
    nearest = re.search(r"the nearest, (\S+) wheels", answer.decision.reasons[-1])
    assert nearest and nearest.group(1) in lowest, answer.decision.reasons[-1]
    assert "--no-gpu: the cpu wheel runs here, without the GPUs" in answer.decision.hints


def test_a_1080_beside_a_4090_gets_the_line_that_covers_both() -> None:
    document = _json(gpus=("6.1", "8.9"), driver="580.95.05")
    sass = [ComputeCapability(*map(int, c.split("."))) for c in document["recommendation"]["sass"]]
    for major, minor in ((6, 1), (8, 9)):
        assert any(c.major == major and c.minor <= minor for c in sass)


def test_a_gh200_gets_an_aarch64_cuda_wheel() -> None:
    recommendation = _json(cpuinfo=GRACE, gpus=("9.0",), driver="580.95.05")["recommendation"]
    assert recommendation["platform"] == "linux-aarch64" and recommendation["cuda"] is not None


def test_an_apple_silicon_mac_gets_the_macos_arm64_wheel_and_an_intel_mac_the_truth() -> None:
    document = _json(cpuinfo=cpuinfo_path("darwin-sequoia-m4"))
    assert document["recommendation"]["platform"] == "macos-arm64"
    assert any("MPS" in reason for reason in document["reasons"])
    # NVIDIA GPUs stated for a Mac change nothing, and both sources say so in the same words.
    stated = ["--cpuinfo", str(cpuinfo_path("darwin-sequoia-m4")), "--gpu", "8.0", "--python-version", "3.12"]
    said = {}
    for source in ("flox", "wheels"):
        result = runner.invoke(app, ["detect", "--source", source, "--format", "json", *stated])
        said[source] = [r for r in json.loads(result.stdout)["reasons"] if "NVIDIA" in r]
    assert said["wheels"] == said["flox"] and "change nothing on macOS" in said["wheels"][0]
    intel = _answer(cpuinfo=cpuinfo_path("darwin-mojave-skylake"))
    assert intel.decision.build is None and "Intel Mac" in intel.decision.reasons[-1]


def test_cpu_only_linux_gets_the_cpu_index_and_the_dispatch_level_it_will_run_at() -> None:
    document = _json()
    assert document["recommendation"]["index_url"].endswith("/cpu")
    assert document["cpu_dispatch"] == "AVX2"  # Haswell: avx2 and fma, no AVX-512
    assert any("ATen picks its CPU kernels at run time" in reason for reason in document["reasons"])


def test_pins_narrow_and_a_pin_that_matches_nothing_is_bad_input() -> None:
    pinned = _json(gpus=("9.0",), driver="580.95.05", torch="2.12", cuda="13.0")["recommendation"]
    assert Version(pinned["release"]).release[:2] == (2, 12) and pinned["cuda"] == "13.0"
    with pytest.raises(BadInput, match=r"--torch 1\.13"):
        _answer(gpus=("9.0",), torch="1.13")
    with pytest.raises(BadInput, match="--with vllm"):
        _answer(gpus=("9.0",), with_projects=("vllm",))


@pytest.mark.parametrize("cuda", ["12.8", "12.9", "13"])
def test_cuda_pins_the_line_of_cuda_builds_alone_in_both_sources_one_rule(cuda: str) -> None:
    """Issue 71 (one rule per question): `--cuda` pins the CUDA line of CUDA builds (docs/reference/commands.md),
    for every source. A machine with no NVIDIA GPU still gets the build without CUDA that runs there, from the
    recipes and from the wheels alike, each saying the pin left it; with a GPU, both answer a build of that line."""
    from pickvariant import api

    flags = ["--cpuinfo", str(HASWELL), "--cuda", cuda, "--python-version", "3.13", "--format", "json"]
    for source in ("flox", "wheels"):
        found = runner.invoke(app, ["detect", "--source", source, "--no-gpu", *flags])
        assert found.exit_code == 0, (source, found.output)
        document = json.loads(found.stdout)
        assert document["build"]["cuda"] is None and document["build"]["sass"] == [], source
        assert any(reason.startswith(f"--cuda {cuda} pins the CUDA line") for reason in document["reasons"]), source
    for source in ("flox", "wheels"):
        request = Request(cpuinfo=HASWELL, gpus=("9.0",), driver="580.95.05", cuda=cuda, python="3.13")
        build = api.answer(request, source=source).runs_on
        assert build is not None and build.cuda is not None, source
        assert Version(build.cuda).release[: len(cuda.split("."))] == Version(cuda).release, (source, build.cuda)
        said = api.answer(request, source=source).decision.reasons
        assert not any(reason.startswith("--cuda") for reason in said), source


def test_pypis_own_build_comes_first_with_companions_as_their_makers_pair_them() -> None:
    """Issue 53: an H100 on R580 asking for torchvision and torchaudio, no index named: torch 2.15.0, PyPI's own
    build (no index URL, pinned without a local label), with torchvision 0.29.2 and torchaudio 2.11.0 (wheels.md
    section 3: torchaudio stopped at 2.11.0, which names no torch requirement and serves later torch releases)."""
    answer = _answer(gpus=("9.0",), driver="580.95.05", with_projects=("torchvision", "torchaudio"))
    decision = answer.decision
    assert decision.build is not None and decision.build.default_index and decision.detail.from_pypi
    assert decision.build.torch == max((b.torch for b in WHEELS.builds), key=Version) == "2.15.0"
    assert decision.detail.index_url is None
    assert [(p.project, p.version) for p in decision.companions] == [
        ("torchvision", "0.29.2"),
        ("torchaudio", "2.11.0"),
    ]
    requirements = requirements_text(answer)
    assert "--index-url" not in requirements
    assert requirements.splitlines()[-3:] == ["torch==2.15.0", "torchvision==0.29.2", "torchaudio==2.11.0"]
    assert "[[tool.uv.index]]" not in pyproject_text(answer)
    assert any("pytorch/audio#4212" in reason for reason in decision.reasons)


def test_companions_come_from_the_same_index_and_move_the_answer_to_a_release_that_pairs_them() -> None:
    """With an index named, every wheel comes from it: torchaudio's pairing with later torch releases is true of
    PyPI's builds only, so the answer moves to the newest release the index pairs torchaudio with."""
    request = Request(cpuinfo=HASWELL, gpus=("9.0",), driver="580.95.05", with_projects=("torchvision", "torchaudio"))
    answer = decide_prebuilt(replace(request, index=WHEELS.index_root), env={})
    build = answer.decision.build
    assert build is not None and not answer.decision.detail.from_pypi
    pairs = [WHEELS.companion(build.torch, project) for project in ("torchvision", "torchaudio")]
    assert all(pair is not None and not pair.pypi_only for pair in pairs)
    newer = [b for b in answer.decision.candidates if Version(b.torch) > Version(build.torch)]
    torchaudio = [WHEELS.companion(b.torch, "torchaudio") for b in newer]
    assert newer and all(pair is None or pair.pypi_only for pair in torchaudio)
    requirements = requirements_text(answer)
    assert f"--index-url {answer.decision.detail.index_url}\n" in requirements
    assert "torchaudio==" in requirements and "torchvision==" in requirements
    assert 'torchaudio = [{ index = "pytorch-' in pyproject_text(answer)


def test_ptx_of_a_lower_capability_is_admitted_with_its_first_start_cost_and_sass_alone_is_not() -> None:
    build = published(
        source="wheels", torch="9.9.0", index="cu999", platform="linux-x86_64", python=("cp312",),
        sass=(ComputeCapability(9, 0),), ptx=(ComputeCapability(9, 0),), cuda="12.8",
        cuda_min_driver=parse_driver_version("525.60.13"),
    )  # fmt: skip
    catalog = PrebuiltCatalog(
        builds=(build,), left_out=(), companions={}, index_root="http://mirror", facts_compiled="", sources={}
    )
    answer = _answer(gpus=("12.0",), driver="580.95.05")
    decision = pick_prebuilt(answer.facts, answer.hardware, catalog, Request(gpus=("12.0",)), None, "http://mirror")
    assert decision.build == build
    assert any("JIT-compiles its compute_9.0 PTX" in reason for reason in decision.reasons)
    no_ptx = PrebuiltCatalog(
        builds=(replace(build, code=replace(build.code, ptx=())),), left_out=(), companions={}, index_root="x",
        facts_compiled="", sources={},
    )  # fmt: skip
    assert pick_prebuilt(answer.facts, answer.hardware, no_ptx, Request(gpus=("12.0",)), None, "x").build is None


def _venv(tmp_path: Path) -> tuple[Path, Path]:
    """A real virtual environment (no pip in it): its interpreter, and its site-packages as that interpreter says."""
    import venv

    venv.create(tmp_path / "env", with_pip=False, symlinks=True)
    python = tmp_path / "env" / "bin" / "python"
    query = [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    return python, Path(subprocess.run(query, capture_output=True, text=True, check=True).stdout.strip())


def test_the_environment_is_read_without_importing_its_torch(tmp_path: Path) -> None:
    """A real virtual environment holding a torch whose import raises, a `.pth` file that would run code at start-up
    and a METADATA of 300 MB (sparse): the version is read, nothing of the environment runs (issue 51)."""
    wrapper, site = _venv(tmp_path)
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('imported')\n")
    marker = tmp_path / "pth-ran"
    (site / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n")
    (site / "torch-2.14.1+cu130.dist-info").mkdir()
    with (site / "torch-2.14.1+cu130.dist-info" / "METADATA").open("w") as metadata:
        metadata.write("Metadata-Version: 2.1\nName: torch\nVersion: 2.14.1+cu130\n")
        metadata.truncate(300 * 1024 * 1024)
    document = prebuilt_json(
        decide_prebuilt(
            replace(Request(cpuinfo=HASWELL, gpus=("6.0",), driver="580.95.05"), interpreter=str(wrapper)), env={}
        )
    )
    environment = document["environment"]
    assert environment["python"] == ".".join(map(str, sys.version_info[:3]))
    assert environment["said"] == "torch 2.14.1+cu130 in this environment has no kernels for GPU 0 (6.0)"
    assert not marker.exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--source", "pip"], "--source"),
        (["--source", "wheels", "--wheel-index", "http://a b"], "--wheel-index"),
        (["--source", "wheels", "--python", "/nonexistent/python"], "--python"),
        (["--python", "/usr/bin/python3"], "--python"),
        (["--format", "requirements"], "--format requirements"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_and_exit_2(args: list[str], named: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pickvariant", "detect", "--no-gpu", "--cpuinfo", str(HASWELL), *args],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and named in done.stderr and "Traceback" not in done.stderr


def test_an_interpreter_that_prints_without_end_is_stopped_and_named(tmp_path: Path) -> None:
    flood = tmp_path / "python"
    flood.write_text("#!/bin/sh\nexec yes '{}'\n")
    flood.chmod(0o755)
    with pytest.raises(BadInput, match="--python") as raised:
        decide_prebuilt(replace(Request(cpuinfo=HASWELL, no_gpu=True), interpreter=str(flood)), env={})
    # The bound it says is the one it read to (64 KiB), never "more than 0 MiB".
    assert "printed more than 64 KiB and was stopped" in str(raised.value), raised.value


def test_the_same_machine_gives_the_same_bytes_whatever_the_hash_seed() -> None:
    outputs = {
        subprocess.run(
            [sys.executable, "-m", "pickvariant", "detect", "--source", "wheels", "--format", "json", "--cpuinfo",
             str(HASWELL), "--gpu", "8.6", "--gpu", "8.0", "--driver", "575.57.08"],
            capture_output=True, text=True, timeout=120, check=True,
            env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }  # fmt: skip
    assert len(outputs) == 1


def test_report_gives_the_wheel_answer_and_the_environment_for_a_support_ticket(tmp_path: Path) -> None:
    require(torch_site_packages() is not None, "torch is not installed (pip install torch==2.13.0): the probe needs it")
    args = ["report", "--source", "wheels", "--gpu", "6.0", "--driver", "580.95.05", "--cpuinfo", str(HASWELL)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    markdown = subprocess.run(
        [sys.executable, "-m", "pickvariant", *args, "--python", sys.executable],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    ).stdout  # fmt: skip
    expected = _newest("linux-x86_64", lambda b: b.index == "cu126")
    # The report's own shape, as for recipes (issue 52): the recommendation, the machine, the environment, the
    # torch probed there, the reasons; a torch there that the rules judge does not run here is a mismatch.
    assert markdown.startswith("### pickvariant report")
    assert f"- Recommendation: `torch=={expected.label}` from `{expected_index(expected)}`" in markdown
    # A ticket names no local path: the interpreter is `python` (issue 51).
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert f"- Environment: Python {'.'.join(map(str, sys.version_info[:3]))} ({tag}) at `python`" in markdown
    assert sys.executable not in markdown
    from importlib.metadata import version

    # A stated machine: the interpreter's files are read (torch is not imported, nothing of this machine probed).
    assert f"- Installed PyTorch: torch {version('torch')}, read from the interpreter's files" in markdown
    assert "**Mismatches:**" in markdown and "CPU-only build: it leaves this machine's GPUs unused" in markdown
    document = json.loads(
        subprocess.run(
            [sys.executable, "-m", "pickvariant", *args, "--python", sys.executable, "--format", "json"],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        ).stdout
    )  # fmt: skip
    flox = json.loads(
        subprocess.run(
            [sys.executable, "-m", "pickvariant", "report", *args[3:], "--format", "json"],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        ).stdout
    )  # fmt: skip
    report_fields = {"described", "system", "gpu_health", "installed_torch", "mismatches", "last_install"}
    assert report_fields <= set(document) and report_fields <= set(flox)
    assert document["described"] is True and document["system"] == {"kernel": None, "python": None}


def expected_index(build) -> str:
    return f"{WHEELS.index_root}/{build.index}"


@pytest.mark.parametrize(("gpu", "fits"), [("9.0", "yes"), ("6.0", "no")])
def test_pypis_own_torch_without_a_local_label_is_judged_as_the_build_it_is(
    tmp_path: Path, gpu: str, fits: str
) -> None:
    release = next(b for b in WHEELS.builds if b.platform == "linux-x86_64" and b.default_index and b.cuda is not None)
    wrapper, site = _venv(tmp_path)
    (site / f"torch-{release.torch}.dist-info").mkdir(parents=True)
    (site / f"torch-{release.torch}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {release.torch}\n"
    )
    request = Request(cpuinfo=HASWELL, gpus=(gpu,), driver="580.95.05")
    environment = prebuilt_json(decide_prebuilt(replace(request, interpreter=str(wrapper)), env={}))["environment"]
    covers = any(c.major == 9 for c in release.sass) if gpu == "9.0" else any(c.major == 6 for c in release.sass)
    assert environment["torch_runs_here"] == ("yes" if covers else "no") == fits
    assert environment["said"].startswith(f"torch {release.torch} (PyPI's build, {release.label}) in this environment")


def test_install_where_no_wheel_runs_ends_with_detects_own_line() -> None:
    """An RTX 5090 on R565: `install --source wheels` plans nothing and ends as detect does (exit 3), with the same
    one line naming the driver that would serve it, never a plan or another wording."""
    machine = ["--source", "wheels", "--gpu", "12.0", "--driver", "565.57.01", "--cpuinfo", str(HASWELL)]
    detected = runner.invoke(app, ["detect", *machine])
    installed = runner.invoke(app, ["install", *machine, "--python", sys.executable, "--dry-run"])
    assert detected.exit_code == installed.exit_code == 3
    assert installed.stdout == "" and installed.stderr == detected.stderr and "R570" in installed.stderr


@pytest.mark.parametrize("driver", ["590.10", "470.256.02"])
def test_a_pascal_card_is_told_the_driver_window_both_sources_tell_it(driver: str) -> None:
    """A GTX 1080 on a driver newer than R580 (the last branch that drives Pascal) or older than CUDA 12.6's floor:
    both sources name the same ceiling; the wheel hint never names a floor the driver already passes (issue 52's
    false sentence, "a driver >= 525.60.13 would run …" to a 590.10 driver)."""
    machine = ["--gpu", "6.1", "--driver", driver, "--cpuinfo", str(HASWELL)]
    flox = runner.invoke(app, ["detect", *machine])
    wheels = runner.invoke(app, ["detect", "--source", "wheels", *machine])
    assert flox.exit_code == wheels.exit_code == 3
    ceiling = re.search(r"a driver of branch (R\d+) or older", flox.stderr)
    if driver == "590.10":  # newer than the last branch that drives Pascal: both name that branch
        assert ceiling, flox.stderr
        assert f"a driver of branch {ceiling.group(1)} or older, >= " in wheels.stderr, wheels.stderr
        assert not re.search(r"a driver >= [0-9.]+ would run", wheels.stderr)
    else:  # too old: both name the floor alone
        assert ceiling is None and "or older" not in wheels.stderr
        assert re.search(r"a driver >= 525\.60\.13 would run torch", wheels.stderr), wheels.stderr


def test_a_virtual_environment_read_from_its_files_is_read_as_its_interpreter_reads_it(
    tmp_path: Path, monkeypatch
) -> None:
    """Issue 52: a venv whose files say enough is read without starting its interpreter; the answer is the one the
    interpreter itself gives (its `.pth` run by neither), torch and torchvision found alike."""
    from pickvariant.machine import environment

    python, site = _venv(tmp_path)
    for project, version in (("torch", "2.14.1+cu130"), ("torchvision", "0.29.1+cu130")):
        (site / f"{project}-{version}.dist-info").mkdir(parents=True)
        (site / f"{project}-{version}.dist-info" / "METADATA").write_text(f"Name: {project}\nVersion: {version}\n")
    marker = tmp_path / "pth-ran"
    (site / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n")
    assert environment._from_files(str(python), "--python") is not None  # its files say enough: no interpreter starts
    from_files = environment.read_environment(str(python), "--python", env={})
    monkeypatch.setattr(environment, "_from_files", lambda path, given_as: None)
    from_interpreter = environment.read_environment(str(python), "--python", env={})
    assert from_files == from_interpreter
    assert from_files.installed["torch"] == "2.14.1+cu130" and from_files.site == str(site)
    assert not marker.exists()


def test_the_interpreter_running_pickvariant_is_read_in_process_as_it_reads_itself_when_started(monkeypatch) -> None:
    """The environment of the interpreter pickvariant runs in (a system or conda Python, read where its files do not
    say enough) is read in this process, with no interpreter started: the same answer the interpreter gives when
    started as `python -E -S`. A variable -E would ignore that moves its folders (PYTHONUSERBASE …) means it is
    started instead, as another interpreter is."""
    from pickvariant.machine import environment

    started: list[list[str]] = []
    monkeypatch.setattr(environment, "_from_files", lambda path, given_as: None)  # as for a system Python
    for name in ("PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE", "PYTHONPLATLIBDIR"):
        monkeypatch.delenv(name, raising=False)
    import pickvariant._base.capture as capture

    real = capture.Capturing
    monkeypatch.setattr(capture, "Capturing", lambda argv, *rest, **kw: started.append(argv) or real(argv, *rest, **kw))
    here = environment.read_environment(sys.executable, "--python", env={})
    assert started == []  # read in this process
    monkeypatch.setenv("PYTHONUSERBASE", str(Path(sys.prefix) / "elsewhere"))
    asked = environment.read_environment(sys.executable, "--python", env={})
    assert len(started) == 1 and started[0][:3] == [os.path.abspath(sys.executable), "-E", "-S"]
    assert here == asked


_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from('\x00\x1f\\"\udcff\U0001f600 -_.\r\n\t'), max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    name=_TEXT,
    head=_TEXT,
    value=st.recursive(st.none() | st.booleans() | _TEXT, lambda inner: st.dictionaries(_TEXT, inner, max_size=4)),
)
def test_the_interpreter_script_reads_and_writes_as_re_and_json_would(name, head, value) -> None:
    """The script an interpreter runs imports neither re nor json (they were most of its time): its name
    normalisation, its Version: reading and its JSON are held to PEP 503's re.sub, `^Version: *(\\S+)` (re.M) and
    json.dumps on any text, lone surrogates (a non-UTF-8 path) and control characters included."""
    from pickvariant.machine.environment_script import FIND, WRITE

    script: dict = {}
    exec(FIND + WRITE, script)
    assert script["normal"](name) == re.sub(r"[-_.]+", "_", name).lower()
    expected = re.search(r"^Version: *(\S+)", head, re.M)
    assert script["version_in"](head) == (expected.group(1) if expected else None)
    assert script["dumped"](value) == json.dumps(value)


def test_an_interpreter_started_early_is_stopped_when_another_input_is_refused(tmp_path, capsys) -> None:
    """The --python interpreter is started as the wheel answer begins, to run while the machine and the catalog are
    read. Where another input is then refused (a --cpuinfo that is not there), that one line is the answer, exit 2,
    and the interpreter (here one that would hang for a minute) is not left running nor waited for."""
    import time

    from pickvariant.machine.environment import Reading

    pid_file = tmp_path / "pid"
    hanging = tmp_path / "python3"
    hanging.write_text(f"#!/bin/sh\necho $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}\nexec sleep 60\n")
    hanging.chmod(0o755)
    missing = tmp_path / "no-such-cpuinfo"
    result = runner.invoke(
        app, ["detect", "--source", "wheels", "--python", str(hanging), "--cpuinfo", str(missing), "--format", "json"]
    )
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("pickvariant: --cpuinfo") and str(missing) in result.stderr
    assert result.stderr.count("\n") == 1
    # The same through the entry point's own path (no typer), which starts the interpreter sooner still.
    from pickvariant.cli.entry import main

    args = ["detect", "--source", "wheels", "--python", str(hanging), "--cpuinfo", str(missing), "--format", "json"]
    assert main(args) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == result.stderr
    # The same reading, stopped once the interpreter surely runs: it is gone (stopped and reaped), not left running.
    pid_file.unlink(missing_ok=True)
    reading = Reading(str(hanging), "--python", env={})
    for _ in range(1000):
        if pid_file.exists():
            break
        time.sleep(0.01)
    pid = int(pid_file.read_text())
    assert Path(f"/proc/{pid}").exists()
    reading.stop()
    assert not Path(f"/proc/{pid}").exists()


def test_the_machine_stage_is_every_sources_gpus_nvml_could_not_read_and_a_gpu_index_not_there() -> None:
    """Issue 52: the platform and GPU stage is one for every source (rules/stages.machine). GPUs NVML could not read
    stop both answers after their own platform sentence, in the same words and with the same hint; a --gpu-index no
    GPU has is the same bad input for both."""
    from machines import host

    from pickvariant.api import default_catalog, hardware_catalog
    from pickvariant.rules.decide import decide

    catalog = default_catalog()
    facts = replace(host(catalog, dump="linux-rhel7-haswell"), gpu_inconclusive=True)
    recipes = decide(facts, catalog, Request())
    wheels = pick_prebuilt(facts, hardware_catalog(), WHEELS, Request(), None, WHEELS.index_root)
    assert recipes.build is None and wheels.build is None
    assert len(recipes.reasons) == len(wheels.reasons) == 2 and recipes.reasons[1] == wheels.reasons[1]
    assert "GPU detection was inconclusive" in recipes.reasons[1]
    assert recipes.hints == wheels.hints and "--gpu CC" in recipes.hints[0]
    said = []
    for source in ("flox", "wheels"):
        args = ["detect", "--source", source, "--cpuinfo", str(HASWELL), "--gpu", "9.0", "--gpu-index", "3"]
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        said.append(result.stderr)
    assert said[0] == said[1] and "--gpu-index 3: no such GPU (GPU indices present: 0)" in said[0]
    # A stated GPU with no driver: the driver is assumed, said by both in one sentence.
    assumed = []
    for source in ("flox", "wheels"):
        args = ["detect", "--source", source, "--format", "json", "--cpuinfo", str(HASWELL), "--gpu", "9.0"]
        reasons = json.loads(runner.invoke(app, args).stdout)["reasons"]
        assumed.append([reason for reason in reasons if reason.startswith("driver: none given")])
    assert assumed[0] == assumed[1] and len(assumed[0]) == 1, assumed


def test_gpu_index_says_what_the_wheel_means_for_the_other_gpus_as_the_recipe_answer_does() -> None:
    """A 4090 + 1080 answered for GPU 0 alone (--gpu-index 0): both sources name GPU 1, the kernels it lacks and how
    to keep a process off it (issue 52); the wheel chosen for the 4090 alone has no 6.1 kernels (facts/wheels.md:
    6.1 is in cu126's lists only)."""
    machine = ["--gpu", "8.9", "--gpu", "6.1", "--driver", "580.95.05", "--cpuinfo", str(HASWELL), "--gpu-index", "0"]
    for source in ("flox", "wheels"):
        result = runner.invoke(app, ["detect", "--source", source, "--format", "json", *machine])
        assert result.exit_code == 0, result.output
        said = [reason for reason in json.loads(result.stdout)["reasons"] if "chosen for GPU 0 (--gpu-index)" in reason]
        assert said and "no kernels for GPU 1 (6.1)" in said[0] and "CUDA_VISIBLE_DEVICES=0" in said[0], source


_DUMPS = sorted(p.name for p in (REPO / "tests" / "fixtures" / "cpuinfo").iterdir() if p.name.startswith("linux-"))
_SCENARIOS = {
    "5090 on R565": ["--gpu", "12.0", "--driver", "565.57.01"],  # the driver cannot drive the GPU
    "1080 on 590": ["--gpu", "6.1", "--driver", "590.10"],  # newer than the last branch that drives Pascal
    "H100 on R470": ["--gpu", "9.0", "--driver", "470.256.02"],  # below every CUDA line's floor
    "4090 + 1080, GPU 0": ["--gpu", "8.9", "--gpu", "6.1", "--driver", "580.95.05", "--gpu-index", "0"],
}


def _hardware_sentences(document: dict) -> set[str]:
    """What an answer says of the machine itself, whatever it then picks: its GPUs, what the driver can drive."""
    said = [*document["reasons"], *document["hints"]]
    described = re.compile(r"GPU \d+: ")  # "GPU 0: NVIDIA …, compute capability 9.0 (discrete)"
    return {s for s in said if described.match(s) or (s.startswith("driver ") and "cannot drive" in s)}


@pytest.mark.parametrize("scenario", list(_SCENARIOS))
@pytest.mark.parametrize("dump", _DUMPS)
def test_a_stated_machine_gets_the_same_sentences_about_its_hardware_from_both_sources(dump, scenario) -> None:
    """Issue 52: the GPUs, what the driver cannot drive and the floor it is below are one rule's sentences, said the
    same by the recipe answer and the wheel answer, for every real CPU dump (where a platform has no builds of a
    source, that source says so instead, and there is nothing to compare)."""
    machine = ["--cpuinfo", str(cpuinfo_path(dump)), *_SCENARIOS[scenario], "--python-version", "3.12"]
    said = {}
    for source in ("flox", "wheels"):
        result = runner.invoke(app, ["detect", "--source", source, "--format", "json", *machine])
        assert result.exit_code in (0, 3), result.output
        said[source] = _hardware_sentences(json.loads(result.stdout))
    assert said["flox"] == said["wheels"]
    if "power" not in dump and "s390x" not in dump:  # a platform neither source builds for says only that
        assert any(s.startswith("GPU 0: ") for s in said["flox"])  # the comparison did compare something


@pytest.mark.parametrize(("cuda", "runs"), [("13.2", True), ("13.0", False)])
def test_a_jetson_orin_runs_an_aarch64_cuda_13_2_wheel_only_on_a_cuda_13_2_driver(cuda: str, runs: bool) -> None:
    """Issue 53: an Orin (8.7, a Tegra GPU) on a JetPack driver that reports CUDA 13.2 runs the aarch64 cu132 wheel's
    sm_80 code, as torch 2.15.0's own DEVICE_REQUIREMENT_POST_JETSON_SBSA_UNIFICATION says (facts/wheels.md 2.15);
    on a CUDA 13.0 driver it does not, and no wheel is named."""
    answer = _answer(cpuinfo=GRACE, gpus=("8.7",), driver="580.95.05", python="3.12", driver_cuda=cuda)
    build = answer.decision.build
    if not runs:
        assert build is None or build.cuda is None, build
        return
    newest = _newest("linux-aarch64", lambda b: b.cuda is not None and Version(b.cuda) >= Version("13.2"))
    assert build is not None and build.label == newest.label and ComputeCapability(8, 0) in build.sass
    # A Jetson's driver is JetPack's, judged by the CUDA it reports (no minor-version compatibility there): the
    # floor said is that, never the dGPU driver number 580.65.06.
    assert prebuilt_json(answer)["recommendation"]["min_driver"] is None
    assert f"(a JetPack driver of CUDA {build.cuda} or newer)" in " ".join(prebuilt_text_lines(answer, 200))


def test_a_torch_there_whose_cuda_line_the_driver_cannot_run_does_not_run_here(tmp_path: Path) -> None:
    """Issue 53: a torch in the environment is kept only where it runs, and that takes the driver too: a CUDA 13
    build with sm_90 kernels on an H100 whose R550 driver runs CUDA 12.4 at most is said not to run, naming the
    driver, and is no build `install` keeps."""
    driver = "550.54.15"
    build = next(
        b
        for b in WHEELS.builds
        if b.platform == "linux-x86_64" and b.cuda is not None and not b.default_index and b.cuda_min_driver is not None
        and b.cuda_min_driver > parse_driver_version(driver) and any(c.major == 9 for c in b.sass)
    )  # fmt: skip
    wrapper, site = _venv(tmp_path)
    (site / f"torch-{build.label}.dist-info").mkdir(parents=True)
    (site / f"torch-{build.label}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {build.label}\n"
    )
    request = Request(cpuinfo=HASWELL, gpus=("9.0",), driver=driver)
    environment = prebuilt_json(decide_prebuilt(replace(request, interpreter=str(wrapper)), env={}))["environment"]
    assert environment["torch_runs_here"] == "no"
    assert environment["said"].startswith(f"torch {build.label} in this environment cannot run on this driver")
    assert driver in environment["said"]


@pytest.mark.parametrize(
    ("gpu", "driver", "floor", "said"),
    [
        # An RTX 5090 (12.0) needs R570, the first branch that drives Blackwell (hardware-facts.md), although its
        # wheel's CUDA 12.x line runs on >= 525.60.13: the machine's floor is the newer of the two.
        ("12.0", "570.86.15", "570", "driver >= R570"),
        # An H100 on a CUDA 13 wheel: the CUDA line's floor, 580.65.06, is the newer.
        ("9.0", "580.95.05", "580.65.06", "driver >= 580.65.06"),
    ],
)
def test_the_driver_floor_said_is_the_machines_own(gpu: str, driver: str, floor: str, said: str) -> None:
    """Issue 53: `min_driver` was the CUDA line's floor alone (525.60.13 for an RTX 5090, which needs R570)."""
    request = Request(cpuinfo=HASWELL, gpus=(gpu,), driver=driver)
    answer = decide_prebuilt(request, env={})
    assert prebuilt_json(answer)["recommendation"]["min_driver"] == floor
    assert said in " ".join(prebuilt_text_lines(answer, 200, False))


def test_a_driver_stated_as_a_branch_is_read_as_its_first_release_never_as_older_than_it() -> None:
    """Issue 53: `--driver 580` was judged as 580.0.0 and said to be "older than 580.65.06". Issue 70: every R580
    driver is at least R580's first release, 580.65.06 (the CUDA 13 family's minimum, the facts say), so the branch
    is read as that release, said in a note, and the CUDA 13 wheels run; a branch older than the floor's is still
    older."""
    zen4 = cpuinfo_path("linux-rocky8.5-zen4")
    branch = decide_prebuilt(Request(cpuinfo=zen4, gpus=("9.0",), driver="580"), env={})
    full = decide_prebuilt(Request(cpuinfo=zen4, gpus=("9.0",), driver="580.65.06"), env={})
    assert branch.decision.build == full.decision.build and branch.decision.build.cuda.startswith("13.")
    text = " ".join(prebuilt_text_lines(branch, 400, True))
    assert "580 is read as 580.65.06, the first release of branch R580" in text
    assert "driver 580 is older than" not in text
    older = decide_prebuilt(Request(cpuinfo=zen4, gpus=("9.0",), driver="575"), env={})
    assert "driver 575 is older than 580.65.06, the minimum for CUDA 13.2" in " ".join(
        prebuilt_text_lines(older, 400, True)
    )


@pytest.mark.parametrize(
    ("pin", "said"),
    [("1.13", "the wheel catalog starts at 2.8.0"), ("2.16", "the newest release the wheel catalog judges is 2.15.0")],
)
def test_a_torch_pin_outside_the_catalog_is_said_to_be_unjudged_never_to_have_no_wheel(pin: str, said: str) -> None:
    """Issue 53: `--torch 1.13` said "no wheel of it for this platform", although PyTorch published one: it is
    outside what the catalog judges (wheels.md covers 2.8 to 2.15), and the refusal says so (exit 2)."""
    first, newest = (
        min((b.torch for b in WHEELS.builds), key=Version),
        max((b.torch for b in WHEELS.builds), key=Version),
    )
    assert (first, newest) == ("2.8.0", "2.15.0")  # wheels.md's title: torch 2.8 - 2.15
    with pytest.raises(BadInput) as refused:
        _answer(gpus=("9.0",), driver="580.95.05", torch=pin)
    assert f"--torch {pin}: not judged: {said}" in str(refused.value)
    assert "no wheel of it" not in str(refused.value)


def test_a_driver_older_than_every_line_in_the_catalog_hears_that_older_releases_are_outside_it() -> None:
    """Issue 53: a T4 on R470 (CUDA 11.4 at most; every CUDA 12 line needs >= 525.60.13 by minor-version
    compatibility, hardware-facts.md) gets no wheel; it is told the catalog starts at 2.8.0 and that older
    releases (CUDA 11.8 ones) are not judged, and the CPU wheel is named as what runs without the GPU."""
    answer = _answer(cpuinfo=cpuinfo_path("linux-rhel7-skylake_avx512"), gpus=("7.5",), driver="470.256.02")
    decision = answer.decision
    assert decision.build is None
    assert any(
        "driver 470.256.02 is older than every CUDA line the wheel catalog holds (they need >= 525.60.13): it "
        "starts at torch 2.8.0" in reason
        for reason in decision.reasons
    )
    assert any(hint.startswith("--no-gpu: the cpu wheel runs here") for hint in decision.hints)
    on_r525 = _answer(cpuinfo=cpuinfo_path("linux-rhel7-skylake_avx512"), gpus=("7.5",), driver="525.60.13")
    assert on_r525.decision.build is not None
    assert not any("older than every CUDA line" in reason for reason in on_r525.decision.reasons)


def test_the_builds_left_out_are_named_two_and_counted_with_every_one_in_explain_and_json() -> None:
    """Issue 53: the default answer spent seven lines on "not judged"; now it names the newest two and counts the
    rest, and --explain and the JSON list each with why."""
    answer = _answer(gpus=("12.0",), driver="565.57.01")
    rows = answer.decision.detail.left_out
    assert len(rows) > 2
    sentence = next(reason for reason in answer.decision.reasons if reason.startswith("not judged"))
    assert sentence.endswith(f"and {len(rows) - 2} more, each with why under --explain and in the JSON's left_out")
    assert all(row in " ".join(prebuilt_text_lines(answer, 1000, True)) for row in rows)
    assert prebuilt_json(answer)["left_out"] == list(rows)
    assert rows[0].startswith("torch 2.15.0")  # newest first


def test_a_stated_windows_machine_gets_windows_wheels_with_its_driver_judged_by_its_cuda_version() -> None:
    """Issue 53: a Windows machine with a GTX 1080 (no /proc/cpuinfo to give: --platform windows-amd64). PyTorch's
    Windows cu126 wheels keep 6.1 where the Linux ones do not (wheels.md: "Win adds 6.1"), so it gets the newest
    Windows cu126 build the catalog holds, not Linux's answer; its driver number is not judged by Linux's floors."""
    windows = Request(platform="windows-amd64", gpus=("6.1",), driver="581.57", driver_cuda="12.8")
    answer = decide_prebuilt(windows, env={})
    expected = max(
        (b for b in WHEELS.builds if b.platform == "windows-amd64" and b.index == "cu126"),
        key=lambda b: Version(b.torch),
    )
    assert ComputeCapability(6, 1) in expected.sass
    linux_cu126 = [b for b in WHEELS.builds if b.platform == "linux-x86_64" and b.index == "cu126"]
    assert all(ComputeCapability(6, 1) not in b.sass for b in linux_cu126)  # Linux's carry 6.0, run by SASS 6.x
    assert answer.decision.build == expected and answer.decision.build.platform == "windows-amd64"
    document = prebuilt_json(answer)
    assert document["recommendation"]["min_driver"] is None
    assert any("driver 581.57 on Windows is not judged by its number" in reason for reason in document["reasons"])
    assert document["cpu_dispatch"] is None  # no CPU stated: no dispatch level claimed
    with pytest.raises(BadInput, match=r"--platform windows-amd64: the CPU dump is of linux/x86_64"):
        decide_prebuilt(Request(platform="windows-amd64", cpuinfo=HASWELL, gpus=("6.1",)), env={})


def test_platform_is_the_wheels_sources_alone_and_a_wheel_of_another_platform_is_never_installed_here(
    tmp_path: Path,
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}
    run = functools.partial(subprocess.run, capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO)})
    flox = run([sys.executable, "-m", "pickvariant", "detect", "--platform", "windows-amd64", "--gpu", "6.1"])
    assert flox.returncode == 2 and flox.stderr.startswith("pickvariant: --platform windows-amd64: only with --source")
    args = ["install", "--source", "wheels", "--platform", "windows-amd64", "--gpu", "6.1", "--python", sys.executable]
    refused = run([sys.executable, "-m", "pickvariant", *args, "--yes"])
    assert refused.returncode == 2 and "cannot be installed here (--dry-run shows the plan)" in refused.stderr


@pytest.mark.parametrize(
    ("name", "gpus"),
    [("GTX 1080", ("6.1",)), ("V100", ("7.0",)), ("RTX 4090 + GTX 1080", ("8.9", "6.1"))],
)
def test_pre_turing_cards_get_the_last_cuda_12_wheel_and_hear_that_2_15_has_none(
    name: str, gpus: tuple[str, ...]
) -> None:
    """Issue 53 (must hold): a GTX 1080, a V100 and a 4090 + 1080 on R580 get 2.14.1+cu126, every GPU named, and the
    answer says why not 2.15: its notice says no CUDA 12.6 wheel (wheels.md section 2.15), and its cu132 wheel has no
    kernels for a card below 7.5 (W4)."""
    answer = _answer(gpus=gpus, driver="580.95.05")
    document = prebuilt_json(answer)
    assert document["recommendation"]["torch"] == "2.14.1+cu126", name
    text = " ".join(document["reasons"])
    assert "torch 2.15.0 cu126: a maintainers' notice says 2.15 publishes no CUDA 12.6 wheel" in text
    assert all(f"GPU {index} ({gpu})" in text for index, gpu in enumerate(gpus))


def test_the_wheel_answer_never_reads_the_recipes_catalog(tmp_path: Path) -> None:
    """Issue 52: the wheels source judges its builds by the hardware facts alone; the recipes' catalog is not read,
    so a PICKVARIANT_CATALOG that is no catalog stops the recipe answer (exit 2, naming it) and not the wheel one."""
    broken = tmp_path / "catalog.json"
    broken.write_text("{ not a catalog")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path),
           "PICKVARIANT_CATALOG": str(broken), "PYTHONPATH": str(REPO)}  # fmt: skip
    args = ["detect", "--format", "json", "--cpuinfo", str(HASWELL), "--gpu", "9.0", "--driver", "580.95.05"]
    run = functools.partial(subprocess.run, capture_output=True, text=True, env=env, timeout=120)
    flox = run([sys.executable, "-m", "pickvariant", *args])
    assert flox.returncode == 2 and str(broken) in flox.stderr
    wheels = run([sys.executable, "-X", "importtime", "-m", "pickvariant", *args, "--source", "wheels"])
    assert wheels.returncode == 0, wheels.stderr
    assert json.loads(wheels.stdout) == prebuilt_json(_answer(gpus=("9.0",), driver="580.95.05"))
    # Nor is any of the Flox source's code loaded: the hardware facts are read on their own (sources/hardware_json).
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in wheels.stderr.splitlines() if line.startswith("import time:")
    ]
    assert "pickvariant.sources.hardware_json" in imported
    assert not [name for name in imported if name.startswith("pickvariant.sources.flox")]


def test_the_active_interpreter_and_a_bare_name_are_found_on_path_as_shutil_finds_them(tmp_path: Path) -> None:
    """The interpreter found on PATH (no virtual environment active), and one named by a bare name, are the ones
    shutil.which names (what a shell runs): the first executable file of that name, a directory or a file without the
    execute bit skipped; none where PATH has none."""
    import shutil

    from pickvariant._base.errors import BadInput
    from pickvariant.machine import environment

    folders = [tmp_path / name for name in ("dir-named", "not-executable", "real", "later")]
    for folder in folders:
        folder.mkdir()
    (folders[0] / "python3").mkdir()
    (folders[1] / "python3").write_text("")
    for folder in folders[2:]:
        (folder / "python3").write_text("#!/bin/sh\n")
        (folder / "python3").chmod(0o755)
    path = os.pathsep.join(str(folder) for folder in folders)
    found, given_as = environment.active_interpreter({"PATH": path})
    assert (found, given_as) == (shutil.which("python3", path=path), "PATH") and found == str(folders[2] / "python3")
    assert environment.resolve_interpreter("python3", "--python", {"PATH": path}) == found
    empty = str(tmp_path / "empty")
    assert environment.active_interpreter({"PATH": empty}) == (sys.executable, "pickvariant's own interpreter")
    with pytest.raises(BadInput, match="no such interpreter on PATH"):
        environment.resolve_interpreter("python3", "--python", {"PATH": empty})
