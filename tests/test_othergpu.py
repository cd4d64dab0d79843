"""AMD and Intel GPUs (issue 54, detection): read from the kernel's KFD topology and DRM devices, stated with --gpu,
shown in every answer with what it does with them; a machine without them answers as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REPO, cli_runner, cpuinfo_path
from packaging.version import Version

from pickvariant.cli.main import app
from pickvariant.machine.othergpu import gfx_target, read_other_gpus

runner = cli_runner()
SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
HASWELL = str(cpuinfo_path("linux-rhel7-haswell"))
WHEELS_JSON = REPO / "pickvariant" / "sources" / "wheels" / "catalog" / "data" / "wheels.json"


def _detect(source: str, *args: str, sysfs: Path | None = None) -> tuple[int, dict]:
    env = {"PICKVARIANT_SYSFS": str(sysfs)} if sysfs is not None else {}
    command = ["detect", "--source", source, "--format", "json", "--python-version", "3.12", *args]
    result = runner.invoke(app, command, env=env)
    assert result.exit_code in (0, 3), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(
    ("version", "target"),
    # The versions the kernel's amdkfd (kfd_device.c) gives these GPUs, and the targets ROCm names them by.
    [
        (90006, "gfx906"),
        (90010, "gfx90a"),
        (90012, "gfx90c"),
        (90402, "gfx942"),
        (100100, "gfx1010"),
        (100300, "gfx1030"),
        (110000, "gfx1100"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
    ],
)
def test_a_kfd_gfx_target_version_names_the_target_rocm_names(version: int, target: str) -> None:
    assert gfx_target(version) == target


@pytest.mark.parametrize("version", [0, 91600, 90016, 1000000])
def test_a_version_no_target_can_be_is_no_gpu(version: int) -> None:
    assert gfx_target(version) is None


def _newest_rocm_for(target: str, platform: str = "linux-x86_64") -> dict:
    """The shipped wheel catalog's ROCm build a GPU of `target` should get: of the newest torch release one of whose
    ROCm builds lists it, the build on the newest ROCm release that does."""
    catalog = json.loads(WHEELS_JSON.read_text())
    rocm = [
        b
        for b in catalog["builds"]
        if b["platform"] == platform
        and b.get("gpu_code", {}).get("family") == "rocm"
        and target in b["gpu_code"]["targets"]
    ]
    return max(rocm, key=lambda b: (Version(b["torch"]), Version(b["variant"].removeprefix("rocm"))))


def test_a_radeon_7900_xtx_is_read_from_its_kfd_node_and_gets_the_newest_rocm_wheel_with_its_target() -> None:
    """The real node (tests/fixtures/sysfs/radeon-rx7900xtx/SOURCE.md): gfx1100, device 0x744c. The recipes have no
    ROCm build: a CPU build, "no NVIDIA GPU" (never "no GPU") and why the AMD GPU is unused, naming the wheels' answer.
    The wheels judge their ROCm builds on it: the newest one whose gfx list has gfx1100, saying which code objects
    load there."""
    machine = SYSFS / "radeon-rx7900xtx"
    (found,) = read_other_gpus(str(machine))
    assert (found.vendor, found.target, found.device_id) == ("amd", "gfx1100", "0x744c")
    code, flox = _detect("flox", "--cpuinfo", HASWELL, sysfs=machine)
    assert code == 0 and flox["build"]["cuda"] is None and "gpu_code" not in flox["build"]
    assert flox["hardware"]["other_gpus"] == [found.as_json()]
    said = [r for r in flox["reasons"] if "gfx1100" in r or r.startswith("no ")]
    assert said[0] == "no NVIDIA GPU: choosing among CPU-only builds"
    variants = json.loads((REPO / "catalog.json").read_text())["variants"]
    assert not any(str(v["gpu_arch"]).startswith("gfx") for v in variants)
    assert said[1].startswith("AMD gfx1100 (device 0x744c): unused by this answer: no recipe of the catalog")
    assert "`pickvariant detect --source wheels`" in said[1]
    code, wheels = _detect("wheels", "--cpuinfo", HASWELL, sysfs=machine)
    expected = _newest_rocm_for("gfx1100")
    assert code == 0 and wheels["recommendation"]["torch"] == expected["local"]
    assert wheels["build"]["gpu_code"]["targets"] == expected["gpu_code"]["targets"]
    assert "AMD gfx1100 (device 0x744c): code objects for gfx1100" in wheels["reasons"]
    assert not any(r.startswith("no NVIDIA GPU") for r in wheels["reasons"])
    text = runner.invoke(app, ["detect", "--cpuinfo", HASWELL], env={"PICKVARIANT_SYSFS": str(machine)})
    assert "AMD gfx1100 (device 0x744c)" in text.stdout


def test_a_platform_whose_wheel_catalog_names_no_rocm_build_says_so() -> None:
    """Grace (linux-aarch64): the shipped catalog names no ROCm build there, and the answer says that, not that
    PyTorch publishes some."""
    rows = json.loads(WHEELS_JSON.read_text())["left_out"]
    assert not any(r["variant"].startswith("rocm") and r["platform"] == "linux-aarch64" for r in rows)
    _, document = _detect("wheels", "--cpuinfo", str(cpuinfo_path("linux-rhel9-neoverse_v2")), "--gpu", "gfx1100")
    amd = next(r for r in document["reasons"] if r.startswith("AMD gfx1100"))
    assert amd == "AMD gfx1100: unused by this answer: the wheel catalog names no ROCm build for this platform"


def test_an_intel_arc_is_read_from_its_drm_card_and_gets_the_xpu_wheel_with_its_aot_code() -> None:
    """The Arc B580 (device 0xe20b, BMG: tests/fixtures/sysfs/arc-b580/SOURCE.md): the xpu wheel, whose AOT targets
    name bmg; its connector is not a card."""
    (found,) = read_other_gpus(str(SYSFS / "arc-b580"))
    assert (found.vendor, found.device_id, found.driver, found.source) == ("intel", "0xe20b", "xe", "DRM card1")
    code, document = _detect("wheels", "--cpuinfo", HASWELL, sysfs=SYSFS / "arc-b580")
    assert code == 0 and document["recommendation"]["variant"] == "xpu"
    assert "bmg" in document["build"]["gpu_code"]["aot"]
    assert "Intel GPU (device 0xe20b, driver xe): AOT code for bmg" in document["reasons"]


def _card(root: Path, name: str, vendor: str, device: str, pci_class: str) -> None:
    folder = root / "class" / "drm" / name / "device"
    folder.mkdir(parents=True)
    for attribute, value in (("vendor", vendor), ("device", device), ("class", pci_class)):
        (folder / attribute).write_text(value + "\n")


def test_only_intel_display_devices_are_read_and_hostile_files_are_skipped(tmp_path: Path) -> None:
    """An NVIDIA card (NVML's), an Intel device that is no display controller and cards whose files say what no
    kernel writes are none of these GPUs; a properties file of junk, of NUL bytes, one larger than any the kernel
    writes and a FIFO (nothing writes to it: a read would wait for ever) are skipped, and the node after them is read."""
    _card(tmp_path, "card0", "0x10de", "0x2330", "0x030200")
    _card(tmp_path, "card1", "0x8086", "0x0b25", "0x088000")
    _card(tmp_path, "card2", "0x8086", "0xe20b\x1b[31m", "0x030000")  # a control sequence: the id is not shown
    nodes = tmp_path / "class" / "kfd" / "kfd" / "topology" / "nodes"
    for node, text in (("0", "\x00" * 5000), ("1", "gfx_target_version 90010\n" + "x" * 10**6), ("2", "junk")):
        (nodes / node).mkdir(parents=True)
        (nodes / node / "properties").write_text(text)
    (nodes / "3").mkdir()  # no properties at all
    (nodes / "4").mkdir()
    os.mkfifo(nodes / "4" / "properties")
    (nodes / "5").mkdir()
    (nodes / "5" / "properties").write_text("cpu_cores_count 0\ngfx_target_version 110000\nvendor_id 4098\n")
    found = read_other_gpus(str(tmp_path))
    assert [(gpu.vendor, gpu.target, gpu.device_id) for gpu in found] == [
        ("amd", "gfx1100", None),
        ("intel", None, None),
    ]


def test_an_intel_gpu_of_display_class_0x0380_is_read_as_the_vga_class_ones_are(tmp_path: Path) -> None:
    """PCI class 0x03 is every display controller: 0x0300 VGA (an Arc card), 0x0380 "other" (the Data Center GPU
    Max 1550, device 0x0bd5 in the kernel's i915/xe id lists). Both are read; a class past the display ones is not."""
    _card(tmp_path, "card0", "0x8086", "0xe20b", "0x030000")
    _card(tmp_path, "card1", "0x8086", "0x0bd5", "0x038000")
    _card(tmp_path, "card2", "0x8086", "0x0bd6", "0x040000")  # a multimedia controller: no GPU
    found = read_other_gpus(str(tmp_path))
    assert [(gpu.vendor, gpu.device_id) for gpu in found] == [("intel", "0xe20b"), ("intel", "0x0bd5")]


def test_a_machine_without_them_reads_none_and_answers_as_before(tmp_path: Path) -> None:
    assert read_other_gpus(str(tmp_path / "no-such-sysfs")) == ()
    _, before = _detect("flox", "--cpuinfo", HASWELL, "--gpu", "8.9", "--driver", "580.95.05")
    assert before["hardware"]["other_gpus"] == [] and not any("NVIDIA GPU" in r for r in before["reasons"])


def test_an_amd_or_intel_gpu_is_stated_with_gpu_and_a_bad_one_is_one_line_naming_the_option() -> None:
    _, document = _detect("flox", "--cpuinfo", HASWELL, "--gpu", "gfx90a", "--gpu", "xpu:0xe20b")
    stated = [(g["vendor"], g["target"], g["device_id"], g["source"]) for g in document["hardware"]["other_gpus"]]
    assert stated == [("amd", "gfx90a", None, "--gpu"), ("intel", None, "0xe20b", "--gpu")]
    assert document["hardware"]["gpus"] == [] and document["hardware"]["driver_assumed"] is False
    for bad in ("gfxzz", "xpu:e20b"):
        result = runner.invoke(app, ["detect", "--cpuinfo", HASWELL, "--gpu", bad])
        assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "--gpu" in result.stderr, result.stderr


def test_the_tests_read_no_sysfs_but_their_own() -> None:
    """conftest points PICKVARIANT_SYSFS at an empty folder of the run: no test depends on this machine's GPUs."""
    assert os.environ["PICKVARIANT_SYSFS"] and read_other_gpus(os.environ["PICKVARIANT_SYSFS"]) == ()


def test_report_carries_them_for_a_support_ticket_with_whether_the_answer_is_for_them() -> None:
    """The recipes have no ROCm build: the report says the answer is not for the AMD GPU; the wheels' is a ROCm
    build: it says the answer is for it."""
    env = {"PICKVARIANT_SYSFS": str(SYSFS / "radeon-rx7900xtx")}
    line = "- GPU (AMD): gfx1100, device 0x744c [KFD topology node 1]: the recommended build is "
    flox = runner.invoke(app, ["report", "--format", "markdown", "--python", "/nonexistent/python"], env=env)
    assert f"{line}not for it" in flox.stdout, flox.stdout
    args = ["report", "--source", "wheels", "--format", "markdown", "--cpuinfo", HASWELL, "--gpu", "gfx1100"]
    wheels = runner.invoke(app, [*args, "--python-version", "3.12"])
    assert "- GPU (AMD): gfx1100 [--gpu]: the recommended build is for it (see the reasons)" in wheels.stdout


def test_a_plan_reads_them_back_from_each_nodes_detect_line_and_keeps_such_a_node_apart(tmp_path: Path) -> None:
    """plan gathers `detect --format json --compact` lines: a node whose line lists an AMD GPU is its own profile (its
    answer says what it does with the GPU), read back as detect wrote it; a line whose entry is no such GPU is bad
    input naming the field."""
    from pickvariant.machine.facts_json import facts_from_json
    from pickvariant.sources.hardware_json import load_hardware

    def line(label: str, sysfs: Path) -> str:
        args = ["detect", "--format", "json", "--compact", "--cpuinfo", HASWELL]
        result = runner.invoke(app, args, env={"PICKVARIANT_LABEL": label, "PICKVARIANT_SYSFS": str(sysfs)})
        return result.stdout

    amd, plain = line("amd-0", SYSFS / "radeon-rx7900xtx"), line("cpu-0", tmp_path)
    facts = facts_from_json(json.loads(amd)["hardware"], load_hardware())
    assert [(g.vendor, g.target, g.device_id) for g in facts.other_gpus] == [("amd", "gfx1100", "0x744c")]
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(amd + plain)
    plan = json.loads(runner.invoke(app, ["plan", str(cluster), "--format", "json", "--org", "acme"]).stdout)
    profiles = {node["label"]: node["profile"] for node in plan["nodes"]}
    assert profiles["amd-0"] != profiles["cpu-0"]
    forged = json.loads(amd)
    forged["hardware"]["other_gpus"][0]["target"] = "gfx1100; rm -rf /"
    cluster.write_text(json.dumps(forged) + "\n")
    refused = runner.invoke(app, ["plan", str(cluster), "--format", "json", "--org", "acme"])
    assert refused.exit_code == 2 and "other_gpus" in refused.stderr, refused.stderr


def test_rocm_builds_are_judged_only_where_an_amd_gpu_is_and_a_release_whose_lists_are_unknown_is_named() -> None:
    """A machine with an AMD GPU has the ROCm builds judged on it, and hears of 2.15.0's, whose ROCm indexes and
    lists are not known, as not judged; a machine without hears nothing of ROCm."""
    args = ("--cpuinfo", HASWELL)
    _, amd = _detect("wheels", *args, sysfs=SYSFS / "radeon-rx7900xtx")
    _, plain = _detect("wheels", *args)
    assert [row for row in amd["left_out"] if " rocm" in row] == [
        "torch 2.15.0 rocm: ROCm: its targets are not known (nothing read names 2.15's ROCm indexes or their gfx lists)"
    ]
    assert any("rocm" in json.dumps(r) for r in amd["rejected"])
    assert not any(" rocm" in row for row in plain["left_out"])
    assert not any("rocm" in json.dumps(r) for r in plain["rejected"])


def test_an_amd_gpu_stated_for_a_mac_is_said_to_change_nothing_there() -> None:
    mac = str(cpuinfo_path("darwin-sequoia-m4"))
    for source in ("flox", "wheels"):
        _, document = _detect(source, "--cpuinfo", mac, "--gpu", "gfx1100")
        assert "the stated AMD or Intel GPUs change nothing on macOS" in " ".join(document["reasons"]), source


# HSA_CAP_SRAM_EDCSUPPORTED, the node `capability` bit the kernel sets where RAS is on for the GFX block
# (drivers/gpu/drm/amd/amdkfd/kfd_topology.h and kfd_topology.c); ROCR-Runtime's GpuAgent reads it as SRAM_EDCSupport.
KERNEL_SRAM_EDC_BIT = 0x04000000


def _node_as(tmp_path: Path, gfx_target_version: int, capability: int | None) -> Path:
    """The real RX 7900 XTX node (tests/fixtures/sysfs/radeon-rx7900xtx) with its gfx_target_version and capability
    lines set to another GPU's values: a derived file, every field as the kernel prints it, no field added."""
    source = SYSFS / "radeon-rx7900xtx" / "class" / "kfd" / "kfd" / "topology" / "nodes" / "1" / "properties"
    lines = []
    for line in source.read_text().splitlines():
        name = line.partition(" ")[0]
        if name == "gfx_target_version":
            line = f"gfx_target_version {gfx_target_version}"
        elif name == "capability":
            if capability is None:
                continue
            line = f"capability {capability}"
        lines.append(line)
    node = tmp_path / "class" / "kfd" / "kfd" / "topology" / "nodes" / "1"
    node.mkdir(parents=True)
    (node / "properties").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize(
    ("version", "capability", "features"),
    [
        # An MI200 (gfx90a) with SRAM ECC on, and off: its target ID names sramecc either way, as ROCm's does.
        (90010, 671588992 | KERNEL_SRAM_EDC_BIT, ("sramecc+",)),
        (90010, 671588992 & ~KERNEL_SRAM_EDC_BIT, ("sramecc-",)),
        (90402, KERNEL_SRAM_EDC_BIT, ("sramecc+",)),
        # An MI100 (gfx908): on whatever the node says (ROCR-Runtime: its VBIOS sets it on).
        (90008, 0, ("sramecc+",)),
        # A processor without the feature names none, the bit or not; a node that states no capability names none.
        (110000, 671588992 | KERNEL_SRAM_EDC_BIT, ()),
        (100100, KERNEL_SRAM_EDC_BIT, ()),
        (90010, None, ()),
    ],
)
def test_an_amd_gpus_sramecc_is_read_from_its_node_as_rocm_names_its_target_id(
    tmp_path: Path, version: int, capability: int | None, features: tuple[str, ...]
) -> None:
    (found,) = read_other_gpus(str(_node_as(tmp_path, version, capability)))
    assert found.features == features
    expected_id = ":".join((str(gfx_target(version)), *features))
    _, document = _detect("wheels", "--cpuinfo", HASWELL, sysfs=tmp_path)
    assert document["hardware"]["other_gpus"][0]["features"] == list(features)
    assert any(reason.startswith(f"AMD {expected_id} (device 0x744c): ") for reason in document["reasons"])


def test_a_target_id_is_stated_with_gpu_and_a_feature_its_processor_lacks_is_refused() -> None:
    _, document = _detect("flox", "--cpuinfo", HASWELL, "--gpu", "gfx90a:sramecc+:xnack-")
    (stated,) = document["hardware"]["other_gpus"]
    assert (stated["target"], stated["features"]) == ("gfx90a", ["sramecc+", "xnack-"])
    assert any(reason.startswith("AMD gfx90a:sramecc+:xnack-: ") for reason in document["reasons"]), document
    # gfx1100 has neither feature; LLVM writes sramecc before xnack, each once.
    for bad in ("gfx1100:sramecc+", "gfx1100:xnack-", "gfx90a:xnack-:sramecc+", "gfx90a:sramecc+:sramecc-"):
        result = runner.invoke(app, ["detect", "--cpuinfo", HASWELL, "--gpu", bad])
        assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "--gpu" in result.stderr, result.stderr


def test_a_plan_reads_a_target_id_back_and_refuses_features_no_target_id_has(tmp_path: Path) -> None:
    from pickvariant.machine.facts_json import facts_from_json
    from pickvariant.sources.hardware_json import load_hardware

    args = ["detect", "--format", "json", "--compact", "--cpuinfo", HASWELL, "--gpu", "gfx942:sramecc-"]
    line = json.loads(runner.invoke(app, args, env={"PICKVARIANT_LABEL": "mi300-0"}).stdout)
    facts = facts_from_json(line["hardware"], load_hardware())
    assert [(g.target, g.features) for g in facts.other_gpus] == [("gfx942", ("sramecc-",))]
    cluster = tmp_path / "cluster.jsonl"
    # Not a feature at all: the line is refused, in one line naming the field.
    for forged in (["sramecc"], ["sramecc+\n; rm -rf /"], "sramecc+"):
        line["hardware"]["other_gpus"][0]["features"] = forged
        cluster.write_text(json.dumps(line) + "\n")
        refused = runner.invoke(app, ["plan", str(cluster), "--format", "json", "--org", "acme"])
        assert refused.exit_code == 2 and "other_gpus" in refused.stderr, (forged, refused.stderr)
        assert refused.stderr.count("\n") == 1
    # Features of no target ID (out of order; one the processor lacks): that node's facts are unusable, and the plan
    # says so of it.
    for target, forged in (("gfx942", ["xnack-", "sramecc+"]), ("gfx1100", ["sramecc+"])):
        line["hardware"]["other_gpus"][0].update(target=target, features=forged)
        cluster.write_text(json.dumps(line) + "\n")
        planned = json.loads(runner.invoke(app, ["plan", str(cluster), "--format", "json", "--org", "acme"]).stdout)
        (node,) = planned["nodes"]
        assert node["package"] is None and "hardware.other_gpus[0].features" in node["why"], node


def test_both_sources_text_answers_say_what_they_do_with_the_amd_gpu() -> None:
    """The short text answer, not only the JSON (issue 52 asks it of sentences about the hardware): the recipes say
    "no NVIDIA GPU" and why the AMD GPU is unused; the wheels recommend a ROCm wheel, on its ROCm release, with the
    index it is installed from."""
    machine = SYSFS / "radeon-rx7900xtx"
    env = {"PICKVARIANT_SYSFS": str(machine)}
    texts = {
        source: runner.invoke(app, ["detect", "--source", source, "--cpuinfo", HASWELL], env=env).stdout
        for source in ("flox", "wheels")
    }
    why = texts["flox"].split("\nWhy", 1)[1]
    assert "  - no NVIDIA GPU: choosing among CPU-only builds\n" in why, texts["flox"]
    assert "  - AMD gfx1100 (device 0x744c): unused by this answer: " in why, texts["flox"]
    expected = _newest_rocm_for("gfx1100")
    head = texts["wheels"].split("\nThis machine", 1)[0]
    assert f"Recommendation: torch {expected['local']}" in head and f"ROCm {expected['variant'][4:]}" in head
    assert expected["index_url"] in " ".join(head.split()).replace("\\ ", ""), head
