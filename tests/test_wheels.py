"""PyTorch's own wheels as data (issue 45's first part): the facts with their confidence and sources, and the wheel
catalog `pickvariant catalog wheels` derives from them, nothing guessed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pickvariant._base.schema import load_schema, validate
from pickvariant.sources.wheels.catalog import facts as wheel_facts
from pickvariant.sources.wheels.catalog.load import CATALOG_SCHEMA

SHIPPED = json.loads(Path(wheel_facts.CATALOG).read_text())


def _build(torch: str, variant: str, platform: str = "linux-x86_64") -> dict:
    (found,) = [b for b in SHIPPED["builds"] if (b["torch"], b["variant"], b["platform"]) == (torch, variant, platform)]
    return found


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", "catalog", "wheels", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_the_shipped_wheel_catalog_is_what_the_command_derives_from_the_shipped_facts(tmp_path: Path) -> None:
    checked = _cli("-o", str(wheel_facts.CATALOG), "--check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    printed = _cli(cwd=tmp_path)
    assert printed.stdout == Path(wheel_facts.CATALOG).read_text()
    stale = tmp_path / "wheels.json"
    stale.write_text(printed.stdout.replace('"2.14.1+cu130"', '"2.14.1+cu131"'))
    refused = _cli("-o", str(stale), "--check", cwd=tmp_path)
    assert refused.returncode == 1 and "differs from what the wheel facts give" in refused.stderr


def test_the_shipped_catalog_holds_to_the_schema_any_other_catalog_is_checked_against() -> None:
    """The schema a refreshed or named catalog is checked against fits what `catalog wheels` writes, and a macOS
    build's version carries no local label, as the macOS wheels' `torch.__version__` does not (facts: P1)."""
    validate(SHIPPED, load_schema(CATALOG_SCHEMA))
    macos = [b for b in SHIPPED["builds"] if b["platform"] == "macos-arm64"]
    assert macos and all(b["local"] == b["torch"] for b in macos)
    assert all(b["local"] == f"{b['torch']}+{b['variant']}" for b in SHIPPED["builds"] if b not in macos)


def test_the_pypi_wheel_read_from_its_libraries_ships_sass_for_turing_to_blackwell_and_no_ptx() -> None:
    wheel = _build("2.14.1", "cu130")
    assert wheel["sass"] == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
    assert wheel["ptx"] == [] and wheel["ptx_known"]
    assert wheel["confidence"]["sass"] == "V" and "W1" in wheel["sources"]
    assert wheel["pypi"] and wheel["index_url"] == "https://download.pytorch.org/whl/cu130"
    assert wheel["min_driver"] == "580.65.06" and wheel["local"] == "2.14.1+cu130"


def test_maxwell_pascal_and_volta_are_kept_by_cu126_alone_and_aarch64_and_windows_lists_differ() -> None:
    for torch in ("2.11.0", "2.12.1", "2.13.0", "2.14.1"):
        with_volta = {b["variant"] for b in SHIPPED["builds"] if b["torch"] == torch and "7.0" in b["sass"]}
        assert with_volta == {"cu126"}, torch
    assert _build("2.13.0", "cu126", "linux-aarch64")["sass"] == ["8.0", "9.0"]
    assert "11.0" in _build("2.13.0", "cu130", "linux-aarch64")["sass"]
    assert "11.0" not in _build("2.13.0", "cu130")["sass"]
    assert "7.0" in _build("2.10.0", "cu128")["sass"] and "7.0" not in _build("2.11.0", "cu128")["sass"]


def test_what_could_not_be_read_is_left_out_with_why_never_guessed() -> None:
    builds = {(b["torch"], b["variant"], b["platform"]): b for b in SHIPPED["builds"]}
    # 2.15.0's CUDA builds are the two PyPI wheels whose fatbins were read (wheels.md 2.15: W4, W5), nothing else.
    assert sorted(key for key in builds if key[0] == "2.15.0" and key[1] != "cpu") == [
        ("2.15.0", "cu132", "linux-aarch64"),
        ("2.15.0", "cu132", "linux-x86_64"),
    ]
    read = builds[("2.15.0", "cu132", "linux-x86_64")]
    assert read["confidence"] == {"sass": "V", "ptx": "V"} and "W4" in read["sources"] and read["ptx"] == []
    left_out = {(e["torch"], e["variant"], e["platform"]): e["why"] for e in SHIPPED["left_out"]}
    assert "only an RFC names it" in left_out[("2.15.0", "cu130", "linux-x86_64")]
    assert "inferred" in left_out[("2.8.0", "cu126", "linux-x86_64")]
    # A ROCm or XPU list whose mark is unknown is left out (2.15's); a CUDA build's SASS is verified or documented,
    # a ROCm or XPU build's targets verified, documented or inferred (said as such wherever one is chosen).
    assert "its targets are not known" in left_out[("2.15.0", "rocm", "linux-x86_64")]
    assert "its targets are not known" in left_out[("2.15.0", "xpu", "linux-x86_64")]
    assert all(b["confidence"]["sass"] in ("V", "D") for b in SHIPPED["builds"] if "gpu_code" not in b)
    for build in (b for b in SHIPPED["builds"] if "gpu_code" in b):
        inferred = build["confidence"]["sass"] == "I"
        assert build["confidence"]["sass"] in ("V", "D", "I") and inferred == bool(build["gpu_code"]["inferred"])
    unknown_ptx = _build("2.13.0", "cu130")  # the RC shipped PTX; whether the release did is not known
    assert unknown_ptx["ptx"] == [] and not unknown_ptx["ptx_known"]


def test_companions_pair_as_pypi_pins_them() -> None:
    companions = SHIPPED["companions"]
    assert companions["2.14.1"]["torchvision"] == ["0.29.1", "torch>=2.14.0"]
    assert companions["2.11.0"]["torchaudio"] == ["2.11.0", None]  # no torch requirement at all
    # torchaudio stopped at 2.11.0, which names no torch requirement and which its makers say serves torch >= 2.11
    # (wheels.md section 3): paired with later releases from PyPI only, citing them.
    # Its wheels are for torch 2.11.0's Pythons (A2), which a set's answer keeps to: 2.15.0's cp315 is not among them.
    pythons = wheel_facts.read_facts(wheel_facts.FACTS)["releases"]
    tags = next(release["python"] for release in pythons if release["torch"] == "2.11.0")
    stated = {"from": "pypi", "sources": ["A1", "P3", "A2"], "python": tags}
    assert companions["2.12.0"]["torchaudio"] == companions["2.15.0"]["torchaudio"] == ["2.11.0", None, stated]
    assert "pytorch/audio#4212" in SHIPPED["sources"]["A1"]


def test_a_malformed_facts_file_is_one_line_naming_it_and_exit_2(tmp_path: Path) -> None:
    facts = json.loads(Path(wheel_facts.FACTS).read_text())
    facts["releases"][0]["builds"][0]["sass"] = ["sm_61"]
    bad = tmp_path / "facts.json"
    bad.write_text(json.dumps(facts))
    done = _cli("--facts", str(bad), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and str(bad) in done.stderr and "sass" in done.stderr
    facts = json.loads(Path(wheel_facts.FACTS).read_text())
    facts["releases"][0]["builds"][0]["sources"] = ["NOPE"]
    bad.write_text(json.dumps(facts))
    done = _cli("--facts", str(bad), cwd=tmp_path)
    assert done.returncode == 2 and "NOPE" in done.stderr
