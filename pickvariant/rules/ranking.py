"""The one order every source's builds are ranked in, best first, among those that run here.

1. the newest PyTorch;
2. where a source of prebuilt builds is asked with no index named, the build an installer gets with no index
   named (PyPI's own torch) before the release's other builds: the simplest command that serves;
3. the newest CUDA line (a build without CUDA after every CUDA build: the candidates are never both, since a GPU to
   serve refuses a CPU build and no GPU refuses a CUDA one); then ROCm builds on the newest ROCm release, XPU builds,
   and builds with no GPU code last;
4. the preferred Python, for a build of one Python (a prebuilt build carries many tags, one of which is chosen apart);
5. the highest GPU architecture it carries machine code (SASS) for;
6. the CPU instruction set the workload ranks first (a build that requires none: ATen dispatches at run time);
7. its label, so that the order is total and the answer cannot depend on the order builds were looked at.

rules/stages.py ranks a recipe's variants by it, rules/prebuilt_stages.py a prebuilt build; the words for why one
build ranked below another are rules/wording/'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pickvariant._base.records import keyword_record
from pickvariant._base.versions import version_key
from pickvariant.sources.accelerator import Rocm
from pickvariant.sources.runs_on import Build


@keyword_record
class Order:
    """What a ranking prefers beyond the builds' own facts: the Pythons in order (CPython tags: "cp313"), the
    instruction sets by the workload's rank (a set not named ranks first), and whether the build an installer gets
    with no index named comes first within a release."""

    pythons: tuple[str, ...] = ()
    isas: Mapping[str, int] | None = None
    default_index_first: bool = False


def _newest_first(release: str) -> tuple[int, ...]:
    """A release's sort key negated, so that sorted() puts the newest first."""
    return tuple(-part for part in version_key(release))


def key(build: Build, order: Order) -> tuple[object, ...]:
    """The build's place in the order (the module docstring's), for sorted(): smaller is better."""
    pythons = order.pythons
    python = pythons.index(build.python[0]) if len(build.python) == 1 and build.python[0] in pythons else len(pythons)
    highest = max(build.sass, default=None)
    return (
        _newest_first(build.torch),
        order.default_index_first and not build.default_index,
        _line(build),
        python if len(build.python) == 1 else 0,
        (-highest.major, -highest.minor) if highest is not None else (0, 0),
        (order.isas or {}).get(build.cpu_isa or "", 0),
        build.label,
    )


def _line(build: Build) -> tuple[int, tuple[int, ...]]:
    """CUDA builds first, on the newest line; then ROCm builds on the newest ROCm release, XPU builds, and builds
    with no GPU code last (candidates of two families meet only on a machine with GPUs of two vendors)."""
    if build.cuda:
        return 0, _newest_first(build.cuda)
    code = build.gpu_code
    if code is not None:
        return (1, _newest_first(code.stack)) if isinstance(code, Rocm) else (2, ())
    return 3, ()


def ranked(builds: Iterable[Build], order: Order) -> list[Build]:
    """The builds best first."""
    return sorted(builds, key=lambda build: key(build, order))
