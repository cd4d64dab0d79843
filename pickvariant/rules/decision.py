"""What the rules answer, whichever source's stages ask: the build chosen (or none), why, and why not each alternative
(one Decision), and the answer with what it was decided from (one Answer)."""

from __future__ import annotations

from collections.abc import Iterable

from pickvariant._base.records import B, C, D, OfKind, keyword_record, record
from pickvariant.machine.gpu import GpuFacts
from pickvariant.sources.build import Branch, Companion, Variant
from pickvariant.sources.hardware import CudaLine

TYPE_CHECKING = False  # typing and the set's shape stay off detect's path
if TYPE_CHECKING:
    from typing import Final, Literal

    # The wheels source's records: named in annotations only, so detect's path never loads them.
    from pickvariant.machine.environment import PythonEnvironment
    from pickvariant.machine.facts import HostFacts
    from pickvariant.sources.hardware import Hardware
    from pickvariant.sources.prebuilt import PrebuiltCatalog
    from pickvariant.sources.registry import Source

    SetRefusalCause = Literal["missing", "two_torches", "not_generated", "aligned"]

    KindName = Literal[
        "cpu_lacks_flags",
        "no_kernels",
        "driver",
        "pinned_out",
        "aligned_branch",
        "not_built",
        "ranked_lower",
        "no_set",
        "companion_torch_unknown",
    ]


class Kind:
    """Why an alternative lost, as a closed set: what JSON carries and what the short answer sorts by.

    Plain string constants typed as a Literal rather than an Enum: detect makes a score of rejections per answer,
    and an Enum member costs an attribute lookup through the metaclass each time (benchmarks/detect_speed.py)."""

    CPU_LACKS_FLAGS: Final = "cpu_lacks_flags"  # an instruction set this CPU cannot run (SIGILL)
    NO_KERNELS: Final = "no_kernels"  # a GPU architecture whose kernels do not run on a GPU here
    DRIVER: Final = "driver"  # a CUDA line the driver cannot run
    PINNED_OUT: Final = "pinned_out"  # left out by --branch, --torch, --python-version
    ALIGNED: Final = "aligned_branch"  # a branch aligned with another project, chosen only when named
    NOT_BUILT: Final = "not_built"  # what would fit has no variant there
    RANKED_LOWER: Final = "ranked_lower"  # it fits, and lost by the order (PyTorch, CUDA line, Python, arch, ISA)
    NO_SET: Final = "no_set"  # it fits, but the companions asked for make no set on it
    COMPANION_TORCH_UNKNOWN: Final = "companion_torch_unknown"  # a companion whose torch cannot be known


# The alternatives that would run here: the nearest ones, shown by the short answer.
NEAREST = frozenset({Kind.RANKED_LOWER, Kind.NO_SET})


class Rejection(tuple):  # (kind, subject, facts), immutable and hashable as a tuple is
    """An alternative one stage turned down: its kind, what it is and the facts the stage found.

    `subject`: (axis, name), the axis one of branch, cuda_line, cpu_isa, gpu_arch, package, companion. `facts`:
    (name, value) pairs; where a kind is found in several ways, `cause` says which. Nothing here is prose:
    rules/wording/ words a rejection, so text, Markdown and JSON say the same.

    A tuple rather than a @record: detect makes a dozen per answer, and a tuple is built, hashed and compared in
    C (benchmarks/detect_speed.py's warm ratio)."""

    __slots__ = ()

    def __new__(
        cls, kind: KindName, subject: tuple[str, str], facts: tuple[tuple[str, str | tuple[str, ...]], ...] = ()
    ) -> Rejection:
        return tuple.__new__(cls, (kind, subject, facts))

    @property
    def kind(self) -> KindName:
        return self[0]

    @property
    def subject(self) -> tuple[str, str]:
        return self[1]

    @property
    def facts(self) -> tuple[tuple[str, str | tuple[str, ...]], ...]:
        return self[2]

    def __repr__(self) -> str:
        return f"Rejection(kind={self[0]!r}, subject={self[1]!r}, facts={self[2]!r})"


def rejection(kind: KindName, axis: str, name: str, **facts: str | tuple[str, ...]) -> Rejection:
    """A Rejection with its facts given by name, in the order its stage names them (one order per kind and cause,
    so equal findings are equal records)."""
    return Rejection(kind, (axis, name), tuple(facts.items()))


@record
class SetRefusal:
    """Why a set is not on a variant: a project has no recipe on its PyTorch (missing), the set would hold two
    PyTorch builds (two_torches, with rules/sets.py's account of them), or it goes on the equal variant of the branch
    aligned with the vLLM release chosen (aligned, with that branch)."""

    cause: SetRefusalCause
    projects: tuple[str, ...]
    detail: str = ""


@keyword_record
class SetShape:
    """How a set becomes one environment with one PyTorch."""

    installed: tuple[str, ...]  # the packages installed, in order (each one is built and published by plan)
    torch_from: str  # the package whose torch Python imports
    companions_alone: bool  # the variant is not installed: the one companion brings its torch
    # The companions built from recipes pickvariant generates on the variant's own: the set is built from source.
    generated: tuple[str, ...] = ()


@keyword_record
class RecipeDetail:
    """What the recipes' decision adds (rules/recipe_walk.py): the release line chosen and its CUDA line, and how a set
    makes one environment with one PyTorch (what install installs and plan builds)."""

    branch: Branch | None = None
    line: CudaLine | None = None
    set_shape: SetShape | None = None


@keyword_record
class PrebuiltDetail:
    """What a prebuilt build's decision adds (rules/prebuilt_walk.py)."""

    # Its index (None with a build: PyPI's own, from the installer's default index), whether it is PyPI's own build
    # installed from PyPI, the platform and Python it is for.
    index_url: str | None = None
    from_pypi: bool = False
    platform: str | None = None
    python: str | None = None  # "3.12"
    python_tag: str | None = None  # "cp312"
    dispatch: str | None = None  # the CPU dispatch level ATen picks here, where it is known
    # The oldest driver that runs the chosen build on these GPUs (rules/compat.machine_floor): its CUDA line's floor,
    # or a GPU's first driver where that is newer; None for a CPU build.
    min_driver: str | None = None
    driver_needed: str | None = None  # that floor as said ("driver >= 580.65.06", "a JetPack driver of CUDA 13.2 …")
    # Every build of this platform at or after the chosen release left out of the catalog, each with why (the reasons
    # name the newest two and count the rest).
    left_out: tuple[str, ...] = ()
    # The torch already in the environment, as a finding: (its version, whether it runs on every GPU here: "yes",
    # "no", "unknown", "none" where none is installed), with its sentence.
    installed: str | None = None
    installed_fits: str | None = None
    installed_said: str | None = None


@keyword_record
class Decision(OfKind[B, C, D]):
    """The one answer of every source's stages: what detect shows, install installs, plan builds and verify checks,
    none re-deriving it. `B` is the source's build (a recipes' Variant, a prebuilt Build), `C` its companion
    (a Flox Companion, a PairedRelease), `D` what its kind adds (RecipeDetail, PrebuiltDetail): every field but
    `detail` is every source's."""

    detail: D  # what the kind of source adds, with or without a build
    build: B | None = None  # the build that is safe and fastest here, or None: nothing runs here (exit 3)
    reasons: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    hints: tuple[str, ...] = ()
    targets: tuple[GpuFacts, ...] = ()
    # Every build that can run here, best first: what `plan` may give this machine, in detect's order.
    candidates: tuple[B, ...] = ()
    # With --with: the companions chosen with `build`, one per project asked for, on its PyTorch.
    companions: tuple[C, ...] = ()
    # How many of the first reasons restate the machine (its platform, its GPUs): the short answer shows those as
    # facts instead.
    machine_said: int = 0


# The decision the one pick (rules/pick.py) makes over each walk: the recipes' (rules/recipe_walk.py) and a
# prebuilt build's (rules/prebuilt_walk.py), one record.
RecipeDecision = Decision[Variant, Companion, RecipeDetail]
if TYPE_CHECKING:
    from pickvariant.sources.prebuilt import PairedRelease
    from pickvariant.sources.runs_on import Build

    PrebuiltDecision = Decision[Build, PairedRelease, PrebuiltDetail]
else:  # the prebuilt builds' records stay off the recipes' path: the same class, unparameterised at run time
    PrebuiltDecision = Decision


@keyword_record
class Answer(OfKind[B, C, D]):
    """A decision with what it was made from, whichever source made it: the machine's facts, the hardware facts it
    was judged against (the recipes' catalog is one), the workload and the source. A source of prebuilt builds adds
    its catalog of builds, the environment a build is for (None: not read) and the root its indexes are under (as
    shown, printed and recorded: without credentials)."""

    facts: HostFacts
    decision: Decision[B, C, D]
    hardware: Hardware
    workload: str
    source: Source  # the source whose builds these are (sources/registry.py)
    wheels: PrebuiltCatalog | None = None
    environment: PythonEnvironment | None = None
    index_root: str = ""
    # The root as given, where it carries credentials (user:password@): only the installer run and the requirements
    # and pyproject outputs (which need it to work) see it; None where it carries none.
    index_root_with_credentials: str | None = None

    def catalog_of_builds(self) -> PrebuiltCatalog:
        """A source of prebuilt builds' catalog of builds (the recipes' answer carries none: theirs is `hardware`)."""
        if self.wheels is None:
            raise TypeError("the recipes' answer carries no catalog of prebuilt builds")
        return self.wheels


# The answer a source of prebuilt builds gives (the recipes' is the same record, of their Variant).
if TYPE_CHECKING:
    PrebuiltAnswer = Answer[Build, PairedRelease, PrebuiltDetail]
else:
    PrebuiltAnswer = Answer


def dedupe(rejected: Iterable[Rejection]) -> tuple[Rejection, ...]:
    return tuple(dict.fromkeys(rejected))
