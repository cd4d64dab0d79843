"""Parsing of compute capabilities and driver versions: pure, with one clear error each."""

from __future__ import annotations

import re
from functools import cached_property, lru_cache, total_ordering

from pickvariant._base.errors import BadInput
from pickvariant._base.records import ordered_record, record


@ordered_record
class ComputeCapability:
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def sm(self) -> str:
        return f"sm{self.major}{self.minor}"


_CC_DOTTED = re.compile(r"^\s*(\d{1,2})\.(\d)\s*$")
_CC_SM = re.compile(r"^\s*sm_?(\d{1,2})(\d)\s*$", re.IGNORECASE)


def parse_compute_capability(text: str) -> ComputeCapability:
    """Accept `8.9`, `sm_89` or `sm89` (the last digit of an SM number is the minor)."""
    match = _CC_DOTTED.match(text) or _CC_SM.match(text)
    if not match or int(match.group(1)) == 0:  # CUDA's compute capabilities begin at 1.0
        raise BadInput(
            f"{text!r:.40} is not a compute capability: write it as 8.9, sm_89 or sm89"
            " (architecture-specific suffixes such as sm_90a are not variants)"
        )
    return ComputeCapability(int(match.group(1)), int(match.group(2)))


@total_ordering
@record
class DriverVersion:
    """An NVIDIA driver version such as 580.65.06, compared part by part as numbers."""

    text: str
    parts: tuple[int, ...]

    def __str__(self) -> str:
        return self.text

    @cached_property
    def _padded(self) -> tuple[int, ...]:
        # 580.65 is 580.65.0: every version is compared as four parts (the most a driver version has),
        # once per version, since decide compares the driver with every CUDA line's minimum.
        return self.parts + (0,) * (_DRIVER_PARTS - len(self.parts))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, DriverVersion):
            return NotImplemented
        return self._padded < other._padded

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DriverVersion):
            return NotImplemented
        return self._padded == other._padded

    def __hash__(self) -> int:
        return hash(self._padded)


_DRIVER_PARTS = 4  # as _DRIVER allows
_DRIVER = re.compile(r"^\s*(\d{1,4})((?:\.\d{1,4}){0,3})\s*$")


def parse_driver_version(text: str) -> DriverVersion:
    match = _DRIVER.match(text)
    if not match:
        raise BadInput(f"{text!r:.40} is not an NVIDIA driver version: write it as 580.65.06")
    parts = (int(match.group(1)), *tuple(int(part) for part in match.group(2).split(".")[1:]))
    return DriverVersion(text.strip(), parts)


_CUDA_VERSION = re.compile(r"^\s*(\d{1,2})\.(\d{1,2})\s*$")


def parse_cuda_version(text: str) -> str:
    """A driver's CUDA version as nvidia-smi prints it ("13.0"), normalised ("13.00" -> "13.0")."""
    match = _CUDA_VERSION.match(text)
    if not match:
        raise BadInput(f"{text!r:.40} is not a CUDA version: write it as X.Y, as nvidia-smi prints it (e.g. 13.0)")
    return f"{int(match.group(1))}.{int(match.group(2))}"


def decode_cuda_driver_version(value: int) -> str:
    """NVML's CUDA version integer, e.g. 13000 -> '13.0' (NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


_RELEASE = re.compile(r"^\s*(\d{1,4}(?:\.\d{1,4}){0,3})\s*$")


def cpython_tag(version: str) -> str:
    """A CPython version as wheel tags name it: "3.12" is cp312, "3.13t" (free-threaded) cp313t."""
    return "cp" + version.replace(".", "")


@lru_cache(maxsize=1024)  # a few dozen releases, compared thousands of times by decide and plan
def version_key(text: str) -> tuple[int, ...]:
    """'12.9' -> (12, 9), '2.10.0' -> (2, 10, 0): CUDA and PyTorch releases ordered as numbers."""
    return tuple(int(part) for part in text.split("."))


# What each pin looks like, for the message that refuses a malformed one (keyed by option or variable).
_EXAMPLES = {
    "--torch": "2.10 or 2.10.0",
    "--cuda": "12.9 or 13",
    "--python-version": "3.12",
    "PICKVARIANT_PYTHON": "3.12",
}


def release_matches(pin: str, release: str, flag: str) -> bool:
    """Does `--torch 2.10` (or `--cuda 13`) name `release` 2.10.0 (13.0)? Missing parts are free, extra zeros equal."""
    match = _RELEASE.match(pin)
    if not match and _EXAMPLES.get(flag.rstrip("=")) == "3.12" and _RELEASE.match(pin.strip().removesuffix("t")):
        raise BadInput(
            f"{flag} {pin!r:.40}: a free-threaded Python, and no build of this source is for one: name "
            f"{pin.strip().removesuffix('t')}, or ask the wheels (--source wheels), whose catalog has free-threaded builds"
        )
    if not match:
        raise BadInput(
            f"{flag} {pin!r:.40}: not a version; write it as {_EXAMPLES.get(flag.rstrip('='), '2.10 or 2.10.0')}"
        )
    wanted = tuple(int(part) for part in match.group(1).split("."))
    have = version_key(release)
    have = have + (0,) * max(0, len(wanted) - len(have))
    return have[: len(wanted)] == wanted


def release_numbers(version: str | None) -> tuple[int, ...] | None:
    """'2.10.0+cu130' -> (2, 10), '13.0' -> (13,): a release's numbers without a local part or trailing zeros, or None
    for no version or one PEP 440 cannot read (verify compares a probed torch with this; install an environment's)."""
    if not version:
        return None
    from packaging.version import InvalidVersion, Version  # off detect's path

    try:
        parts = list(Version(version).release)
    except InvalidVersion:
        return None
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
