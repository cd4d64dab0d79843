"""What a source of prebuilt builds' answer says (rules/prebuilt_walk.py finds the facts): the wheel chosen and its
index, the Python it is for, its companions, the builds left out of the catalog, the torch already installed, its
hints. Each is said in its source's nouns ("wheel" and "index", "package" and "channel": the catalog's `nouns`). Its
rejections are worded with every source's, in rules/wording/__init__.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pickvariant.sources.nouns import Nouns
from pickvariant.sources.prebuilt import PairedRelease

# Reasons: what each stage found.


def platform_has_wheels(os: str, arch: str, platform: str, publisher: str, nouns: Nouns) -> str:
    return f"platform: {os}/{arch}, for which {publisher} publishes {platform} {nouns.builds}"


def no_platform_wheels(os: str, arch: str, platforms: Sequence[str], publisher: str, nouns: Nouns) -> str:
    if (os, arch) == ("darwin", "x86_64") and publisher == "PyTorch":  # a fact of PyTorch's own catalog
        return (
            "an Intel Mac: no release the wheel catalog holds (torch 2.8 on) publishes a macOS x86_64 wheel, only "
            f"macOS arm64 (PyPI's files); it has wheels for {', '.join(platforms)}"
        )
    return (
        f"{publisher} publishes no {nouns.build} for {os}/{arch} in any release the {nouns.build} catalog holds (it "
        f"has {nouns.builds} for {', '.join(platforms)})"
    )


def python_target(version: str, tag: str, given_as: str) -> str:
    return f"Python {version} ({tag}), {given_as}"


def python_unstated(tag: str, companions: tuple[str, ...] = ()) -> str:
    names = ("the chosen torch", *companions)
    built = f"{', '.join(names[:-1])} and {names[-1]} are" if companions else f"{names[0]} is"
    return (
        f"Python: none named (no --python-version, and the machine is stated, so no interpreter here is read): "
        f"shown for {tag}, the newest {built} built for"
    )


def refreshed(date: str | None) -> tuple[str, ...]:
    """Where the catalog is the one `catalog wheels --refresh` derived: said once, with its date."""
    if date is None:
        return ()
    return (
        f"wheel facts read from the index on {date} (`pickvariant catalog wheels --refresh`), beside those shipped",
    )


def driver_needed(floor: str | None, cuda: str, tegra: bool = False) -> str:
    """The driver a CUDA build needs, as said: its floor; on a Jetson, JetPack's of that CUDA release or newer (no
    minor-version compatibility there); where no floor numbers the machine's drivers (Windows), its CUDA major."""
    if tegra:
        return f"a JetPack driver of CUDA {cuda} or newer"
    return f"driver >= {floor}" if floor else f"a driver that runs CUDA {cuda.split('.')[0]}.x"


def driver_floor(driver: object) -> str:
    """A driver floor as said: a version, or a whole branch ("R570", the first that drives a GPU here)."""
    text = str(driver)
    return f"R{text}" if text.isdigit() else text


def newest(nouns: Nouns) -> str:
    return f"the newest torch with a {nouns.build} that"


def newest_paired(projects: tuple[str, ...], nouns: Nouns) -> str:
    return f"the newest torch with a release of {', '.join(projects)} paired and a {nouns.build} that"


def chosen(
    local: str,
    index_url: str | None,
    cuda: str | None,
    needed: str | None,
    pinned: bool,
    nouns: Nouns,
    stack: str | None = None,
) -> str:
    """`stack`: the ROCm or XPU stack a build for an AMD or Intel GPU is on ("ROCm 7.2")."""
    order, said = ("the pins leave" if pinned else "runs here"), newest(nouns)
    where = f"torch {local} from {index_url}" if index_url is not None else pypi_build_named(local)
    if stack is not None:
        return f"{where}: {said} {order}, {stack}"
    if cuda is None:
        return f"{where}: {said} {order} (a CPU build)"
    line = f"CUDA {cuda} ({needed})"
    if index_url is None:
        return f"{where}: {said} {order}, PyPI's own build first, {line}"
    return f"{where}: {said} {order}, on its newest CUDA line, {line}"


def pypi_build_named(local: str) -> str:
    """PyPI's own build said as what it is: PyPI's versions carry no local label, its torch.__version__ does."""
    release, _, label = local.partition("+")
    seen = f"; torch.__version__ says {local}" if label else ""
    return f"torch {release} from PyPI, its own build (no index URL needed{seen})"


def sass_covers(gpu: int, capability: object, sass: object) -> str:
    same = "its own" if str(sass) == str(capability) else f"{sass}, of the same major version and an older minor"
    return f"GPU {gpu} ({capability}) runs its SASS (machine code) for {same}"


def unified(cuda: str) -> str:
    return (
        f" (a CUDA {cuda} build: CUDA 13.2 lets code built for a discrete GPU run on a Jetson of the same major, "
        "as torch's own DEVICE_REQUIREMENT_POST_JETSON_SBSA_UNIFICATION says)"
    )


def ptx_covers(gpu: int, capability: object, ptx: object) -> str:
    return (
        f"GPU {gpu} ({capability}) has no SASS in it: the driver JIT-compiles its compute_{ptx} PTX when a process "
        "first starts (minutes of compiling, once per driver, kept in the CUDA compute cache)"
    )


def mps_wheel(nouns: Nouns) -> str:
    return f"GPU: Apple Silicon's, through MPS, which the macOS arm64 {nouns.build} carries (no CUDA on macOS)"


def pypi_same(torch: str, platform: str) -> str:
    return f"PyPI's own torch {torch} for {platform} is this build: a plain `pip install torch=={torch}` gets it too"


def dispatch(level: str | None, arch: str, nouns: Nouns, cpu_stated: bool = True) -> str:
    said = f"CPU: a {nouns.build} is not chosen by instruction set: ATen picks its CPU kernels at run time"
    if not cpu_stated:
        return f"{said} (no CPU stated)"
    if level is not None:
        return f"{said}, and this CPU gets {level}"
    return (
        f"{said} ({arch}: SVE256 where the CPU's SVE vectors are 256 bits wide, else DEFAULT; /proc/cpuinfo does not "
        "give the vector length)"
    )


def companion_paired(pair: PairedRelease, torch: str, from_pypi: bool, sources: Mapping[str, str], nouns: Nouns) -> str:
    where = "from PyPI, as torch" if from_pypi else f"from the same {nouns.where}"
    if pair.pypi_only:
        said_by = "; ".join(sources.get(source, source) for source in pair.sources)
        return (
            f"{pair.project} {pair.version} beside torch {torch}: no later {pair.project} release exists, it names no "
            f"torch requirement, and its makers say it serves later torch releases ({said_by}); from PyPI, where it "
            "is: whether it has a wheel for this Python is for the installer to find"
        )
    pin = f"it requires {pair.requires}" if pair.requires else "it names no torch requirement"
    return f"{pair.project} {pair.version}: the release paired with torch {torch} ({pin}), {where}"


LEFT_OUT_SHOWN = 2  # the not-judged builds named in the answer; the rest are counted, each with why under --explain


def left_out_newer(rows: Sequence[tuple[str, str, str]], nouns: Nouns) -> str:
    shown = "; ".join(f"torch {torch} {variant}: {why}" for torch, variant, why in rows[:LEFT_OUT_SHOWN])
    more = len(rows) - LEFT_OUT_SHOWN
    rest = f"; and {more} more, each with why under --explain and in the JSON's left_out" if more > 0 else ""
    return f"not judged (left out of the {nouns.build} catalog, nothing guessed): {shown}{rest}"


def left_out_row(torch: str, variant: str, why: str) -> str:
    return f"torch {torch} {variant}: {why}"


def older_than_the_catalog(driver: str, first: str, floor: str, nouns: Nouns) -> str:
    return (
        f"driver {driver} is older than every CUDA line the {nouns.build} catalog holds (they need >= {floor}): it starts at "
        f"torch {first}, and older releases, built for older CUDA lines (such as 11.8), are outside it and not judged "
        "here"
    )


def nothing_fits(choice: str, why: str, nouns: Nouns) -> str:
    return f"no {nouns.build} runs here; the nearest, {choice}: {why}"


# The environment: the torch already there.


def pypi_build(version: str, local: str) -> str:
    return f"{version} (PyPI's build, {local})"


def installed_covers(local: str, gpus: str) -> str:
    return f"torch {local} in this environment runs on every GPU here ({gpus})"


def installed_lacks(local: str, gpu: int, capability: object) -> str:
    return f"torch {local} in this environment has no kernels for GPU {gpu} ({capability})"


def installed_undriven(local: str, why: str) -> str:
    return f"torch {local} in this environment cannot run on this driver: {why}"


def installed_kept(sentence: str) -> str:
    """A torch that runs here is kept by `install` (nothing installed) unless --upgrade is given."""
    return f"{sentence}: `install` keeps it and installs nothing (`install --upgrade` replaces it)"


def installed_cpu_only(local: str) -> str:
    return f"torch {local} in this environment is a CPU-only build: it leaves this machine's GPUs unused"


def installed_no_gpus(local: str) -> str:
    return f"torch {local} in this environment runs here (no GPU to serve)"


def installed_unknown(local: str, nouns: Nouns) -> str:
    return (
        f"torch {local} in this environment is not in the {nouns.build} catalog: its kernels are not known here "
        "(`pickvariant verify` probes it)"
    )


def installed_other_stack(local: str, stack: str, nouns: Nouns) -> str:
    return (
        f"torch {local} in this environment is a {stack} build the {nouns.build} catalog does not hold: whether its "
        f"kernels run on this GPU is not known here (`pickvariant verify` probes it)"
    )


def installed_none(interpreter: str) -> str:
    return f"no torch is installed for {interpreter}"


def installed_is_chosen(local: str) -> str:
    return f"torch {local} in this environment is already the build chosen"


# Hints: what would help when nothing fits.


def driver_would_allow(local: str, floor: str, gpus_need: str, last_branch: int | None = None) -> str:
    """The driver that would run `local`: at least its floor and, where a GPU here has a last driver branch (a
    Pascal card: R580), no newer than that branch, as the recipe answer says it."""
    need = f" that also drives every GPU here ({gpus_need})" if gpus_need else ""
    within = f"of branch R{last_branch} or older, " if last_branch is not None else ""
    return f"a driver {within}>= {floor}{need} would run torch {local}"


def driver_would_give(needed: str, local: str) -> str:
    """The driver a decision made again with it says it needs (driver_needed: a JetPack driver of a CUDA release, a
    Windows driver of a CUDA major), and the wheel that decision chose."""
    article = "" if needed.startswith("a ") else "a "
    return f"{article}{needed} would run torch {local}"


def no_gpu_wheel(nouns: Nouns) -> str:
    return f"--no-gpu: the cpu {nouns.build} runs here, without the GPUs"


def other_python(local: str, tags: str) -> str:
    return f"torch {local} is built for {tags}: another Python (--python, --python-version) would get it"


def held_back(newer: str, missing: tuple[str, ...], from_pypi: bool, nouns: Nouns) -> str:
    where = "on PyPI" if from_pypi else f"on its {nouns.where}"
    projects = ", ".join(missing)
    return (
        f"held back by --with: torch {newer}, a newer release, runs here too, but no {projects} release is paired "
        f"with it {where}; without --with {projects}, torch {newer} is the answer"
    )


def without_pins(pins: str, label: str) -> str:
    return f"without {pins}, torch {label} runs here"


def without_companions(nouns: Nouns) -> str:
    return f"without --with, torch alone has a {nouns.build} here"


def companion_lacks_python(project: str, version: str, torch: str, tag: str, has: tuple[str, ...], nouns: Nouns) -> str:
    return (
        f"{project} {version}, paired with torch {torch}, has no {nouns.build} for {tag} (it has {', '.join(has)}): "
        f"another Python (--python, --python-version) would get the set"
    )
