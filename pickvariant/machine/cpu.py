"""CPU facts: parse a /proc/cpuinfo (or macOS sysctl) dump, or read this machine's.

Parsing is pure (`parse_cpuinfo(text)`); only the `read_*`/`detect_*` functions touch
the machine. Facts only: which flags the kernel reports, never which variant fits.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Mapping

from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_input, read_regular
from pickvariant._base.records import keyword_record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's path (3 ms)
if TYPE_CHECKING:
    from typing import Any

PROC_CPUINFO = "/proc/cpuinfo"
# /proc/cpuinfo of a 512-thread host is under 2 MiB; anything far larger is not one.
MAX_CPUINFO_BYTES = 16 * 1024 * 1024


@keyword_record
class CpuFacts:
    os: str
    arch: str
    model: str | None
    flags: frozenset[str]
    source: str
    notes: tuple[str, ...] = ()


def _pair(line: str) -> tuple[str, str] | None:
    """A `key : value` line as (lower-case key, value), both stripped; None for a line without a colon."""
    key, sep, value = line.partition(":")
    return (key.strip().lower(), value.strip()) if sep else None


def _fields(text: str) -> list[tuple[str, str]]:
    return [pair for pair in map(_pair, text.splitlines()) if pair is not None]


def _blocks(text: str) -> tuple[list[dict[str, str]], set[str]]:
    """One dict per `processor` entry (its first value of each key), lines before the first
    forming their own block; and every key of any line."""
    lines = text.splitlines()
    # Most lines repeat from core to core (vendor, model, flags): each distinct line is split once.
    pairs = {line: _pair(line) for line in set(lines)}
    blocks: list[dict[str, str]] = [{}]
    block = blocks[0]
    for pair in map(pairs.__getitem__, lines):
        if pair is None:
            continue
        key, value = pair
        if key == "processor" and value.isdigit():
            block = {}
            blocks.append(block)
        block.setdefault(key, value)
    keys = {pair[0] for pair in pairs.values() if pair is not None}
    return [block for block in blocks if block], keys


def parse_cpuinfo(text: str, source: str = "/proc/cpuinfo") -> CpuFacts:
    """Facts from the text of a Linux /proc/cpuinfo; the dump, not this machine, decides the architecture."""
    if "\x00" in text:
        raise BadInput(f"{source} is binary data, not a /proc/cpuinfo dump")
    notes: list[str] = []
    if text.rstrip() and not text.endswith(("\n", "\r")):
        # The kernel ends every line, so the last word may be cut: "fma" from "fma4" would be a lie.
        cut = text.rstrip().split()[-1]
        text = text.rstrip()[: -len(cut)] + "\n"
        notes.append(f"{source} does not end with a newline (cut off?): its last word {cut[-40:]!r} was ignored")
    blocks, keys = _blocks(text)
    # One string to search instead of a startswith per key: detect asks this on every call.
    key_lines = "\n" + "\n".join(keys)
    if "\nhw.optional." in key_lines or "\nmachdep.cpu." in key_lines:
        return parse_sysctl(text, source)
    if not keys & {"processor", "flags", "features"}:
        raise BadInput(
            f"{source} is not a /proc/cpuinfo dump (no 'processor', 'flags' or 'Features' line); a Windows machine "
            "(Coreinfo, CPU-Z, wmic) is stated as `--source wheels --platform windows-amd64`, which needs no CPU dump"
        )
    flag_key = "flags" if "flags" in keys else "features" if "features" in keys else None
    flags: frozenset[str] = frozenset()
    if flag_key:
        # Hybrid CPUs (and buggy hypervisors) can list different flags per core: only
        # what every core has is safe to compile for. Cores mostly print the same line: each
        # distinct line is split once (a 192-core host has one, not 192).
        lines = [block[flag_key] for block in blocks if flag_key in block]
        split = {line: frozenset(line.split()) for line in set(lines)}
        per_core = [split[line] for line in lines]
        flags = frozenset.intersection(*split.values())
        empty = sum(1 for core in per_core if not core)
        if empty:
            notes.append(
                f"{empty} of {len(per_core)} cores show an empty {flag_key} line, so no CPU flag can be relied on"
            )
        elif len(set(split.values())) > 1:
            notes.append(
                f"cores report different flags; using the {len(flags)} flags common to all {len(per_core)} cores"
            )
    first = next((block for block in blocks if len(block) > 1), blocks[0])
    arch = _arch(flag_key, first, s390_keys="\nprocessor " in key_lines)
    return CpuFacts(os="linux", arch=arch, model=_model(first, arch), flags=flags, source=source, notes=tuple(notes))


def _arch(flag_key: str | None, first: Mapping[str, str], s390_keys: bool) -> str:
    # s390x prints a `features` line too (esan3 zarch …): recognise it before taking features for ARM.
    # Its per-CPU lines are keyed "processor 0", "processor 1" (s390_keys).
    if "s390" in first.get("vendor_id", "").lower() or s390_keys:
        return "s390x"
    if flag_key == "flags":
        return "x86_64"
    if flag_key == "features":
        # 32-bit ARM kernels print Features too, with "CPU architecture: 7".
        if first.get("cpu architecture", "8").startswith("7") or "ARMv7" in first.get("model name", ""):
            return "armv7l"
        return "aarch64"
    cpu = first.get("cpu", "")
    if "POWER" in cpu.upper():
        return _power_arch(cpu)
    if first.get("isa", "").startswith("rv64"):
        return "riscv64"
    return "unknown"


# A dump does not say its byte order. Little-endian 64-bit Power Linux (the ELFv2 ABI's ppc64le) needs
# POWER8 or newer, so an older POWER is big-endian for certain; a newer one may run either.
# Source: OpenPOWER 64-bit ELF V2 ABI Specification, 1.1 ("the POWER8 processor ... minimum
# hardware level for little-endian"); Debian/Fedora/RHEL ppc64el ports target POWER8.
POWER_UNKNOWN_BYTE_ORDER = "ppc64 (byte order unknown)"


def _power_arch(cpu: str) -> str:
    generation = re.search(r"POWER(\d+)", cpu.upper())
    if generation and int(generation.group(1)) < 8:
        return "ppc64"
    return POWER_UNKNOWN_BYTE_ORDER


def _model(first: Mapping[str, str], arch: str) -> str | None:
    if first.get("model name"):
        return first["model name"]
    if arch == "aarch64" and "cpu part" in first:
        return f"ARM implementer {first.get('cpu implementer', '?')} part {first['cpu part']}"
    return first.get("cpu") or None


def parse_sysctl(text: str, source: str = "sysctl -a") -> CpuFacts:
    """Facts from macOS `sysctl -a` output (Apple Silicon FEAT_* or Intel machdep.cpu.*)."""
    values = dict(_fields(text))
    feats = {
        key.removeprefix("hw.optional.arm.")
        for key, value in values.items()
        if key.startswith("hw.optional.arm.feat_") and value == "1"
    }
    x86 = " ".join(
        values.get(key, "") for key in ("machdep.cpu.features", "machdep.cpu.leaf7_features", "machdep.cpu.extfeatures")
    )
    arch = "aarch64" if feats or values.get("hw.optional.arm64") == "1" else "x86_64"
    flags = frozenset(feats) | frozenset(x86.lower().split())
    return CpuFacts(os="darwin", arch=arch, model=values.get("machdep.cpu.brand_string"), flags=flags, source=source)


def from_py_cpuinfo(info: Mapping[str, Any], os_name: str) -> CpuFacts:
    """Facts from py-cpuinfo's get_cpu_info() dict (macOS, Windows: no /proc/cpuinfo there)."""
    # PPC_64 is either byte order: the raw string (uname's machine) says which.
    arch = {"X86_64": "x86_64", "ARM_8": "aarch64", "ARM_7": "armv7l", "RISCV_64": "riscv64", "S390X": "s390x"}
    return CpuFacts(
        os=os_name,
        arch=arch.get(str(info.get("arch", "")), str(info.get("arch_string_raw", "unknown")).lower() or "unknown"),
        model=info.get("brand_raw") or None,
        flags=frozenset(str(flag).lower() for flag in info.get("flags", ())),
        source="py-cpuinfo",
    )


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a dump with a size bound; undecodable bytes become U+FFFD rather than an error."""
    return read_regular(path, MAX_CPUINFO_BYTES, "the CPU dump").decode("utf-8", errors="replace")


def read_cpuinfo_dump(path: str | os.PathLike[str]) -> CpuFacts:
    """A dump given by the user: a file, or `-` (stdin), a pipe or a FIFO (`<(ssh host cat /proc/cpuinfo)`)."""
    return parse_cpuinfo(
        read_input(path, MAX_CPUINFO_BYTES, "the CPU dump").decode("utf-8", errors="replace"), str(path)
    )


def detect_cpu() -> CpuFacts:
    """This machine's CPU. On Linux only /proc/cpuinfo is read: it shows what the kernel
    really enabled, and py-cpuinfo would spend a subprocess on its CPUID probe."""
    if sys.platform.startswith("linux"):
        try:
            facts = parse_cpuinfo(read_text(PROC_CPUINFO), str(PROC_CPUINFO))
        except BadInput as error:
            return CpuFacts(
                os="linux",
                arch=_machine(),
                model=None,
                flags=frozenset(),
                source=str(PROC_CPUINFO),
                notes=(f"{error}; pass --cpuinfo to describe the CPU",),
            )
        machine = _machine()
        # The userland decides what runs: a 32-bit userland on a 64-bit kernel is not aarch64.
        return (
            facts
            if facts.arch == machine
            else CpuFacts(
                os=facts.os, arch=machine, model=facts.model, flags=facts.flags, source=facts.source, notes=facts.notes
            )
        )
    if sys.platform == "darwin":
        facts = read_sysctl()
        if facts is not None:
            return facts
    import cpuinfo  # py-cpuinfo: only where there is neither /proc/cpuinfo nor sysctl

    return from_py_cpuinfo(cpuinfo.get_cpu_info(), host_platform()[0])


def read_sysctl() -> CpuFacts | None:
    """macOS: `sysctl -a` names the chip (machdep.cpu.brand_string) and, on Apple Silicon, its
    FEAT_* features, where py-cpuinfo reports no flags at all. None when sysctl cannot be run."""
    import subprocess

    try:
        result = subprocess.run(["sysctl", "-a"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0 or len(result.stdout) > MAX_CPUINFO_BYTES:
        return None
    return parse_sysctl(result.stdout.decode("utf-8", errors="replace"), "sysctl -a")


def host_platform() -> tuple[str, str]:
    """(os, arch) of the machine this process runs on, as CpuFacts name them."""
    if sys.platform.startswith("linux"):
        os_name = "linux"
    elif sys.platform == "win32":  # every Windows, 64-bit too: the name PyTorch's wheels and --platform use
        os_name = "windows"
    else:
        os_name = sys.platform.rstrip("0123456789")
    return os_name, _machine()


@functools.cache  # the machine a process runs on does not change under it
def _machine() -> str:
    if hasattr(os, "uname"):
        machine = os.uname().machine
    else:  # Windows: AMD64 (platform is imported only there: it costs detect 1.4 ms)
        import platform

        machine = platform.machine() or "unknown"
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
