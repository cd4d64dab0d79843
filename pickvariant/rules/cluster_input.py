"""A cluster's detect lines, read as plan reads them: every line bounded, checked against the detect-line
schema, and each distinct machine kept only as far as the decision reads it.

Inputs are JSONL files, directories of JSON files, FIFOs, stdin, and Ansible's one-line output; lines
that are no node are counted and the first SHOWN_BAD_LINES named. Nothing here decides: rules/cluster_plan.py does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import stat
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pickvariant._base import strictjson
from pickvariant._base.errors import BadInput
from pickvariant._base.records import record
from pickvariant._base.request import MAX_LABEL_LENGTH  # the detect-line schema says so too
from pickvariant._base.schema import SchemaError, load_schema, validate

DETECT_SCHEMA_VERSION = 2
MAX_LINE_BYTES = 1024 * 1024  # a detect line is ~4 KiB; anything this long is not one
SHOWN_BAD_LINES = 20
FIFO_WAIT_S = 10
DETECT_LINE_SCHEMA = Path(__file__).resolve().with_name("detect-line.schema.json")


@record
class BadLine:
    where: str  # FILE:LINE
    why: str


@dataclass
class Inputs:
    """Nodes as (label, profile index), the distinct hardware profiles, and the lines that were not nodes."""

    labels: list[str] = field(default_factory=list)
    profile_of: list[int] = field(default_factory=list)
    hardware: list[Mapping[str, Any]] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    bad_count: int = 0

    def duplicate_labels(self) -> list[str]:
        """Each label given to more than one line, with how many lines and whether their hardware differs:
        the same label on two machines is two nodes, and the admin should know which name to fix."""
        profiles: dict[str, list[int]] = defaultdict(list)
        for label, profile in zip(self.labels, self.profile_of, strict=False):
            profiles[label].append(profile)
        said = []
        for label, seen in profiles.items():
            if len(seen) > 1:
                kinds = len(set(seen))
                hardware = f"{kinds} different machines" if kinds > 1 else "the same hardware"
                said.append(f"{label}: {len(seen)} lines, {hardware} (each counted as a node)")
        return sorted(said)


def _compact(hardware: Mapping[str, Any]) -> dict[str, Any]:
    """What the decision reads of a node's (validated) hardware, and nothing else, its flag names shared
    between nodes (sys.intern): a cluster of 100k distinct machines keeps 100k of these."""
    cpu = hardware["cpu"]
    return {
        "os": sys.intern(hardware["os"]),
        "arch": sys.intern(hardware["arch"]),
        "cpu": {"model": cpu.get("model"), "flags": sorted({sys.intern(flag) for flag in cpu["flags"]})},
        "gpus": [
            {"compute_capability": sys.intern(gpu["compute_capability"]), "name": gpu.get("name")}
            for gpu in hardware["gpus"]
        ],
        "driver": hardware.get("driver"),
        # An AMD or Intel GPU changes the node's answer (a ROCm or XPU build, or what it says of the GPU).
        "other_gpus": [
            {
                "vendor": gpu["vendor"],
                "target": gpu["target"],
                "features": gpu.get("features", []),
                "device_id": gpu["device_id"],
            }
            for gpu in hardware.get("other_gpus", ())
        ],
        "driver_assumed": hardware.get("driver_assumed") is True,
        "gpu_detection_inconclusive": hardware.get("gpu_detection_inconclusive") is True,
    }


def _profile_key(compact: Mapping[str, Any]) -> bytes:
    """A digest of what the decision reads of a node: nodes with equal keys get equal decisions."""
    # Names (of the CPU model, of GPUs) change no decision: machines that differ only in them share one.
    relevant = {
        **compact,
        "cpu": compact["cpu"]["flags"],
        "gpus": [gpu["compute_capability"] for gpu in compact["gpus"]],
    }
    return hashlib.blake2b(json.dumps(relevant, sort_keys=True).encode("utf-8"), digest_size=16).digest()


# What an input yields: (FILE:LINE, the document's bytes) or (FILE[:LINE], None, why it is no document).
_Document = tuple[str, bytes | None, str | None]


def _lines(stream: IO[bytes], name: str) -> Iterator[_Document]:
    """Every line with a bounded read: a line over MAX_LINE_BYTES is drained and reported, never held."""
    number = 0
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield f"{name}:{number}", None, f"longer than {MAX_LINE_BYTES // 1024} KiB: not a detect line"
            continue
        yield f"{name}:{number}", line, None


def documents(path: str, stdin: IO[bytes]) -> Iterator[_Document]:
    """Every document of an input: JSONL lines of a file or stdin, or one JSON document per file of a directory."""
    if path == "-":
        yield from _lines(stdin, "-")
        return
    location = Path(path)
    try:
        kind = location.stat().st_mode
    except OSError as error:
        raise BadInput(f"plan input {path!r:.200}: {error.strerror or error}") from None
    if stat.S_ISDIR(kind):
        for child in sorted(location.iterdir()):
            if child.is_file() and child.suffix in (".json", ".jsonl"):
                yield from documents(str(child), stdin)
        return
    if stat.S_ISFIFO(kind):
        with _opened_fifo(location, path) as stream:
            yield from _lines(stream, path)
        return
    if not stat.S_ISREG(kind):
        # /dev/zero would never end, a terminal never says it has: only files, directories, FIFOs and stdin are read.
        raise BadInput(f"plan input {path!r:.200} is not a regular file, a directory or a FIFO")
    try:
        with open(location, "rb") as stream:
            head = stream.read(2)
            stream.seek(0)
            if head[:1] == b"{" and head != b'{"' and location.stat().st_size <= MAX_LINE_BYTES:
                # A pretty-printed `detect --format json` file: one document over many lines.
                yield f"{path}:1", stream.read(), None
            else:
                yield from _lines(stream, path)
    except OSError as error:
        yield path, None, f"cannot read it: {error.strerror or error}"


# What `ansible HOSTS -m shell -a 'pickvariant detect --compact --label …' -o` prints per host (its oneline
# callback; ansible-core 2.19): "n1 | CHANGED | rc=0 | (stdout) {…}", with " (stderr) …" after it if the command wrote there.
_ANSIBLE_ONELINE = re.compile(
    r"(?P<host>[^\s|]+) \| (?P<status>[A-Z!]+)(?: \| rc=(?P<rc>-?\d+))?(?: \| | => )(?P<rest>.*)", re.DOTALL
)


def _from_ansible(line: re.Match[str]) -> tuple[str, str | None]:
    """The detect line inside one line of Ansible's oneline output, or why there is none."""
    rest = line["rest"]
    if (
        line["status"] not in ("CHANGED", "SUCCESS")
        or line["rc"] not in (None, "0", "3")
        or not rest.startswith("(stdout) {")
    ):
        return "", f"Ansible reports {line['status'].rstrip('!')} for {line['host']}: no detect line from it"
    try:
        _, end = _DECODER.raw_decode(rest, len("(stdout) "))
    except (ValueError, RecursionError):  # nested past the parser's depth: one bad line, never the plan's end
        return "", f"Ansible's line for {line['host']} holds no complete JSON object"
    return rest[len("(stdout) ") : end], None


def _opened_fifo(location: Path, path: str) -> IO[bytes]:
    """A FIFO (`plan <(ssh host pickvariant detect …)`), once something writes to it: one that nothing
    writes to within FIFO_WAIT_S is refused rather than waited on for ever."""
    descriptor = os.open(location, os.O_RDONLY | os.O_NONBLOCK)
    poller = select.poll()
    poller.register(descriptor, select.POLLIN | select.POLLHUP)
    if not poller.poll(FIFO_WAIT_S * 1000):
        os.close(descriptor)
        raise BadInput(f"plan input {path!r:.200} is a FIFO that nothing wrote to within {FIFO_WAIT_S} s")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


_DECODER = json.JSONDecoder()
_LABEL_PREFIX = '{"label":'
MAX_REMEMBERED_BODIES = 10_000  # distinct node objects kept for the fast path: bounded memory


def _split_label(text: str) -> tuple[str | None, str | None]:
    """For a line as `detect --compact --label` prints it, the label and the rest as an object of its own.

    The rest is a key: a line whose rest equals an earlier valid line's is valid exactly when its
    label is a JSON string, so it needs no second parse."""
    if not text.startswith(_LABEL_PREFIX):
        return None, None
    try:
        label, end = _DECODER.raw_decode(text, len(_LABEL_PREFIX))
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(label, str) or not text.startswith(",", end):
        return None, None
    return label, "{" + text[end + 1 :]


def input_size(paths: Sequence[str], stdin: IO[bytes]) -> int | None:
    """The bytes read_inputs will read, where that is known beforehand (files, or stdin redirected from one)."""
    total = 0
    for path in paths:
        try:
            if path == "-":
                status = os.fstat(stdin.fileno())
                if not stat.S_ISREG(status.st_mode):
                    return None
                total += status.st_size
            elif (location := Path(path)).is_dir():
                total += sum(
                    child.stat().st_size
                    for child in location.iterdir()
                    if child.is_file() and child.suffix in (".json", ".jsonl")
                )
            else:
                total += location.stat().st_size
        except (OSError, ValueError):  # ValueError: a stdin without a file descriptor
            return None
    return total


ProgressCallback = Callable[[int, int], None]  # (nodes read, bytes read)


def read_inputs(
    paths: Sequence[str], stdin: IO[bytes], on_progress: ProgressCallback = lambda nodes, size: None
) -> Inputs:
    inputs = Inputs()
    consumed = 0
    profile_index: dict[bytes, int] = {}
    seen: dict[str, int] = {}  # a line without its label -> its profile

    def bad(where: str, why: str) -> None:
        inputs.bad_count += 1
        if len(inputs.bad) < SHOWN_BAD_LINES:
            inputs.bad.append(BadLine(where, why))

    for path in paths:
        for where, raw, problem in documents(path, stdin):
            if raw is None:
                bad(where, problem or "unreadable")
                continue
            consumed += len(raw)
            if not raw.strip():
                continue
            text, why = line_text(raw)
            if why is not None:
                bad(where, why)
                continue
            label, body = _split_label(text)
            known = seen.get(body) if body is not None else None
            if known is not None and label is not None and not 0 < len(label) <= MAX_LABEL_LENGTH:
                bad(where, f"its label is empty or longer than {MAX_LABEL_LENGTH} characters")
                continue
            if known is not None:
                # The same node object as an earlier line but for its label: no need to parse 5 KB again.
                inputs.labels.append(label or where)
                inputs.profile_of.append(known)
                if len(inputs.labels) % 4096 == 0:
                    on_progress(len(inputs.labels), consumed)
                continue
            document, why = _detect_document(text)
            if why is not None:
                bad(where, why)
                continue
            label = document.get("label")
            compact = _compact(document["hardware"])
            key = _profile_key(compact)
            index = profile_index.get(key)
            if index is None:
                index = profile_index[key] = len(inputs.hardware)
                inputs.hardware.append(compact)
            inputs.labels.append(label if isinstance(label, str) and label else where)
            inputs.profile_of.append(index)
            if body is not None and document.get("label") == label and len(seen) < MAX_REMEMBERED_BODIES:
                seen[body] = index
            if len(inputs.labels) % 4096 == 0:
                on_progress(len(inputs.labels), consumed)
    return inputs


def line_text(raw: bytes) -> tuple[str, str | None]:
    """A line's text (a detect object, also as Ansible's one-line output prints it), or why it has none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "", "not UTF-8"
    if not text.startswith("{") and (ansible := _ANSIBLE_ONELINE.match(text)) is not None:
        return _from_ansible(ansible)
    return text, None


def _detect_document(text: str) -> tuple[dict[str, Any], str | None]:
    """The detect object a line holds, validated against the detect-line schema, or why it is none."""
    try:
        document = strictjson.loads(text)
    except (ValueError, RecursionError):
        return {}, "not JSON"
    if (
        not isinstance(document, dict)
        or document.get("schema_version") != DETECT_SCHEMA_VERSION
        or not isinstance(document.get("hardware"), dict)
    ):
        return (
            {},
            f'not a `pickvariant detect --format json` object (schema_version {DETECT_SCHEMA_VERSION} with "hardware")',
        )
    try:
        validate(document, load_schema(DETECT_LINE_SCHEMA))
    except SchemaError as error:
        return {}, f"not a detect line that can be read: {error}"
    return document, None
