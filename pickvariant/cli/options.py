"""The options that describe a machine and pin a choice, declared once and without typer.

The typer app builds its parameters (common.declared) from these declarations, and the typer-free answer to
`detect --format json` (cli/entry.py) parses its command line with the same ones: importing typer costs
more than detecting and deciding (benchmarks/detect_speed.py), and one declaration cannot drift.
"""

from __future__ import annotations

from pathlib import Path

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.files import check_path_length
from pickvariant._base.records import keyword_record
from pickvariant._base.request import WORKLOADS, Request, check_label, projects_from

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    OptionKind = Literal["text", "path", "int", "texts", "flag", "choice"]

OUTPUT_FORMATS = ("text", "json", "markdown")
# detect's, with the wheels source's two: a requirements file and a pyproject block for uv.
DETECT_FORMATS = (*OUTPUT_FORMATS, "requirements", "pyproject")


@keyword_record
class Option:
    """One command-line option: its flag, what it takes, its help text, and the Request field it fills."""

    flag: str
    kind: OptionKind  # "texts" is repeatable; a "flag" takes no value
    help: str
    field: str | None = None  # the Request field, for options that describe the machine or pin the choice
    choices: tuple[str, ...] = ()
    default: object = None
    metavar: str | None = None  # what --help shows for the value (a choice shows its choices)

    @property
    def takes_value(self) -> bool:
        return self.kind != "flag"

    @property
    def repeatable(self) -> bool:
        return self.kind == "texts"


WORKLOAD = Option(
    flag="--workload",
    kind="choice",
    help="What the CPU side mostly runs: general (FP32), int8 (VNNI) or bf16.",
    field="workload",
    choices=WORKLOADS,
    default="general",
)
CPUINFO = Option(
    flag="--cpuinfo",
    kind="path",
    help="Decide for the CPU of this /proc/cpuinfo dump instead of this machine's; - reads stdin (env PICKVARIANT_CPUINFO).",
    field="cpuinfo",
    metavar="FILE",
)
GPU = Option(
    flag="--gpu",
    kind="texts",
    help="Decide for a GPU of this compute capability (8.9, sm_89); repeat for several (env PICKVARIANT_GPU, comma-separated).",
    field="gpus",
    metavar="CC",
)
NO_GPU = Option(
    flag="--no-gpu",
    kind="flag",
    help="Decide for a machine without GPUs (CPU-only build).",
    field="no_gpu",
    default=False,
)
DRIVER = Option(
    flag="--driver",
    kind="text",
    help="NVIDIA driver version to decide for, e.g. 580.65.06 (env PICKVARIANT_DRIVER).",
    field="driver",
    metavar="VERSION",
)
DRIVER_CUDA = Option(
    flag="--driver-cuda",
    kind="text",
    help='The CUDA version that driver reports (nvidia-smi\'s "CUDA Version", e.g. 13.0): what judges a Jetson driver '
    "(env PICKVARIANT_DRIVER_CUDA).",
    field="driver_cuda",
    metavar="X.Y",
)
WITH = Option(
    flag="--with",
    kind="texts",
    help="Choose these companions with the torch, on one PyTorch: torchvision, torchaudio, vllm; repeat or "
    "comma-separate (env PICKVARIANT_WITH).",
    field="with_projects",
    metavar="PROJECT",
)
TORCH = Option(
    flag="--torch",
    kind="text",
    help="Only consider branches with this PyTorch version (e.g. 2.9.1, 2.10).",
    field="torch",
    metavar="VERSION",
)
CUDA = Option(
    flag="--cuda",
    kind="text",
    help="Only consider CUDA builds of this CUDA line (e.g. 12.9).",
    field="cuda",
    metavar="X.Y",
)
GPU_INDEX = Option(
    flag="--gpu-index",
    kind="int",
    help="Target only the GPU with this index (machines with mixed GPUs).",
    field="gpu_index",
    metavar="N",
)
BRANCH = Option(
    flag="--branch",
    kind="text",
    help="Only this branch of the build repository (needed for aligned branches such as pytorch-2.9-vllm-0.15.1).",
    field="branch",
    metavar="NAME",
)
PYTHON = Option(
    flag="--python-version",
    kind="text",
    help="Only builds for this Python (3.11, 3.12, 3.13); default: the newest built (env PICKVARIANT_PYTHON).",
    field="python",
    metavar="X.Y",
)
BUILD = Option(
    flag="--build",
    kind="flag",
    help="With --with: the set as `install --build` builds it, from source, each companion generated on the chosen "
    "variant's own recipe (default: as published, built from source only where nothing published makes a set).",
    field="build",
    default=False,
)
FORMAT = Option(flag="--format", kind="choice", help="Output format.", choices=OUTPUT_FORMATS, default="text")
DETECT_FORMAT = Option(
    flag="--format",
    kind="choice",
    help="Output format; requirements and pyproject (with --source wheels): a requirements file pip installs, the "
    "[tool.uv] block that points torch at its index.",
    choices=DETECT_FORMATS,
    default="text",
)
SOURCE = Option(
    flag="--source",
    kind="text",
    help="Where builds come from: flox (the build repository's recipes, the default) or wheels (PyTorch's own "
    "indexes, for pip and uv) (env PICKVARIANT_SOURCE).",
    metavar="flox|wheels",
)
PYTHON_PATH = Option(
    flag="--python",
    kind="text",
    help="With --source wheels: the interpreter of the environment to install into (default: the active one); its "
    "Python and the torch already there are read, torch is not imported.",
    metavar="PATH",
)
WHEEL_INDEX = Option(
    flag="--wheel-index",
    kind="text",
    help="With --source wheels: the root of a mirror of PyTorch's indexes (ROOT/cu126/torch/...) "
    "(env PICKVARIANT_WHEEL_INDEX).",
    metavar="URL",
)
COMPACT = Option(
    flag="--compact",
    kind="flag",
    help="The JSON object on one line, one node per line for `plan` (implies --format json).",
    default=False,
)
EXPLAIN = Option(
    flag="--explain",
    kind="flag",
    help="Text: every alternative and why it lost (by default only the nearest ones that would run here).",
    default=False,
)
LABEL = Option(
    flag="--label",
    kind="text",
    help='With --format json or --compact: a top-level "label" naming this node (env PICKVARIANT_LABEL); nothing else names the host.',
    metavar="NAME",
)

# The options that fill a Request, by parameter name, in the order commands list them.
REQUEST = {
    "workload": WORKLOAD,
    "cpuinfo": CPUINFO,
    "gpu": GPU,
    "no_gpu": NO_GPU,
    "driver": DRIVER,
    "driver_cuda": DRIVER_CUDA,
    "torch": TORCH,
    "cuda": CUDA,
    "gpu_index": GPU_INDEX,
    "branch": BRANCH,
    "python_version": PYTHON,
    "with_": WITH,
}
# detect's options, in the order its help lists them.
DETECT = {
    "workload": WORKLOAD,
    "format": DETECT_FORMAT,
    **{name: option for name, option in REQUEST.items() if option is not WORKLOAD},
    "build": BUILD,
    "compact": COMPACT,
    "explain": EXPLAIN,
    "label": LABEL,
    "source": SOURCE,
    "python": PYTHON_PATH,
    "wheel_index": WHEEL_INDEX,
}
_BY_FLAG = {option.flag: (name, option) for name, option in DETECT.items()}
_DIGITS = frozenset("0123456789")


def request_from(values: Mapping[str, Any]) -> Request:
    """The Request that parsed option values (by parameter name, as REQUEST names them) describe.

    The values are what a parser produced for each declared option's kind (text, a list of texts, a path, a
    flag); Request's own checks judge them, so they are passed on as Any."""
    fields: dict[str, Any] = {}
    for name, value in values.items():
        option = REQUEST.get(name) or DETECT.get(name)  # detect's own (--build) fill the Request too
        if option is None or option.field is None or value is None:
            continue
        if option is WITH:
            fields[option.field] = projects_from(value, option.flag)
            continue
        if option.repeatable:
            fields[option.field] = tuple(value)
        elif option.kind == "path" and isinstance(value, (str, Path)):
            check_path_length(value, option.flag)
            fields[option.field] = Path(value)
        else:
            fields[option.field] = value
    return Request(**fields)


def detect_label(values: Mapping[str, Any], env: Mapping[str, str], output: str) -> str | None:
    """detect's label (--label, else PICKVARIANT_LABEL), checked by the rules plan reads it by; None without one.

    Both front ends judge detect's options here, so that one rule holds whichever answers: --compact prints JSON
    (an explicit other --format is refused, text as markdown); --build builds a set, so it wants companions."""
    if values.get("compact") and output != "json":
        raise BadInput(f"--compact prints the JSON object on one line: it cannot be --format {output}")
    if values.get("build") and not values.get("with_") and settings.setting(env, settings.WITH) is None:
        raise BadInput(
            "--build: detect builds a set from source (torch with its companions): give --with PROJECT "
            "(or PICKVARIANT_WITH); `install --build` builds a variant alone"
        )
    label = values.get("label")
    given = "--label"
    if label is None and (label := settings.setting(env, settings.LABEL)) is not None:
        given = settings.LABEL
    if label is None:
        return None
    if values.get("label") is not None and output != "json":
        raise BadInput("--label names the node in the JSON output: add --format json (or --compact)")
    return check_label(str(label), given)


def asks_wheels(values: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Does a detect command line name the wheels source or its options? Then the typer CLI answers it: the fast
    path answers the Flox source alone."""
    named = any(values.get(name) is not None for name in ("source", "python", "wheel_index"))
    return named or settings.setting(env, settings.SOURCE) is not None


def plain_wheels(values: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Is a plain detect line one of the wheels source that entry's fast path answers as the typer CLI would (the
    source, named or by PICKVARIANT_SOURCE, is wheels and well-formed)? Anything else goes to the typer CLI."""
    from pickvariant._base.errors import BadInput

    try:
        return settings.source(values.get("source"), env) == "wheels"
    except BadInput:
        return False


def parse_plain_detect(args: list[str]) -> dict[str, object] | None:
    """detect's option values (by parameter name) for `detect --format json …` given plainly, else None.

    None for anything the typer CLI should judge: an unknown or repeated option, a value that looks like
    an option, a choice or index it would refuse, --help, a positional argument."""
    if not args or args[0] != "detect":
        return None
    values: dict[str, object] = {name: option.default for name, option in DETECT.items()}
    seen: set[str] = set()
    position = 1
    while position < len(args):
        flag, equals, value = args[position].partition("=")
        position += 1
        if flag not in _BY_FLAG:
            return None
        name, option = _BY_FLAG[flag]
        if name in seen and not option.repeatable:
            return None
        seen.add(name)
        if not option.takes_value:
            if equals:
                return None
            values[name] = True
            continue
        if not equals:
            if position >= len(args):
                return None
            value, position = args[position], position + 1
        if value.startswith("-") or (option.choices and value not in option.choices):
            return None
        if option.kind == "int":
            if not 0 < len(value) <= 9 or not _DIGITS.issuperset(value):
                return None
            values[name] = int(value)
        elif option.repeatable:
            values[name] = [*(values[name] or ()), value]  # type: ignore[misc]  # a repeatable option's value is a list
        else:
            values[name] = value
    if values["compact"] and "format" not in seen:
        values["format"] = "json"  # --compact implies JSON, as in the typer CLI
    return values if values["format"] == "json" else None  # --compact with another --format: typer refuses it
