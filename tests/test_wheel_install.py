"""install --source wheels with the real installers: pip and uv install from a mirror on 127.0.0.1 (tests/
wheel_mirror.py) into a fresh virtual environment, resolving local version labels, Python tags and platform tags
themselves; the requirements output installs with `pip install -r`; a wrong torch already there is named and kept
without consent. Nothing reaches the internet: the installers are pointed at the mirror alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cpuinfo_path, fresh_venv, require
from wheel_mirror import build_mirror, served

pytestmark = pytest.mark.slow  # real pip and uv into fresh environments

GTX_1080 = ["--gpu", "6.1", "--driver", "580.95.05", "--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell"))]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PICKVARIANT_", "PIP_", "UV_"))}
    env.pop("VIRTUAL_ENV", None)
    env.update(
        PIP_NO_CACHE_DIR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CONFIG_FILE=os.devnull,
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        UV_NO_CONFIG="1",
        UV_PYTHON_DOWNLOADS="never",
        TMPDIR=str(tmp_path),  # pickvariant's install log and the installers' own temporary files stay in the test's
        **extra,
    )
    return env


def _pickvariant(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _installed(python: Path, project: str) -> str | None:
    code = (
        f"import importlib.metadata as m\ntry: print(m.version({project!r}))\nexcept m.PackageNotFoundError: print('')"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    return out.strip() or None


def _pip_install(python: Path, pin: str, index: str, tmp_path: Path) -> None:
    """torch at `pin` put into the environment by its own pip from `index`: what was there before pickvariant came."""
    subprocess.run(
        [str(python), "-m", "pip", "install", f"torch=={pin}", "--index-url", index],
        env=_env(tmp_path), check=True, capture_output=True, timeout=300,
    )  # fmt: skip


@pytest.fixture
def chosen(tmp_path: Path) -> dict:
    """What detect chooses for a GTX 1080 on R580 with the interpreter's Python: the mirror is built from it."""
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    done = _pickvariant(
        [
            "detect",
            "--source",
            "wheels",
            "--format",
            "json",
            "--python-version",
            python,
            "--with",
            "torchvision",
            *GTX_1080,
        ],
        _env(tmp_path),
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["recommendation"]


@pytest.fixture
def mirror(tmp_path: Path, chosen: dict):
    """The mirror: the chosen torch and torchvision in the chosen variant's index, with a decoy torch of another
    variant beside them, and the decoy's own index."""
    torchvision = chosen["companions"][0]["version"]
    decoy = f"{chosen['release']}+cu130"
    build_mirror(
        tmp_path / "mirror",
        {
            chosen["variant"]: [
                ("torch", chosen["torch"]),
                ("torch", decoy),
                ("torchvision", f"{torchvision}+{chosen['variant']}"),
            ],
            "cu130": [("torch", decoy)],
        },
    )
    with served(tmp_path / "mirror") as url:
        yield url


def test_pip_installs_the_chosen_wheel_from_the_mirror_and_the_dry_run_installs_nothing(
    tmp_path, chosen, mirror
) -> None:
    python = fresh_venv(tmp_path / "venv")
    common = [
        "install",
        "--source",
        "wheels",
        "--python",
        str(python),
        "--wheel-index",
        mirror,
        "--with",
        "torchvision",
    ]
    dry = _pickvariant([*common, *GTX_1080, "--dry-run"], _env(tmp_path), tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert f"-m pip install torch=={chosen['torch']}" in dry.stdout
    assert f"--index-url {mirror}/{chosen['variant']}" in dry.stdout
    assert _installed(python, "torch") is None
    done = _pickvariant([*common, *GTX_1080, "--yes", "--no-verify"], _env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _installed(python, "torch") == chosen["torch"]
    assert _installed(python, "torchvision") == f"{chosen['companions'][0]['version']}+{chosen['variant']}"


def test_a_real_install_with_format_json_prints_one_line_of_what_it_installed(tmp_path, chosen, mirror) -> None:
    """The one install flow (commands/install.run) for every source: a real wheel install with --format json says,
    on one line, its plan, that it installed, its log and its verdict; the installer's progress goes to stderr."""
    python = fresh_venv(tmp_path / "venv")
    args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", mirror, *GTX_1080]
    asked = _pickvariant([*args, "--format", "json", "--no-verify"], _env(tmp_path), tmp_path)
    assert asked.returncode == 2 and "pass --yes" in asked.stderr  # JSON asks nothing
    assert _installed(python, "torch") is None
    done = _pickvariant([*args, "--format", "json", "--yes", "--no-verify"], _env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert done.stdout.count("\n") == 1 and line["installed"] is True and line["verdict"] is None
    assert line["torch"] == chosen["torch"] == _installed(python, "torch")
    assert Path(line["log"]).is_file() and "Successfully installed torch" in done.stderr
    # Asked again: the torch is there, so nothing runs, and the line says so.
    again = _pickvariant([*args, "--format", "json", "--yes", "--no-verify"], _env(tmp_path), tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["installed"] is False, again.stderr


def test_uv_installs_the_chosen_wheel_and_verify_then_runs_against_it(tmp_path, chosen, mirror) -> None:
    try:
        from uv import find_uv_bin
    except ImportError:
        require(False, "uv is not installed (pip install -e '.[test]')")
    uv = Path(find_uv_bin())
    python = fresh_venv(tmp_path / "venv")
    env = _env(tmp_path, PATH=f"{uv.parent}{os.pathsep}{os.environ.get('PATH', '')}", PICKVARIANT_INSTALLER="uv")
    args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", mirror, *GTX_1080, "--yes"]
    done = _pickvariant(args, env, tmp_path)
    assert f"{uv} pip install --python {python} torch=={chosen['torch']}" in done.stdout
    assert _installed(python, "torch") == chosen["torch"]
    # The mirror's torch raises on import: install's verify runs the probe in that environment, which fails it.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Verify: FAIL" in done.stdout


def test_the_requirements_output_installs_with_pip_install_r(tmp_path, chosen, mirror) -> None:
    python = fresh_venv(tmp_path / "venv")
    printed = _pickvariant(
        [
            "detect",
            "--source",
            "wheels",
            "--format",
            "requirements",
            "--wheel-index",
            mirror,
            "--python",
            str(python),
            *GTX_1080,
        ],
        _env(tmp_path),
        tmp_path,
    )
    assert printed.returncode == 0, printed.stderr
    (tmp_path / "requirements.txt").write_text(printed.stdout)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-r", str(tmp_path / "requirements.txt")],
        env=_env(tmp_path),
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert _installed(python, "torch") == chosen["torch"]


def test_a_wrong_torch_already_there_is_named_and_kept_without_consent(tmp_path, chosen, mirror) -> None:
    python = fresh_venv(tmp_path / "venv")
    wrong = f"{chosen['release']}+cu130"
    _pip_install(python, wrong, f"{mirror}/cu130", tmp_path)
    detect = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", "--python", str(python), *GTX_1080],
        _env(tmp_path),
        tmp_path,
    )
    environment = json.loads(detect.stdout)["environment"]
    assert environment["installed"]["torch"] == wrong and environment["torch_runs_here"] == "no"
    assert f"torch {wrong} in this environment has no kernels for GPU 0 (6.1)" == environment["said"]
    asked = _pickvariant(
        ["install", "--source", "wheels", "--python", str(python), "--wheel-index", mirror, *GTX_1080],
        _env(tmp_path),
        tmp_path,
    )
    assert asked.returncode == 2
    assert f"replaces torch {wrong}" in asked.stdout
    assert asked.stderr.count("\n") == 1 and "--yes" in asked.stderr
    assert _installed(python, "torch") == wrong


def test_a_companion_of_another_build_beside_the_chosen_torch_is_not_already_there(tmp_path, chosen) -> None:
    """torch of the chosen build with torchvision's CPU build beside it (issue 51): the plan replaces torchvision
    rather than calling the set already there (and skipping verify)."""
    torchvision = chosen["companions"][0]["version"]
    build_mirror(
        tmp_path / "mirror",
        {
            chosen["variant"]: [("torch", chosen["torch"]), ("torchvision", f"{torchvision}+{chosen['variant']}")],
            "cpu": [("torchvision", f"{torchvision}+cpu")],
        },
    )
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        for variant, pin in (
            (chosen["variant"], f"torch=={chosen['torch']}"),
            ("cpu", f"torchvision=={torchvision}+cpu"),
        ):
            subprocess.run(
                [str(python), "-m", "pip", "install", "--no-deps", pin, "--index-url", f"{url}/{variant}"],
                env=_env(tmp_path), check=True, capture_output=True, timeout=300,
            )  # fmt: skip
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, "--with", "torchvision"]
        dry = _pickvariant([*args, *GTX_1080, "--dry-run", "--format", "json"], _env(tmp_path), tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["already_installed"] is False


def test_a_newer_torch_there_is_never_downgraded_without_allow_downgrade(tmp_path, chosen) -> None:
    """Issue 53: torch 2.99.0 (a newer release than any the catalog holds, as a new release or a nightly is) in the
    environment: `--yes` consents to replacing a torch, not to a downgrade; the refusal names the flag that would
    proceed, and with it the install is planned as a downgrade and made by the real pip."""
    newer = f"2.99.0+{chosen['variant']}"
    build_mirror(tmp_path / "mirror", {chosen["variant"]: [("torch", chosen["torch"]), ("torch", newer)]})
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        index = f"{url}/{chosen['variant']}"
        _pip_install(python, newer, index, tmp_path)
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *GTX_1080, "--yes"]
        refused = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
        assert refused.returncode == 2 and refused.stderr.startswith("pickvariant: --allow-downgrade: torch 2.99.0")
        assert refused.stderr.count("\n") == 1 and _installed(python, "torch") == newer
        allowed = _pickvariant([*args, "--no-verify", "--allow-downgrade"], _env(tmp_path), tmp_path)
        assert allowed.returncode == 0, allowed.stderr
        assert f"downgrades torch {newer} to {chosen['torch']} (--allow-downgrade)" in allowed.stdout
        assert _installed(python, "torch") == chosen["torch"]
        # A Flox install takes no such flag: it installs into a Flox environment, with its own checks.
        flox = _pickvariant(["install", "--allow-downgrade", *GTX_1080, "--dry-run"], _env(tmp_path), tmp_path)
        assert flox.returncode == 2 and "--allow-downgrade: only with --source wheels" in flox.stderr


def test_a_newer_torch_that_does_not_run_here_is_replaced_with_yes_and_the_plan_says_why(tmp_path, chosen) -> None:
    """torch 2.15.0+cu132 there: a newer release than the GTX 1080's choice, with no kernels for sm_61 (CUDA 13
    builds none for Pascal, the hardware facts say). Keeping it keeps a torch that cannot run on the GPU: `--yes`
    replaces it without --allow-downgrade, and the plan says it downgrades, and why."""
    there = "2.15.0+cu132"
    build_mirror(tmp_path / "mirror", {"cu132": [("torch", there)], chosen["variant"]: [("torch", chosen["torch"])]})
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        _pip_install(python, there, f"{url}/cu132", tmp_path)
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *GTX_1080, "--yes"]
        done = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    why = f"downgrades torch {there} to {chosen['torch']}, because the torch there does not run here (torch {there}"
    assert why in " ".join(done.stdout.split()), done.stdout
    assert _installed(python, "torch") == chosen["torch"]


@pytest.mark.parametrize(
    ("there", "newer"),
    [
        ("2.14.1+cu132", False),  # the same release on another CUDA line: a replacement, not a downgrade
        ("2.14.0+cu126", False),  # an older release: an upgrade
        ("2.15.0", True),  # PyPI's 2.15.0: a newer release
        ("2.16.0.dev20261020+cu132", True),  # a nightly of a later release
        ("not-a-version", True),  # one pickvariant cannot order is kept unless asked
    ],
)
def test_what_counts_as_a_downgrade_of_the_torch_there(there, newer) -> None:
    from pickvariant.commands.prebuilt_install import _newer

    assert _newer(there, "2.14.1+cu126") is newer


def test_a_dry_run_plans_for_uv_where_uv_is_missing_and_the_install_names_what_found_the_interpreter(
    tmp_path, chosen
) -> None:
    """Issue 53: `--installer uv --dry-run` with no uv on PATH shows the plan (nothing is installed, so nothing is
    missing yet) with a warning; the install itself is refused (exit 2). The plan names what found the interpreter:
    VIRTUAL_ENV here, never "--python" for one the user did not name."""
    python = fresh_venv(tmp_path / "venv", with_pip=False)
    env = _env(
        tmp_path, PATH=str(Path(sys.executable).parent.parent / "no-such-bin"), VIRTUAL_ENV=str(tmp_path / "venv")
    )
    args = ["install", "--source", "wheels", "--installer", "uv", *GTX_1080]
    planned = _pickvariant([*args, "--dry-run"], env, tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "warning: --installer uv: uv is not on PATH" in planned.stdout
    assert f"of {python} (VIRTUAL_ENV)" in planned.stdout and "(--python)" not in planned.stdout
    refused = _pickvariant([*args, "--yes"], env, tmp_path)
    assert refused.returncode == 2 and refused.stderr.startswith("pickvariant: --installer uv: uv is not on PATH")


def test_a_python_pin_other_than_the_environments_is_refused_shown_or_run(tmp_path) -> None:
    """A wheel chosen for --python-version X.Y is not the one pip installs into an interpreter of another Python (it
    resolves its own Python's wheel, or none): the plan is refused naming both (exit 2), a dry run too; the pin of
    the environment's own Python plans as before."""
    python = fresh_venv(tmp_path / "venv", with_pip=False)
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    other = "3.10" if own != "3.10" else "3.12"
    args = ["install", "--source", "wheels", "--python", python, "--dry-run", *GTX_1080]
    refused = _pickvariant([*args, "--python-version", other], _env(tmp_path), tmp_path)
    assert refused.returncode == 2, refused.stdout
    tag = "cp" + other.replace(".", "")
    assert refused.stderr.startswith(f"pickvariant: --python-version {other}: {python} (--python) is Python {own}")
    assert f"a {tag} wheel does not install there" in refused.stderr and refused.stdout == ""
    planned = _pickvariant([*args, "--python-version", own], _env(tmp_path), tmp_path)
    assert planned.returncode == 0, planned.stderr


H100 = ["--gpu", "9.0", "--driver", "580.95.05", "--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4"))]


def test_a_torch_that_already_runs_on_every_gpu_is_kept_unless_upgrade_is_asked(tmp_path) -> None:
    """Issue 53: an H100 on R580 whose environment holds 2.14.1+cu126 (its kernels include sm_90; R580 runs CUDA
    12.6): detect says it is kept, `install --yes` installs nothing and leaves it, `--with torchvision` (which only
    the chosen set brings) is refused naming --upgrade, and `--upgrade` installs the chosen build with the real pip."""
    python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    detect = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", "--python-version", python_version, *H100],
        _env(tmp_path), tmp_path,
    )  # fmt: skip
    chosen = json.loads(detect.stdout)["recommendation"]
    there = "2.14.1+cu126"
    assert chosen["torch"] != there  # a newer release or CUDA line is chosen for a new environment
    build_mirror(tmp_path / "mirror", {"cu126": [("torch", there)], chosen["variant"]: [("torch", chosen["torch"])]})
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        _pip_install(python, there, f"{url}/cu126", tmp_path)
        said = _pickvariant(["detect", "--source", "wheels", "--python", str(python), *H100], _env(tmp_path), tmp_path)
        sentence = " ".join(said.stdout.split())  # as a reader sees it, whatever the terminal's width
        assert f"torch {there} in this environment runs on every GPU here (GPU 0 (9.0)): `install` keeps it" in sentence
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *H100, "--yes"]
        kept = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
        assert kept.returncode == 0, kept.stderr
        assert f"kept: torch {there} already runs on every GPU here: nothing to install" in kept.stdout
        assert "Nothing to do." in kept.stdout and _installed(python, "torch") == there
        # The plan's headline says what happens: nothing is installed, never "Plan: install" of a build not installed.
        headline = kept.stdout.splitlines()[0]
        assert headline.startswith(f"Plan: nothing to install into {python} (pip): the torch there is kept"), headline
        companion = _pickvariant([*args, "--with", "torchvision", "--no-verify"], _env(tmp_path), tmp_path)
        assert companion.returncode == 2 and companion.stderr.startswith("pickvariant: --upgrade: torch 2.14.1+cu126")
        assert _installed(python, "torch") == there
        upgraded = _pickvariant([*args, "--no-verify", "--upgrade"], _env(tmp_path), tmp_path)
        assert upgraded.returncode == 0, upgraded.stderr
        assert f"replaces torch {there}" in upgraded.stdout
        assert upgraded.stdout.startswith("Plan: install torch==")
        assert _installed(python, "torch") == chosen["torch"]
        again = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
        assert again.returncode == 0 and "Nothing to do." in again.stdout, again.stderr
        assert again.stdout.splitlines()[0].endswith("is there already"), again.stdout
        assert "$ " not in again.stdout  # nothing runs, so no command is shown as if it would


@pytest.mark.parametrize(("beside", "kept"), [("cpu", False), ("cu126", True)])
def test_a_companion_of_another_build_beside_a_kept_torch_is_not_counted_as_there(tmp_path, beside, kept) -> None:
    """torch 2.14.1+cu126 runs on the H100, so it is kept; torchvision beside it is part of a working set only where
    it is of the same build. A CPU torchvision (+cpu) beside it is not: `--with torchvision` is refused naming
    --upgrade (exit 2); torchvision +cu126 beside it is the set, and nothing is installed."""
    there, torchvision = "2.14.1+cu126", f"0.29.1+{beside}"
    releases: dict[str, list[tuple[str, str]]] = {"cu126": [("torch", there)]}
    releases.setdefault(beside, []).append(("torchvision", torchvision))
    build_mirror(tmp_path / "mirror", releases)
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        _pip_install(python, there, f"{url}/cu126", tmp_path)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--no-deps", f"torchvision=={torchvision}", "--index-url", f"{url}/{beside}"],
            env=_env(tmp_path), check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *H100, "--yes"]
        done = _pickvariant([*args, "--with", "torchvision", "--no-verify"], _env(tmp_path), tmp_path)
    if kept:
        assert done.returncode == 0 and "Nothing to do." in done.stdout, done.stdout + done.stderr
    else:
        assert done.returncode == 2 and done.stderr.startswith(f"pickvariant: --upgrade: torch {there} is kept"), (
            done.stderr
        )
        assert "torchvision (missing, or of another build than it)" in done.stderr
    assert _installed(python, "torch") == there and _installed(python, "torchvision") == torchvision


def test_a_torch_the_catalog_cannot_judge_is_named_and_kept_unless_upgrade_is_asked(tmp_path, chosen) -> None:
    """Issue 53: torch 2.7.1+cu118 (older than the catalog's first release, so whether it runs here is not known):
    `install --yes` names it and keeps it; --upgrade replaces it with the chosen build, with the real pip."""
    there = "2.7.1+cu118"
    build_mirror(tmp_path / "mirror", {"cu118": [("torch", there)], chosen["variant"]: [("torch", chosen["torch"])]})
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        _pip_install(python, there, f"{url}/cu118", tmp_path)
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *GTX_1080, "--yes"]
        kept = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
        assert kept.returncode == 0, kept.stderr
        assert f"kept: torch {there} here is not in the wheel catalog" in kept.stdout
        assert _installed(python, "torch") == there
        replaced = _pickvariant([*args, "--no-verify", "--upgrade"], _env(tmp_path), tmp_path)
        assert replaced.returncode == 0, replaced.stderr
        assert _installed(python, "torch") == chosen["torch"]


def test_a_rocm_torch_that_runs_is_kept_and_a_cuda_torch_on_an_amd_gpu_is_replaced_by_the_rocm_wheel(tmp_path) -> None:
    """Issue 72: a Radeon RX 7900 XTX (gfx1100, stated). Its environment holds torch 2.12.0+rocm7.1, put there by the
    real pip, whose gfx list has gfx1100: detect says it runs on the GPU, `install --yes` keeps it and `--upgrade`
    installs the chosen ROCm wheel. A CUDA torch there instead has no code for the GPU: `install --yes` replaces it
    with the ROCm wheel, no --upgrade needed."""
    amd = ["--gpu", "gfx1100", "--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell"))]
    python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    detect = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", "--python-version", python_version, *amd],
        _env(tmp_path), tmp_path,
    )  # fmt: skip
    chosen = json.loads(detect.stdout)["recommendation"]
    assert chosen["variant"].startswith("rocm") and chosen["torch"].endswith(f"+{chosen['variant']}")
    there, cuda = "2.12.0+rocm7.1", f"{chosen['release']}+cu126"
    indexes = {
        "rocm7.1": [("torch", there)],
        "cu126": [("torch", cuda)],
        chosen["variant"]: [("torch", chosen["torch"])],
    }
    build_mirror(tmp_path / "mirror", indexes)
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        _pip_install(python, there, f"{url}/rocm7.1", tmp_path)
        said = _pickvariant(["detect", "--source", "wheels", "--python", str(python), *amd], _env(tmp_path), tmp_path)
        sentence = " ".join(said.stdout.split())
        assert f"torch {there} in this environment runs on every GPU here (AMD gfx1100)" in sentence, said.stdout
        args = ["install", "--source", "wheels", "--python", str(python), "--wheel-index", url, *amd, "--yes"]
        kept = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
        assert kept.returncode == 0 and _installed(python, "torch") == there, kept.stderr
        upgraded = _pickvariant([*args, "--no-verify", "--upgrade"], _env(tmp_path), tmp_path)
        assert upgraded.returncode == 0, upgraded.stderr
        assert _installed(python, "torch") == chosen["torch"]
        _pip_install(python, cuda, f"{url}/cu126", tmp_path)
        said = _pickvariant(["detect", "--source", "wheels", "--python", str(python), *amd], _env(tmp_path), tmp_path)
        assert f"torch {cuda} in this environment does not run on this machine's GPUs" in " ".join(said.stdout.split())
        replaced = _pickvariant([*args, "--no-verify"], _env(tmp_path), tmp_path)
        assert replaced.returncode == 0, replaced.stderr
        assert _installed(python, "torch") == chosen["torch"]
