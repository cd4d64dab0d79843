"""AMD and Intel GPUs answered (issue 72): ROCm wheels chosen by gfx target, XPU wheels by device, from the facts.

Each AMD machine is a KFD topology tree made in the test from a real public capture (tests/fixtures/gpu-captures/,
each naming its URL): its gfx target and PCI device id are read from the capture's own text, and the tree holds only
what the capture says, written as the kernel writes it (`gfx_target_version` is the kernel's number for the target:
major * 10000 + minor * 100 + stepping, kfd_device.c) and a SOURCE.md naming the capture. Nothing else is invented.
The answers expected are read from the shipped wheel catalog, never written here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO, cli_runner, cpuinfo_path
from jsonschema import Draft202012Validator
from packaging.version import Version

from pickvariant.cli.main import app

runner = cli_runner()
CAPTURES = Path(__file__).parent / "fixtures" / "gpu-captures"
SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
HASWELL = str(cpuinfo_path("linux-rhel7-haswell"))
SCHEMA = json.loads((REPO / "pickvariant" / "output" / "detect.schema.json").read_text())
CATALOG = json.loads((REPO / "pickvariant" / "sources" / "wheels" / "catalog" / "data" / "wheels.json").read_text())

# name -> (the capture, the gfx target it shows, the PCI device id it shows, or None where it shows none)
MACHINES = {
    "mi300x": ("mi300x-gfx942-rocminfo-agent.txt", "gfx942", "0x74a1"),
    "mi250x": ("mi250x-gfx90a-rocminfo-agent.txt", "gfx90a", "0x740c"),
    "rx9070xt": ("rx9070xt-gfx1201-rocminfo-agent.txt", "gfx1201", "0x7550"),
    "rx7900xtx": ("rx7900xtx-gfx1100-rocminfo-agent.txt", "gfx1100", None),
    "780m": ("radeon-780m-gfx1103-rocminfo-agent.txt", "gfx1103", "0x15bf"),
    "radeon-vii": ("radeon-vii-gfx906-and-w7500-gfx1102-rocprofv3-avail.txt", "gfx906", None),
    "rx5700xt": ("navi10-rx5600xt-5700xt-macos-device-id.txt", "gfx1010", "0x731f"),
}


def _kfd_version(target: str) -> int:
    """The kernel's gfx_target_version of a target: "gfx90a" is 9, 0, 10 -> 90010 (facts/rocm-xpu.md 5.1)."""
    digits = target.removeprefix("gfx")
    return int(digits[:-2]) * 10000 + int(digits[-2], 16) * 100 + int(digits[-1], 16)


def _machine(name: str, tmp_path: Path) -> Path:
    capture_name, target, device = MACHINES[name]
    capture = CAPTURES / capture_name
    text = capture.read_text()
    url = re.search(r"^# source: (\S+)", text, re.M)
    assert url is not None and target in text, capture_name  # the values below are the capture's
    assert device is None or device.removeprefix("0x") in text.lower(), capture_name
    root = tmp_path / name
    node = root / "class" / "kfd" / "kfd" / "topology" / "nodes" / "1"
    node.mkdir(parents=True)
    lines = [f"gfx_target_version {_kfd_version(target)}", "vendor_id 4098"]
    lines += [f"device_id {int(device, 16)}"] if device else []
    (node / "properties").write_text("\n".join(lines) + "\n")
    said = f"device id {device}" if device else "no device id (the capture shows none)"
    (root / "SOURCE.md").write_text(f"From {url[1]} ({capture_name}): target {target}, {said}; vendor 4098 (AMD).\n")
    return root


def _detect(sysfs: Path, *args: str) -> tuple[int, dict, str]:
    command = ["detect", "--source", "wheels", "--format", "json", "--python-version", "3.12", "--cpuinfo", HASWELL]
    result = runner.invoke(app, [*command, *args], env={"PICKVARIANT_SYSFS": str(sysfs)})
    assert result.exit_code in (0, 3), result.output
    return result.exit_code, json.loads(result.stdout), result.stderr


def _rocm_with(target: str) -> list[dict]:
    return [
        build
        for build in CATALOG["builds"]
        if build["platform"] == "linux-x86_64"
        and build.get("gpu_code", {}).get("family") == "rocm"
        and target in build["gpu_code"]["targets"]
        and "cp312" in build["python"]
    ]


def _newest(builds: list[dict]) -> dict:
    return max(builds, key=lambda b: (Version(b["torch"]), Version(b["variant"].removeprefix("rocm"))))


@pytest.mark.parametrize("name", ["mi300x", "mi250x", "rx9070xt", "rx7900xtx", "780m"])
def test_an_amd_gpu_gets_the_newest_rocm_wheel_whose_list_has_its_target(name: str, tmp_path: Path) -> None:
    target = MACHINES[name][1]
    code, document, _ = _detect(_machine(name, tmp_path))
    expected = _newest(_rocm_with(target))
    assert code == 0 and document["recommendation"]["torch"] == expected["local"], document["reasons"]
    assert target in document["build"]["gpu_code"]["targets"]
    Draft202012Validator(SCHEMA).validate(document)  # the one detect schema, a ROCm build's `gpu_code` included
    assert any(r.endswith(f"code objects for {target}") for r in document["reasons"])
    # A list the facts only infer is said as inferred, from what, with verify to settle it; a documented one is not.
    inferred = [r for r in document["reasons"] if "target list is inferred from" in r]
    assert bool(inferred) == bool(expected["gpu_code"]["inferred"])
    assert all("`pickvariant verify`" in r for r in inferred)


def test_the_780m_apu_gets_an_inferred_answer_said_as_inferred(tmp_path: Path) -> None:
    """gfx1103 is in no list documented by PyTorch's makers (it was added to the build script for 2.13, #179653):
    the answer is a 2.13 or newer build, said as inferred from its source."""
    _, document, _ = _detect(_machine("780m", tmp_path))
    assert Version(document["build"]["torch"]) >= Version("2.13")
    assert any("inferred from" in r and "`pickvariant verify`" in r for r in document["reasons"])


def test_a_radeon_vii_gets_no_build_without_gfx906_and_is_told_why(tmp_path: Path) -> None:
    _, document, _ = _detect(_machine("radeon-vii", tmp_path))
    assert "gfx906" in document["build"]["gpu_code"]["targets"] and document["recommendation"]["variant"] != "rocm7.14"
    without = [r for r in document["rejected"] if "rocm7.14" in json.dumps(r)]
    assert without and all("no code object for" in json.dumps(r) and "gfx906" in json.dumps(r) for r in without)


def test_an_rx_5700_xt_gets_exit_3_naming_gfx1010_and_no_override(tmp_path: Path) -> None:
    """No PyTorch ROCm list has gfx1010 (RDNA1): nothing is chosen, the one line names the target and why
    HSA_OVERRIDE_GFX_VERSION is not the way, and neither the answer nor any hint sets it."""
    assert not _rocm_with("gfx1010")
    code, document, stderr = _detect(_machine("rx5700xt", tmp_path))
    assert code == 3 and document["recommendation"] is None
    line = stderr.strip()
    assert len(line.splitlines()) == 1 and "gfx1010" in line and "HSA_OVERRIDE_GFX_VERSION" in line
    assert "not recommended" in line
    assert not any("HSA_OVERRIDE_GFX_VERSION=" in hint for hint in document["hints"])


def test_an_arc_b580_gets_the_xpu_wheel_and_an_unnamed_intel_gpu_the_cpu_wheel(tmp_path: Path) -> None:
    """The Arc B580's real DRM card (device 0xe20b, BMG) gets the xpu wheel with AOT code for bmg; a Data Center GPU
    Flex (0x56c0, no validated device) and an old iGPU get the CPU wheel, with why."""
    code, arc, _ = _detect(SYSFS / "arc-b580")
    assert code == 0 and arc["recommendation"]["variant"] == "xpu" and "bmg" in arc["build"]["gpu_code"]["aot"]
    Draft202012Validator(SCHEMA).validate(arc)
    flex = tmp_path / "flex" / "class" / "drm" / "card0" / "device"
    flex.mkdir(parents=True)
    for attribute, value in (("vendor", "0x8086"), ("device", "0x56c0"), ("class", "0x030000")):
        (flex / attribute).write_text(value + "\n")
    code, cpu, _ = _detect(tmp_path / "flex")
    assert code == 0 and cpu["recommendation"]["variant"] == "cpu"
    assert any("not a device PyTorch's XPU builds are built or validated for" in r for r in cpu["reasons"])
    # An old iGPU (UHD Graphics 630, 0x3e92), stated: no XPU wheel either (uv and torchruntime choose xpu for it).
    code, igpu, _ = _detect(tmp_path / "none", "--gpu", "xpu:0x3e92")
    assert code == 0 and igpu["recommendation"]["variant"] == "cpu"


def test_a_machine_with_an_nvidia_and_an_amd_gpu_is_answered_per_gpu(tmp_path: Path) -> None:
    """One environment holds one torch: the answer serves the NVIDIA GPU and says what the AMD GPU alone would get,
    the same answer a machine with only that GPU gets."""
    _, alone, _ = _detect(_machine("mi300x", tmp_path))
    code, both, _ = _detect(tmp_path / "none", "--gpu", "9.0", "--gpu", "gfx942", "--driver", "580.95.05")
    assert code == 0 and both["build"]["cuda"] is not None
    said = [r for r in both["reasons"] if r.startswith("AMD gfx942")]
    assert any(
        f"for it alone, in an environment of its own: torch {alone['recommendation']['torch']}" in r for r in said
    )


def test_a_stated_amd_gpu_is_answered_as_a_detected_one_and_installs_from_its_rocm_index(tmp_path: Path) -> None:
    """`--gpu gfx942` answers as the MI300X's tree does; `install --dry-run` names the ROCm index."""
    _, detected, _ = _detect(_machine("mi300x", tmp_path))
    stated = runner.invoke(
        app, ["detect", "--source", "wheels", "--format", "json", "--python-version", "3.12", "--cpuinfo", HASWELL,
              "--gpu", "gfx942"],
    )  # fmt: skip
    assert json.loads(stated.stdout)["recommendation"] == detected["recommendation"]
    chosen = detected["recommendation"]
    dry = runner.invoke(app, ["install", "--source", "wheels", "--cpuinfo", HASWELL, "--gpu", "gfx942", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    flat = " ".join(dry.stdout.split()).replace("\\ ", "")
    assert f"+{chosen['variant']}" in flat and f"{CATALOG['index_root']}/{chosen['variant']}" in flat


def test_a_wheel_plan_gives_each_node_the_build_detect_gives_it(tmp_path: Path) -> None:
    """`plan --source wheels` over detect lines of an MI300X (a tree from its capture), an Arc B580 and a machine with
    no GPU: each node is assigned the wheel detect answers for it, from its own index."""
    machines = {"amd-0": _machine("mi300x", tmp_path), "arc-0": SYSFS / "arc-b580", "cpu-0": tmp_path / "none"}
    lines, expected = [], {}
    for label, sysfs in machines.items():
        args = ["detect", "--format", "json", "--compact", "--cpuinfo", HASWELL]
        lines.append(runner.invoke(app, args, env={"PICKVARIANT_LABEL": label, "PICKVARIANT_SYSFS": str(sysfs)}).stdout)
        expected[label] = _detect(sysfs)[1]["recommendation"]["torch"]
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text("".join(lines))
    done = runner.invoke(app, ["plan", str(cluster), "--source", "wheels", "--format", "json"])
    assert done.exit_code == 0, done.output
    plan = json.loads(done.stdout)
    assigned = {node["label"]: node["torch"] for node in plan["nodes"]}
    assert assigned == expected and "rocm" in assigned["amd-0"] and assigned["arc-0"].endswith("+xpu")


def test_companions_paired_with_a_rocm_wheel_are_said_as_inferred_for_its_index(tmp_path: Path) -> None:
    """The pairing of torchvision with a torch release is read from PyPI's builds; that the ROCm index holds its ROCm
    build is not in the facts: the answer pins it and says so."""
    _, document, _ = _detect(_machine("mi300x", tmp_path), "--with", "torchvision")
    variant = document["recommendation"]["variant"]
    assert variant.startswith("rocm") and document["recommendation"]["companions"]
    assert any(r.startswith("torchvision ") and f"on the {variant} index: inferred" in r for r in document["reasons"])
