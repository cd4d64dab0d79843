"""The options that describe a machine and pin a choice, declared once and without typer.

The typer app builds its parameters (common.declared) from these declarations, and the typer-free answer to
`detect --format json` (cli/entry.py) parses its command line with the same ones: importing typer costs
more than detecting and deciding (benchmarks/detect_speed.py), and one declaration cannot drift.
"""

from __future__ import annotations

import os

from pickvariant._base import settings
from pickvariant._base.errors import BadInput
from pickvariant._base.files import check_path_length, joined
from pickvariant._base.records import keyword_record
from pickvariant._base.request import STATED_PLATFORMS, WORKLOADS, Request, check_label, projects_from

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on detect's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    from pickvariant.sources.registry import Source

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
    field: str | None = None  # the Request field, for options that describe the machine, pin the choice or ask a source
    choices: tuple[str, ...] = ()
    default: object = None
    metavar: str | None = None  # what --help shows for the value (a choice shows its choices)
    variable: str | None = None  # the PICKVARIANT_* variable that gives it where the option is not given
    variable_note: str = ""  # how the variable spells it, where not as the option does ("comma-separated")

    @property
    def described(self) -> str:
        """The help --help shows: the declared text, with the variable (from the declaration, never typed twice)."""
        if self.variable is None:
            return self.help
        note = f", {self.variable_note}" if self.variable_note else ""
        text, stop = (self.help[:-1], ".") if self.help.endswith(".") else (self.help, "")
        return f"{text} (env {self.variable}{note}){stop}"

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
    help="Decide for the CPU of this /proc/cpuinfo dump instead of this machine's; - reads stdin.",
    field="cpuinfo",
    variable=settings.CPUINFO,
    metavar="FILE",
)
PLATFORM = Option(
    flag="--platform",
    kind="choice",
    help="With --source wheels: the stated machine's OS and architecture, as PyTorch's wheels name them (a Windows "
    "machine has no /proc/cpuinfo to give); with --cpuinfo, the two must agree.",
    field="platform",
    choices=tuple(STATED_PLATFORMS),
)
GPU = Option(
    flag="--gpu",
    kind="texts",
    help=(
        "Decide for a GPU of this compute capability (8.9, sm_89); repeat for several. An AMD GPU by its gfx target "
        "(gfx1100), an Intel GPU as xpu: stated for the facts, no build is chosen for them yet."
    ),
    field="gpus",
    variable=settings.GPU,
    variable_note="comma-separated",
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
    help="NVIDIA driver version to decide for, e.g. 580.65.06.",
    field="driver",
    variable=settings.DRIVER,
    metavar="VERSION",
)
DRIVER_CUDA = Option(
    flag="--driver-cuda",
    kind="text",
    help='The CUDA version that driver reports (nvidia-smi\'s "CUDA Version", e.g. 13.0): what judges a Jetson driver.',
    field="driver_cuda",
    variable=settings.DRIVER_CUDA,
    metavar="X.Y",
)
WITH = Option(
    flag="--with",
    kind="texts",
    help="Choose these companions with the torch, on one PyTorch: torchvision, torchaudio, vllm; repeat or "
    "comma-separate.",
    field="with_projects",
    variable=settings.WITH,
    metavar="PROJECT",
)
TORCH = Option(
    flag="--torch",
    kind="text",
    help="Only builds of this PyTorch release (e.g. 2.9.1, 2.10): the recipes' branches, or the wheels' releases.",
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
    help="Only builds for this Python (e.g. 3.12; 3.13t, a free-threaded one, with --source wheels); default: the "
    "newest built, or with --source wheels the environment's interpreter (none for a stated machine).",
    field="python",
    variable=settings.PYTHON,
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
    "indexes, for pip and uv).",
    metavar="flox|wheels",
    variable=settings.SOURCE,
    field="source",
)
PYTHON_PATH = Option(
    flag="--python",
    kind="text",
    help="With --source wheels: the interpreter of the environment to install into (default: the active one); its "
    "Python and the torch already there are read, torch is not imported.",
    metavar="PATH",
    field="interpreter",
)
REPORT_PYTHON = Option(
    flag="--python",
    kind="text",
    help="The interpreter whose PyTorch to report (default: the last install's, else this one): probed here; with "
    "--source wheels its environment's files are read too; for a stated machine only its files are read (torch is "
    "never imported, nothing of this machine is probed).",
    metavar="PATH",
    field="interpreter",
)
WHEEL_INDEX = Option(
    flag="--wheel-index",
    kind="text",
    help="With --source wheels, and for `catalog wheels --refresh`: the root of PyTorch's wheel indexes or of a mirror "
    "of them (ROOT/cu126/torch/...).",
    metavar="URL",
    variable=settings.WHEEL_INDEX,
    field="index",
)
NODE_LABEL = Option(
    flag="--label",
    kind="text",
    help="With --plan: this node's label in it (default: the host name).",
    metavar="NAME",
    variable=settings.LABEL,
)
FLOX_ORG = Option(
    flag="--org",
    kind="text",
    help="Install the package published in this Flox organisation's catalog.",
    metavar="ORG",
    variable=settings.FLOX_ORG,
)
PLAN_ORG = Option(
    flag="--org",
    kind="text",
    help="The Flox organisation the builds are published to (used in the printed commands).",
    metavar="ORG",
    variable=settings.FLOX_ORG,
)
INSTALLER = Option(
    flag="--installer",
    kind="text",
    help="With --source wheels: pip (run by the environment's interpreter, the default) or uv (found on PATH).",
    metavar="pip|uv",
    variable=settings.INSTALLER,
)
VERIFY_WITH = Option(
    flag="--with",
    kind="texts",
    help="Also import these companions, run one operation of each on every GPU and check one libtorch is loaded.",
    metavar="PROJECT",
    variable=settings.WITH,
)
VERIFY_LABEL = Option(
    flag="--label",
    kind="text",
    help='With --format json: a "label" naming this node.',
    metavar="NAME",
    variable=settings.LABEL,
)
# A path option with its own check (cli/typer_options.RepoOpt), declared here for its words and its variable.
RECIPES_REPO = Option(
    flag="--repo",
    kind="path",
    help="The recipe repository: URL or path of the build repository, a fork, mirror or clone (default: the "
    "catalog's source).",
    metavar="URL|PATH",
    variable=settings.RECIPES_REPO,
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
    help='With --format json or --compact: a top-level "label" naming this node; nothing else names the host.',
    metavar="NAME",
    variable=settings.LABEL,
)

# The options that fill a Request, by parameter name, in the order commands list them.
REQUEST = {
    "workload": WORKLOAD,
    "cpuinfo": CPUINFO,
    "platform": PLATFORM,
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
        elif option.kind == "path" and isinstance(value, (str, os.PathLike)):
            check_path_length(value, option.flag)
            fields[option.field] = joined(os.fspath(value))  # as pathlib (the typer CLI's Path) writes it: '' is .
        else:
            fields[option.field] = value
    return Request(**fields)


def detect_source(values: Mapping[str, Any], env: Mapping[str, str], output: str) -> Source:
    """The source a detect command line asks (--source, else PICKVARIANT_SOURCE, else flox), with another source's
    options refused: both front ends ask it here."""
    from pickvariant.sources import registry

    source = registry.chosen(values["source"], env)
    added = {"--python": values["python"], "--wheel-index": values["wheel_index"], f"--format {output}": True}
    registry.refuse_others(source, added)
    return source


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
