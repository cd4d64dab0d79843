"""The wheel on its own: built from this checkout with its own backend, installed where no checkout is beside it, it
reads the same catalog and recipe templates (carried inside the package) and answers as the checkout does."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import REPO, cpuinfo_path, fresh_venv, require


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_wheel_installed_with_no_checkout_beside_it_reads_the_same_bytes_and_answers_alike(tmp_path) -> None:
    require(
        subprocess.run([sys.executable, "-c", "import hatchling"], capture_output=True).returncode == 0,
        "hatchling is not installed (pip install -e '.[test]')",
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PICKVARIANT_", "PYTHON"))}
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(REPO),
        ],
        tmp_path,
        env,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("pickvariant-*.whl")
    # The dependencies come from this interpreter's site-packages, added after the new environment's own (its .pth
    # files, an editable install's among them, are not read); pickvariant itself only from the wheel.
    venv = tmp_path / "venv"
    python = fresh_venv(venv)
    own = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env)
    dependencies = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(own.stdout.strip()) / "dependencies.pth").write_text("\n".join(sorted(dependencies)) + "\n")
    installed = _run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", str(wheel)], tmp_path, env
    )
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(
        [
            str(python),
            "-c",
            "import json, pickvariant; from pickvariant.sources.flox.recipes.load import SHIPPED_CATALOG; "
            "from pickvariant.sources.flox.recipes.render import TEMPLATES_DIR; "
            "print(json.dumps([pickvariant.__file__, str(SHIPPED_CATALOG), str(TEMPLATES_DIR)]))",
        ],
        elsewhere,
        env,
    )
    assert where.returncode == 0, where.stderr
    module, catalog, templates = json.loads(where.stdout)
    assert (
        Path(module).is_relative_to(venv)
        and Path(catalog).is_relative_to(venv)
        and Path(templates).is_relative_to(venv)
    )

    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    assert digest(Path(catalog)) == digest(REPO / "catalog.json")
    assert digest(Path(catalog).with_name("catalog.companions.json")) == digest(REPO / "catalog.companions.json")
    assert {p.name: digest(p) for p in Path(templates).glob("*.nix")} == {
        p.name: digest(p) for p in (REPO / "recipes").glob("*.nix")
    }
    machine = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "8.6", "--driver", "580.95.05"]
    for argv in (
        ["detect", "--format", "json", *machine, "--with", "torchaudio"],
        ["recipe", "pytorch-python313-cuda13_1-sm86-avx2", "--generate"],
    ):
        wheel_said = _run([str(venv / "bin" / "pickvariant"), *argv], elsewhere, env)
        checkout_said = _run([sys.executable, "-m", "pickvariant", *argv], REPO, env)
        assert wheel_said.returncode == checkout_said.returncode == 0, wheel_said.stderr + checkout_said.stderr
        assert wheel_said.stdout == checkout_said.stdout
