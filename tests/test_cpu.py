from __future__ import annotations

import pytest
from conftest import CPUINFO, cpuinfo_path, require

from pickvariant._base.errors import BadInput
from pickvariant.machine.cpu import from_py_cpuinfo, parse_cpuinfo, read_cpuinfo_dump

DUMPS = {
    "linux-rhel7-haswell": ("x86_64", {"avx", "avx2", "fma", "f16c"}, {"avx512f"}),
    "linux-rhel7-ivybridge": ("x86_64", {"avx", "f16c"}, {"avx2", "fma"}),
    "linux-rhel7-skylake_avx512": ("x86_64", {"avx512f", "avx512dq", "avx512vl", "avx512bw"}, {"avx512_vnni"}),
    "linux-centos7-cascadelake": ("x86_64", {"avx512_vnni"}, {"avx512_bf16"}),
    "linux-azure-icelake-8370c": ("x86_64", {"avx512f", "avx512bw", "avx512vl"}, {"avx512_vnni"}),
    "linux-unknown-sapphirerapids": ("x86_64", {"avx512_bf16", "avx512_vnni", "amx_bf16"}, set()),
    "linux-rocky8.5-zen4": ("x86_64", {"avx512_bf16", "avx512_vnni"}, {"avx_vnni"}),
    "linux-scientific7-k10": ("x86_64", set(), {"avx"}),
    "linux-amazon-neoverse_n1": ("aarch64", {"fphp", "asimdhp", "asimddp"}, {"sve"}),
    "linux-rhel9-neoverse_v2": ("aarch64", {"sve", "sve2", "asimddp"}, set()),
    "linux-amazon-cortex_a72": ("aarch64", set(), {"fphp", "asimddp"}),
    # The dump cannot tell little- from big-endian: a POWER8 may run either.
    "linux-centos7-power8le": ("ppc64 (byte order unknown)", set(), {"avx"}),
    "linux-kvm-xeon-2core": ("x86_64", {"avx512f", "avx512bw", "avx512_vnni"}, {"avx512_bf16", "amx_tile"}),
    "linux-kvm-xeon-amx-16core": ("x86_64", {"avx512_bf16", "avx512_vnni", "amx_tile", "avx512_fp16"}, set()),
}


@pytest.mark.parametrize("name", sorted(DUMPS))
def test_real_dumps_give_the_kernels_flags(name: str) -> None:
    arch, present, absent = DUMPS[name]
    facts = read_cpuinfo_dump(cpuinfo_path(name))
    assert facts.os == "linux"
    assert facts.arch == arch
    assert present <= facts.flags
    assert not absent & facts.flags


def test_model_names_come_from_the_dump() -> None:
    assert read_cpuinfo_dump(cpuinfo_path("linux-unknown-sapphirerapids")).model == "Intel(R) Xeon(R) Platinum 8480+"
    assert "0xd4f" in (read_cpuinfo_dump(cpuinfo_path("linux-rhel9-neoverse_v2")).model or "")


@pytest.mark.parametrize("second", ["processor\t: 1", "processor\t: 0"], ids=["numbered", "duplicate-number"])
def test_hybrid_cpu_uses_only_flags_common_to_all_cores(second: str) -> None:
    text = (CPUINFO / "linux-rhel7-haswell").read_text()
    big = text.replace("processor\t: 0", second).replace(" avx2 ", " avx2 avx512f ")
    facts = parse_cpuinfo(text + "\n" + big)
    assert "avx512f" not in facts.flags
    assert "avx2" in facts.flags
    assert any("common to all 2 cores" in note for note in facts.notes)


def test_windows_line_endings_parse_the_same() -> None:
    text = (CPUINFO / "linux-rocky8.5-zen4").read_text()
    assert parse_cpuinfo(text.replace("\n", "\r\n")).flags == parse_cpuinfo(text).flags


def test_old_arm_layout_with_features_after_the_processors() -> None:
    text = "Processor\t: AArch64 Processor rev 4 (aarch64)\nprocessor\t: 0\nprocessor\t: 1\nFeatures\t: fp asimd fphp asimdhp asimddp\nCPU architecture: 8\n"
    facts = parse_cpuinfo(text)
    assert facts.arch == "aarch64"
    assert {"fphp", "asimddp"} <= facts.flags


def test_32_bit_arm_is_not_aarch64() -> None:
    text = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 4 (v7l)\nFeatures\t: half thumb fastmult vfp edsp neon vfpv3\nCPU architecture: 7\n"
    assert parse_cpuinfo(text).arch == "armv7l"


@pytest.mark.parametrize(
    "text", ["", "hello world\n", "MIT License\n\nPermission is hereby granted\n", "key: value\nother: thing\n"]
)
def test_text_that_is_no_cpuinfo_is_bad_input(text: str) -> None:
    with pytest.raises(BadInput, match="not a /proc/cpuinfo"):
        parse_cpuinfo(text, "dump.txt")


def test_binary_garbage_is_bad_input(tmp_path) -> None:
    path = tmp_path / "garbage"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(BadInput):
        read_cpuinfo_dump(path)


def test_missing_file_is_bad_input(tmp_path) -> None:
    with pytest.raises(BadInput, match="cannot read"):
        read_cpuinfo_dump(tmp_path / "nope")


def test_macos_sysctl_dump_is_darwin_arm() -> None:
    facts = read_cpuinfo_dump(cpuinfo_path("darwin-sequoia-m4"))
    assert (facts.os, facts.arch) == ("darwin", "aarch64")
    assert "feat_dotprod" in facts.flags and "feat_sve2" not in facts.flags


def test_py_cpuinfo_spellings_are_kept_raw_for_the_catalog_to_normalise(catalog) -> None:
    facts = from_py_cpuinfo(
        {"arch": "X86_64", "flags": ["avx1.0", "AVX2", "avx512vnni"], "brand_raw": "Intel Mac"}, "darwin"
    )
    assert facts.arch == "x86_64"
    assert catalog.canonical_flags(facts.flags) >= {"avx", "avx2", "avx512_vnni"}


def test_a_real_two_core_dump_takes_flags_from_both_cores_without_notes() -> None:
    facts = read_cpuinfo_dump(cpuinfo_path("linux-kvm-xeon-2core"))
    assert facts.notes == () and facts.model == "Intel(R) Xeon(R) Processor @ 2.50GHz"


def test_files_that_report_no_size_are_read_whole_and_still_bounded(tmp_path) -> None:
    """/proc and /sys files stat as 0 bytes: they are read in pieces to the end, under the same limit."""
    from pathlib import Path

    from pickvariant._base.files import read_regular

    proc = Path("/proc/self/cmdline")
    require(proc.exists(), "no /proc here (the test is for Linux)")
    assert proc.stat().st_size == 0
    whole = read_regular(proc, 1 << 20, "the command line")
    assert whole == proc.read_bytes() and len(whole) > 0
    with pytest.raises(BadInput, match="larger than"):
        read_regular(proc, len(whole) - 1, "the command line")
    sized = tmp_path / "sized"
    sized.write_bytes(b"x" * 200_000)  # more than one 64 KiB piece, read in one call since its size is known
    assert read_regular(sized, 1 << 20, "a dump") == b"x" * 200_000
    with pytest.raises(BadInput, match="larger than"):
        read_regular(sized, 199_999, "a dump")


def test_a_power7_dump_is_big_endian_and_a_power8_one_says_its_byte_order_is_unknown() -> None:
    power7 = "processor\t: 0\ncpu\t\t: POWER7 (architected), altivec supported\nclock\t\t: 3550.000000MHz\n\nplatform\t: pSeries\n"
    assert parse_cpuinfo(power7).arch == "ppc64"
    power9 = power7.replace("POWER7 (architected)", "POWER9 (raw)")
    assert parse_cpuinfo(power9).arch == "ppc64 (byte order unknown)"


def test_py_cpuinfo_on_power_keeps_the_byte_order_uname_gave() -> None:
    for raw in ("ppc64le", "ppc64"):
        assert from_py_cpuinfo({"arch": "PPC_64", "arch_string_raw": raw, "flags": []}, "aix").arch == raw


def test_a_windows_cpu_dump_is_refused_naming_how_a_windows_machine_is_stated(tmp_path) -> None:
    """A CPU dump from Windows (Sysinternals Coreinfo's layout: a banner, the model, the family line, one feature a
    line) is no /proc/cpuinfo: one line naming the file and `--platform windows-amd64`, exit 2; and that advice,
    followed, answers the machine."""
    from conftest import cli_runner

    from pickvariant.cli.main import app

    dump = tmp_path / "coreinfo.txt"
    dump.write_text(
        "Coreinfo v3.6 - Dump information on system CPU and memory topology\r\n\r\n"
        "Intel(R) Core(TM) i9-13900K\r\nIntel64 Family 6 Model 183 Stepping 1, GenuineIntel\r\n"
        "AVX2            *       Supports AVX2 instruction extensions\r\n"
    )
    runner = cli_runner()
    refused = runner.invoke(app, ["detect", "--source", "wheels", "--cpuinfo", str(dump), "--gpu", "8.6"])
    assert refused.exit_code == 2 and refused.stdout == "" and refused.stderr.count("\n") == 1
    assert str(dump) in refused.stderr and "--platform windows-amd64" in refused.stderr
    stated = ["detect", "--source", "wheels", "--platform", "windows-amd64", "--gpu", "8.6", "--driver", "580.88"]
    assert runner.invoke(app, stated).exit_code == 0
