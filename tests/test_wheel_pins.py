"""What the wheel answer tells a user to type, judged by the real installers rather than by pickvariant's own code
(issue 52): pip's tag rules for a stated machine's pin (`pip download --platform … --python-version …`, which
resolves for another machine and installs nothing) and uv's resolver for the `--format pyproject` block. Wheels are
named as PyPI and PyTorch's indexes name them (../shared/facts/wheels.md §1: macOS wheels carry no local label;
cp314t is the free-threaded build a plain "Python 3.14" is not), served from a mirror on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import cpuinfo_path, require
from test_wheel_install import _env, _pickvariant
from wheel_mirror import make_wheel, served


def _index(root: Path, variant: str, wheels: dict[str, list[tuple[str, str]]]) -> None:
    """ROOT/<variant>/<project>/ holding wheels of the given (version, tag) pairs, with its PEP 503 page."""
    for project, pairs in wheels.items():
        folder = root / variant / project
        folder.mkdir(parents=True, exist_ok=True)
        for version, tag in pairs:
            make_wheel(folder, project, version, tag)
        links = "".join(f'<a href="{w.name}">{w.name}</a><br>\n' for w in sorted(folder.glob("*.whl")))
        (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


def _recommended(tmp_path: Path, *args: str) -> dict:
    done = _pickvariant(["detect", "--source", "wheels", "--format", "json", *args], _env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["recommendation"]


def _pip_download(tmp_path: Path, url: str, requirement: str, platform: str, python: str, abi: str) -> Path | None:
    """The wheel pip picks for another machine with this requirement, or None where it finds none."""
    target = tmp_path / f"download-{abi}-{platform}"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform", platform,
         "--python-version", python, "--implementation", "cp", "--abi", abi, "--index-url", url, "-d", str(target),
         requirement],
        env=_env(tmp_path), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    wheels = sorted(target.glob("*.whl")) if done.returncode == 0 else []
    return wheels[0] if wheels else None


def test_a_macs_pin_is_one_pip_installs_there(tmp_path) -> None:
    """macOS wheels are `torch-X-cp312-none-macosx_14_0_arm64.whl`, no `+cpu`: a pin with the label finds nothing."""
    answer = _recommended(tmp_path, "--cpuinfo", str(cpuinfo_path("darwin-sequoia-m4")), "--python-version", "3.12")
    release = answer["release"]
    mac = f"cp312-none-{'macosx_14_0_arm64'}"
    _index(
        tmp_path / "mirror", "cpu", {"torch": [(release, mac), (f"{release}+cpu", "cp312-cp312-manylinux_2_28_x86_64")]}
    )
    with served(tmp_path / "mirror") as root:
        (requirement,) = answer["requirements"]
        found = _pip_download(tmp_path, f"{root}/cpu", requirement, "macosx_14_0_arm64", "3.12", "none")
        assert found is not None and found.name == f"torch-{release}-{mac}.whl", requirement
        # The same check fails a pin that names the Linux CPU wheel's label, as a Mac's pip would.
        assert (
            _pip_download(tmp_path, f"{root}/cpu", f"torch=={release}+cpu", "macosx_14_0_arm64", "3.12", "none") is None
        )


def test_a_stated_python_3_14_gets_the_regular_build_not_the_free_threaded_one(tmp_path) -> None:
    """cp314 and cp314t are both published (wheels.md §1); "Python 3.14" names the regular interpreter: its pin
    must bring, through pip's own tags for cp314, the cp314 wheel."""
    answer = _recommended(
        tmp_path, "--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4")), "--no-gpu", "--python-version", "3.14"
    )
    assert answer["python_tag"] == "cp314"
    local = answer["torch"]
    platform = "manylinux_2_28_x86_64"
    _index(
        tmp_path / "mirror", "cpu", {"torch": [(local, f"cp314-cp314-{platform}"), (local, f"cp314-cp314t-{platform}")]}
    )
    with served(tmp_path / "mirror") as root:
        (requirement,) = answer["requirements"]
        found = _pip_download(tmp_path, f"{root}/cpu", requirement, platform, "3.14", "cp314")
        assert found is not None and found.name == f"torch-{local}-cp314-cp314-{platform}.whl"


def test_a_stated_free_threaded_python_gets_the_free_threaded_build_pip_takes_for_it(tmp_path) -> None:
    """`--python-version 3.14t` names the free-threaded interpreter (its wheels are cp314t, wheels.md §1): the answer
    is for cp314t, its command runs `python3.14t` (python3 is the regular build beside it), and pip, resolving for a
    cp314t interpreter, takes the cp314t wheel, never the regular one beside it. The recipes build no free-threaded
    Python: asked of them, one line says so and names the source that has them."""
    machine = ["--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4")), "--no-gpu"]
    answer = _recommended(tmp_path, *machine, "--python-version", "3.14t")
    assert answer["python_tag"] == "cp314t"
    text = _pickvariant(
        ["detect", "--source", "wheels", *machine, "--python-version", "3.14t"], _env(tmp_path), tmp_path
    )
    assert "install it: python3.14t -m pip install" in text.stdout, text.stdout
    local, platform = answer["torch"], "manylinux_2_28_x86_64"
    _index(
        tmp_path / "mirror", "cpu", {"torch": [(local, f"cp314-cp314-{platform}"), (local, f"cp314-cp314t-{platform}")]}
    )
    with served(tmp_path / "mirror") as root:
        (requirement,) = answer["requirements"]
        found = _pip_download(tmp_path, f"{root}/cpu", requirement, platform, "3.14", "cp314t")
        assert found is not None and found.name == f"torch-{local}-cp314-cp314t-{platform}.whl"
    recipes = _pickvariant(["detect", *machine, "--python-version", "3.14t"], _env(tmp_path), tmp_path)
    assert recipes.returncode == 2 and recipes.stderr.count("\n") == 1
    assert "a free-threaded Python" in recipes.stderr and "--source wheels" in recipes.stderr


def test_a_pin_that_leaves_no_wheel_names_what_runs_without_it_and_a_newer_one_names_refresh(tmp_path) -> None:
    """A GTX 1080 (sm_61) with `--torch 2.15`: no 2.15 wheel has kernels for it (CUDA 13 builds none for Pascal, the
    facts say). The hint names what dropping the pin gives, decided again: the answer without the pin. A release
    newer than the catalog (`--torch 2.99`) is refused naming the refresh that would read it."""
    gtx = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "6.1", "--driver", "580.95.05"]
    free = _recommended(tmp_path, *gtx)
    pinned = _pickvariant(
        ["detect", "--source", "wheels", "--format", "json", *gtx, "--torch", "2.15"], _env(tmp_path), tmp_path
    )
    assert pinned.returncode == 3, pinned.stderr
    hints = json.loads(pinned.stdout)["hints"]
    assert f"without --torch 2.15, torch {free['torch']} runs here" in hints, hints
    newer = _pickvariant(["detect", "--source", "wheels", *gtx, "--torch", "2.99"], _env(tmp_path), tmp_path)
    assert newer.returncode == 2 and "catalog wheels --refresh" in newer.stderr, newer.stderr


def test_every_companion_asked_for_is_pinned_and_comes_from_the_chosen_index(tmp_path) -> None:
    answer = _recommended(
        tmp_path, "--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4")), "--gpu", "9.0", "--driver", "580.65.06",
        "--python-version", "3.12", "--with", "torchvision,torchaudio",
    )  # fmt: skip
    pinned = {line.split("==")[0]: line.split("==")[1] for line in answer["requirements"]}
    assert set(pinned) == {"torch", "torchvision", "torchaudio"}
    assert {pair["project"]: pair["version"] for pair in answer["companions"]} == {
        name: version for name, version in pinned.items() if name != "torch"
    }


def test_the_uv_block_takes_only_torch_and_its_companions_from_pytorchs_index(tmp_path) -> None:
    """uv's own resolver on the `--format pyproject` block: torch from PyTorch's index (a mirror), every other
    package from the default index, even one the PyTorch index also serves (PyTorch's indexes carry numpy,
    requests and more): what `explicit = true` means (uv's docs, "Using uv with PyTorch")."""
    try:
        from uv import find_uv_bin
    except ImportError:
        require(False, "uv is not installed (pip install -e '.[test]')")
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"  # uv locks for the interpreter that runs the tests
    machine = ["--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4")), "--no-gpu", "--python-version", python]
    answer = _recommended(tmp_path, *machine)
    local, variant, tag = answer["torch"], answer["variant"], answer["python_tag"]
    platform = f"{tag}-{tag}-manylinux_2_28_x86_64"
    _index(tmp_path / "pytorch", variant, {"torch": [(local, platform)], "helper": [("99.0", "py3-none-any")]})
    _index(tmp_path / "pypi", "simple", {"helper": [("1.0", "py3-none-any")]})
    with served(tmp_path / "pytorch") as pytorch, served(tmp_path / "pypi") as pypi:
        args = ["detect", "--source", "wheels", "--format", "pyproject", "--wheel-index", pytorch, *machine]
        block = _pickvariant(args, _env(tmp_path), tmp_path)
        assert block.returncode == 0, block.stderr
        project = tmp_path / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text(
            f'[project]\nname = "demo"\nversion = "0"\nrequires-python = ">={python}"\n'
            f'dependencies = ["torch=={local}", "helper"]\n\n{block.stdout}'
        )
        env = _env(tmp_path, UV_DEFAULT_INDEX=f"{pypi}/simple", UV_PYTHON=sys.executable)
        del env["UV_NO_CONFIG"]  # which would leave the project's own [tool.uv] settings half read
        locked = subprocess.run(
            [find_uv_bin(), "lock", "--directory", str(project)], env=env, capture_output=True, text=True, timeout=300
        )
        assert locked.returncode == 0, locked.stderr
    lock = (project / "uv.lock").read_text()
    assert f'name = "torch"\nversion = "{local}"\nsource = {{ registry = "{pytorch}/{variant}" }}' in lock
    assert f'name = "helper"\nversion = "1.0"\nsource = {{ registry = "{pypi}/simple" }}' in lock
