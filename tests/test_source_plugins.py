"""Issue 71, first part: a source is a plug-in of the entry-point group `pickvariant.sources`, the two built in
declared there as a third party's are. A third party's distribution, installed (a real `.dist-info` with its
`entry_points.txt` on the interpreter's path), answers `--source NAME` in a fresh process with no registration; one
whose code fails to load, or whose entry point names no Source, is named in one line where it is asked for, and every
other source still answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import REPO, cpuinfo_path

from pickvariant.sources import registry

PLUGIN = """
from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.sources.prebuilt import PrebuiltCatalog, published
from pickvariant.sources.nouns import WHEELS
from pickvariant.sources.registry import Source

def _catalog():
    build = published(
        source="acme", torch="2.14.1", index="acme128", platform="linux-x86_64", python=("cp311", "cp312", "cp313"),
        sass=(parse_compute_capability("8.0"), parse_compute_capability("9.0")), ptx=(), cuda="12.8",
        cuda_min_driver=parse_driver_version("525.60.13"), sources=("acme build log 2026-11",),
    )
    return PrebuiltCatalog(builds=(build,), left_out=(), companions={}, index_root="https://wheels.acme.example/torch",
                           facts_compiled="2026-11-20", sources={})

def hello() -> None:
    # Acme's own command
    print("hello from Acme")

COMMANDS = (("hello", "acme_wheels:hello"), ("detect", "acme_wheels:hello"), ("catalog acme", "acme_wheels:hello"))
SOURCE = Source(
    name="acme", pipeline="prebuilt", builds=_catalog, publisher="Acme", nouns=WHEELS, commands=COMMANDS
)
NOT_A_SOURCE = "a string"
SHOUTING = Source(name="shouting", pipeline="prebuilt", builds=_catalog, publisher="Acme\x1b[2J", nouns=WHEELS)
"""
MACHINE = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "9.0", "--driver", "570.86.10"]


def _installed_plugins(site: Path) -> Path:
    """A distribution installed as pip installs one: its module, and a .dist-info naming its entry points."""
    site.mkdir()
    (site / "acme_wheels.py").write_text(PLUGIN)
    info = site / "acme_wheels-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-wheels\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pickvariant.sources]\nacme = acme_wheels:SOURCE\nbroken = acme_wheels_gone:SOURCE\n"
        "notone = acme_wheels:NOT_A_SOURCE\nwheels = acme_wheels:SOURCE\nshouting = acme_wheels:SHOUTING\n"
    )
    return site


def _pickvariant(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)]), "HOME": str(site.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args], env=env, cwd=site.parent, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_the_built_in_sources_are_declared_as_entry_points_as_a_third_partys_are() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][registry.GROUP]
    assert declared == registry._BUILT_IN


def test_an_installed_plugin_answers_and_a_broken_one_is_named_while_the_others_answer(tmp_path) -> None:
    site = _installed_plugins(tmp_path / "site")
    acme = _pickvariant(site, "detect", "--source", "acme", "--format", "json", *MACHINE)
    assert acme.returncode == 0, acme.stderr
    assert json.loads(acme.stdout)["recommendation"]["torch"].startswith("2.14.1")
    # One whose code fails, one that is no Source, one whose publisher would write an escape sequence to a terminal.
    for name in ("broken", "notone", "shouting"):
        failed = _pickvariant(site, "detect", "--source", name, *MACHINE)
        assert failed.returncode == 1 and failed.stdout == "" and failed.stderr.count("\n") == 1, failed.stderr
        assert f"source plug-in '{name}'" in failed.stderr and "Traceback" not in failed.stderr
        assert "\x1b" not in failed.stderr
    # A distribution cannot take a built-in name over: --source wheels is still PyTorch's wheels.
    wheels = _pickvariant(site, "detect", "--source", "wheels", "--format", "json", *MACHINE)
    assert wheels.returncode == 0 and json.loads(wheels.stdout)["source"] == "wheels"
    assert "acme" not in json.loads(wheels.stdout)["recommendation"]["torch"]
    # The commands only it has are the command line's: beside pickvariant's own, never in place of one.
    hello, grouped = _pickvariant(site, "hello"), _pickvariant(site, "catalog", "acme")
    assert hello.stdout == grouped.stdout == "hello from Acme\n", hello.stderr + grouped.stderr
    assert "hello" in _pickvariant(site, "--help").stdout
    detect = _pickvariant(site, "detect", "--source", "acme", *MACHINE)
    assert detect.returncode == 0 and "Recommendation: torch 2.14.1" in detect.stdout
    unknown = _pickvariant(site, "detect", "--source", "nosuch", *MACHINE)
    assert unknown.returncode == 2 and "acme" in unknown.stderr and "broken" not in unknown.stderr, unknown.stderr


ROCM_PLUGIN = """
from pickvariant._base.records import keyword_record
from pickvariant.sources.accelerator import Rocm
from pickvariant.sources.prebuilt import PrebuiltCatalog, published
from pickvariant.sources.nouns import WHEELS
from pickvariant.sources.registry import Source

@keyword_record
class Photonic:  # GPU code of a family no rule judges
    targets: tuple[str, ...]
    family = "photonic"

def _build(index, gpu_code):
    return published(
        source="redrock", torch="2.14.1", index=index, platform="linux-x86_64", python=("cp311", "cp312", "cp313"),
        sass=(), ptx=(), cuda=None, cuda_min_driver=None, gpu_code=gpu_code,
    )

def _catalog():
    builds = (
        _build("rocm7.2", Rocm(stack="7.2", targets=("gfx942", "gfx1100"))),
        _build("photon1", Photonic(targets=("p1",))),
        _build("cpu", None),
    )
    return PrebuiltCatalog(builds=builds, left_out=(), companions={}, index_root="https://wheels.redrock.example",
                           facts_compiled="2026-11-20", sources={})

SOURCE = Source(name="redrock", pipeline="prebuilt", builds=_catalog, publisher="Red Rock", nouns=WHEELS)
"""


def test_a_rocm_source_plugin_is_judged_by_gfx_target_and_an_unjudged_family_is_left_out_named(tmp_path) -> None:
    """Issue 71: a stand-in ROCm source, installed: its ROCm build serves an MI300X (gfx942), is never the answer on
    a machine without an AMD GPU (the CPU build is) nor on one whose target it lacks (gfx1010: exit 3, naming it);
    its build of a family no rule judges is never chosen, not even as a CPU build, and is named as left out."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "redrock_wheels.py").write_text(ROCM_PLUGIN)
    info = site / "redrock_wheels-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: redrock-wheels\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pickvariant.sources]\nredrock = redrock_wheels:SOURCE\n")
    cpu = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--python-version", "3.12"]

    def detect(*gpu: str) -> tuple[int, dict, str]:
        done = _pickvariant(site, "detect", "--source", "redrock", "--format", "json", *cpu, *gpu)
        assert done.returncode in (0, 3), done.stderr
        return done.returncode, json.loads(done.stdout), done.stderr

    code, mi300x, _ = detect("--gpu", "gfx942")
    assert code == 0 and mi300x["recommendation"]["variant"] == "rocm7.2"
    code, none, _ = detect("--no-gpu")
    assert code == 0 and none["recommendation"]["variant"] == "cpu"
    assert any("photon1" in row and "no rule to judge" in row for row in none["left_out"])
    code, navi, stderr = detect("--gpu", "gfx1010")
    assert code == 3 and "gfx1010" in stderr
    for document in (mi300x, none, navi):
        assert "photon1" not in json.dumps([document["recommendation"], document["rejected"]])


def test_every_family_a_build_may_name_has_one_check() -> None:
    from pickvariant.rules import families
    from pickvariant.sources import accelerator

    assert set(families.CHECKS) | {accelerator.CUDA, accelerator.MPS, accelerator.CPU} == accelerator.JUDGED


OWN_INSTALLER = """
from pickvariant._base.errors import BadInput
from redrock_wheels import SOURCE as ROCM

def install(ask, source, catalog):
    raise BadInput(f"--source {source}: installs with Red Rock's own tool (its installation part ran)")

from pickvariant._base.records import replace
SOURCE = replace(ROCM, name="redrock-own", parts=(("installation", "redrock_own:install"),))
"""


def test_a_plugin_brings_its_own_installation_and_the_stages_ask_it_never_the_kind(tmp_path) -> None:
    """Issue 71: what `install` runs is the source's part: a plug-in that names its own installation has it run (its
    one line here), while its answer still comes from the prebuilt pipeline it names none of."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "redrock_wheels.py").write_text(ROCM_PLUGIN)
    (site / "redrock_own.py").write_text(OWN_INSTALLER)
    info = site / "redrock_own-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: redrock-own\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pickvariant.sources]\nredrock-own = redrock_own:SOURCE\n")
    machine = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "gfx942", "--python-version", "3.12"]
    detect = _pickvariant(site, "detect", "--source", "redrock-own", "--format", "json", *machine)
    assert detect.returncode == 0 and json.loads(detect.stdout)["recommendation"]["variant"] == "rocm7.2"
    install = _pickvariant(site, "install", "--source", "redrock-own", "--dry-run", *machine)
    assert install.returncode == 2 and install.stdout == "", install.stderr
    assert (
        install.stderr
        == "pickvariant: --source redrock-own: installs with Red Rock's own tool (its installation part ran)\n"
    )


FAULTY = """
from acme_wheels import _catalog
from pickvariant.sources.nouns import WHEELS
from pickvariant.sources.registry import Source

def _acme(name, **own):
    return Source(**{"name": name, "pipeline": "prebuilt", "builds": _catalog, "publisher": "Acme", "nouns": WHEELS,
                     **own})

def _raises():
    raise KeyError("platforms")

# A catalog that raises, or is none; a part and a command that do not import.
RAISES, NOCATALOG = _acme("raises", builds=_raises), _acme("nocatalog", builds=lambda: None)
BADPART = _acme("badpart", parts=(("packaging", "acme_gone:PACKAGING"),))
BADCOMMAND = _acme("badcommand", commands=(("goodbye", "acme_gone:goodbye"),))
# A command that is no function, and commands of another shape than (words, module:attribute) pairs.
NOTCALLABLE = _acme("notcallable", commands=(("byebye", "acme_faulty:RAISES"),))
BADPAIRS = _acme("badpairs", commands=("hi",))
# A packaging part whose install command is no list of words, and one whose command raises.
class NoWords:
    def pins(self, build, companions, from_pypi, python):
        return ["torch"]

    def command(self, interpreter, build, companions, url, from_pypi, python):
        return None

class Raising(NoWords):
    def command(self, interpreter, build, companions, url, from_pypi, python):
        raise KeyError("index")

NO_WORDS, RAISING = NoWords(), Raising()
NOWORDS = _acme("nowords", parts=(("packaging", "acme_faulty:NO_WORDS"),))
RAISINGWORDS = _acme("raisingwords", parts=(("packaging", "acme_faulty:RAISING"),))
# A kind pickvariant has no stages for, and a second source of recipes (the Flox source under another name).
OTHERKIND = _acme("otherkind", pipeline="conda")
RECIPES = Source(name="recipes", pipeline="recipes")
"""


def test_a_plugin_whose_code_fails_after_it_loads_is_named_in_one_line_and_every_other_command_runs(tmp_path) -> None:
    """A plug-in's catalog that raises or is no catalog, its part or its own command that does not import or is no
    function, an install command that raises or is no list of words, commands of another shape, a kind with no
    stages or a second source of recipes: each is one line naming the plug-in (exit 1), never a traceback, a missing
    package of pickvariant's nor another source's answer, and a command of it that cannot run leaves every other
    command running."""
    site = _installed_plugins(tmp_path / "site")
    (site / "acme_faulty.py").write_text(FAULTY)
    info = site / "acme_faulty-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-faulty\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pickvariant.sources]\nraises = acme_faulty:RAISES\nnocatalog = acme_faulty:NOCATALOG\n"
        "badpart = acme_faulty:BADPART\nbadcommand = acme_faulty:BADCOMMAND\notherkind = acme_faulty:OTHERKIND\n"
        "recipes = acme_faulty:RECIPES\nnotcallable = acme_faulty:NOTCALLABLE\nbadpairs = acme_faulty:BADPAIRS\n"
        "nowords = acme_faulty:NOWORDS\nraisingwords = acme_faulty:RAISINGWORDS\n"
    )
    detected = ("raises", "nocatalog", "badpart", "otherkind", "recipes", "badpairs", "nowords", "raisingwords")
    failures = [_pickvariant(site, "detect", "--source", name, *MACHINE) for name in detected]
    failures += [_pickvariant(site, "goodbye", "--any", "words"), _pickvariant(site, "byebye")]
    for failed, name in zip(failures, (*detected, "badcommand", "notcallable"), strict=True):
        assert failed.returncode == 1 and failed.stdout == "" and failed.stderr.count("\n") == 1, failed.stderr
        assert failed.stderr.startswith(f"pickvariant: source plug-in '{name}'"), failed.stderr
        assert "Traceback" not in failed.stderr and "a package pickvariant needs" not in failed.stderr
    # Every other command still runs beside the commands that did not load.
    plan = _pickvariant(site, "plan", "--help")
    assert plan.returncode == 0 and "--max-variants" in plan.stdout, plan.stderr
