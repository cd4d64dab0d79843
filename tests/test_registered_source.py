"""Issue 52: a source of builds a program registers in its own process plugs in with no edit to rules/, commands/,
output/ or cli/ (tests/test_third_source.py: one installed as its own distribution, of another kind than pip's).

The source below (an organisation's own wheel builds on its own index, as a site that builds torch itself publishes
them) is registered at run time, as a program that imports pickvariant would; detect, install --dry-run, plan and
report then answer `--source acme` through the same stages, words and documents as the built-in sources. The
expected answers come from the source's own rows and the hardware facts: sm90 runs its SASS for 9.0, sm61 has none
(and no PTX at or below 6.1), a driver older than the CUDA line's floor refuses it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import cli_runner, cpuinfo_path
from test_plan import detect_line

from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.cli.main import app
from pickvariant.sources import registry
from pickvariant.sources.nouns import WHEELS
from pickvariant.sources.prebuilt import PrebuiltCatalog, published
from pickvariant.sources.runs_on import Build

runner = cli_runner()
HASWELL = cpuinfo_path("linux-rhel7-haswell")
ROOT = "https://wheels.acme.example/torch"
H100 = ["--cpuinfo", str(HASWELL), "--gpu", "9.0", "--driver", "570.86.10"]
GTX_1080 = ["--cpuinfo", str(HASWELL), "--gpu", "6.1", "--driver", "570.86.10"]


def _build(variant: str, sass: tuple[str, ...], cuda: str | None, driver: str | None) -> Build:
    return published(
        source="acme",
        torch="2.14.1",
        index=variant,
        platform="linux-x86_64",
        python=("cp311", "cp312", "cp313"),
        sass=tuple(parse_compute_capability(cc) for cc in sass),
        ptx=(),
        cuda=cuda,
        cuda_min_driver=parse_driver_version(driver) if driver else None,
        sources=("acme build log 2026-11",),
    )


ACME = PrebuiltCatalog(
    builds=(_build("acme128", ("8.0", "9.0"), "12.8", "525.60.13"), _build("cpu", (), None, None)),
    left_out=(),
    companions={},
    index_root=ROOT,
    facts_compiled="2026-11-20",
    sources={},
)


@pytest.fixture(autouse=True)
def acme():
    registry.register(
        registry.Source(name="acme", pipeline="prebuilt", builds=lambda: ACME, publisher="Acme", nouns=WHEELS)
    )
    yield
    registry.unregister("acme")


def _detect(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["detect", "--source", "acme", "--format", "json", "--python-version", "3.12", *args])
    return result.exit_code, json.loads(result.stdout)


def test_detect_answers_from_the_registered_source_and_its_words_name_it() -> None:
    code, answer = _detect(*H100)
    assert code == 0 and answer["source"] == "acme"
    assert answer["recommendation"]["torch"] == "2.14.1+acme128"
    assert answer["recommendation"]["index_url"] == f"{ROOT}/acme128"
    text = runner.invoke(app, ["detect", "--source", "acme", "--python-version", "3.12", *H100]).stdout
    assert "(Acme's acme128 index)" in text and "pickvariant install --source acme" in text
    # A GPU none of its builds has kernels for: no answer, exit 3, and the CPU build named as what would help.
    code, answer = _detect(*GTX_1080)
    assert code == 3 and answer["recommendation"] is None
    assert any("6.1" in reason for reason in answer["reasons"])
    # A driver below the CUDA line's floor refuses the CUDA build.
    code, answer = _detect("--cpuinfo", str(HASWELL), "--gpu", "9.0", "--driver", "470.256.02")
    assert code == 3 and any("525.60.13" in reason for reason in answer["reasons"])


def test_its_sentences_name_its_publisher_never_pytorch() -> None:
    """Issue 52: a registered source's builds are its publisher's. Acme publishes linux-x86_64 builds only: the
    platform it has and a platform it lacks are both said as Acme's, never as what PyTorch publishes."""
    code, answer = _detect(*H100)
    assert code == 0
    assert "platform: linux/x86_64, for which Acme publishes linux-x86_64 wheels" in answer["reasons"]
    assert not any("PyTorch publishes" in reason for reason in answer["reasons"])
    code, answer = _detect("--platform", "windows-amd64", "--gpu", "9.0", "--driver", "570.86")
    assert code == 3 and answer["recommendation"] is None
    assert answer["reasons"][-1].startswith("Acme publishes no wheel for windows/x86_64"), answer["reasons"]
    # The wheels source's own sentence still names PyTorch (its catalog's publisher).
    wheels = runner.invoke(app, ["detect", "--source", "wheels", "--format", "json", "--python-version", "3.12", *H100])
    assert (
        "platform: linux/x86_64, for which PyTorch publishes linux-x86_64 wheels"
        in json.loads(wheels.stdout)["reasons"]
    )


def test_a_pin_it_cannot_take_is_refused_in_its_publishers_words_and_by_what_it_pairs() -> None:
    """A pin the stages of prebuilt builds refuse is refused for this source as its own: Acme pairs no companion with
    torch (its catalog pairs none), where PyTorch's indexes pair torchvision and torchaudio (the wheels' catalog)."""
    for option in (["--with", "torchvision"], ["--branch", "pytorch-2.10-python313"]):
        result = runner.invoke(app, ["detect", "--source", "acme", *option, *H100])
        assert result.exit_code == 2 and "Acme's" in result.stderr and "PyTorch" not in result.stderr, result.stderr
    acme = runner.invoke(app, ["detect", "--source", "acme", "--with", "torchvision", *H100])
    assert acme.stderr.strip().endswith("--with torchvision: Acme's indexes pair no companion with torch")
    wheels = runner.invoke(app, ["detect", "--source", "wheels", "--with", "vllm", *H100])
    assert wheels.exit_code == 2
    assert "--with vllm: PyTorch's indexes pair torchvision and torchaudio with torch, not vllm" in wheels.stderr


def test_an_unknown_source_is_one_line_naming_every_registered_one(monkeypatch) -> None:
    monkeypatch.setenv("PICKVARIANT_SOURCE", "nosuch")
    result = runner.invoke(app, ["detect", "--format", "json", *H100])
    assert result.exit_code == 2
    assert "PICKVARIANT_SOURCE 'nosuch': choose one of flox, wheels, acme" in result.stderr


def test_a_source_that_brings_no_builds_is_not_registered() -> None:
    """Only prebuilt builds plug in: the recipes' stages read the Flox catalog, so a second source of recipes would
    answer as flox under another name (every document would name the wrong source)."""
    for source in (
        registry.Source(name="myflox", pipeline="recipes"),
        registry.Source(name="nobuilds", pipeline="prebuilt"),
        registry.Source(name="Bad Name", pipeline="prebuilt", builds=lambda: ACME),
    ):
        with pytest.raises(ValueError, match=repr(source.name)):
            registry.register(source)
    assert "myflox" not in registry.names() and "nobuilds" not in registry.names()


def test_install_dry_run_plans_the_sources_wheel_from_its_index(tmp_path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True)
    python = str(tmp_path / "env" / "bin" / "python")
    args = ["install", "--source", "acme", "--python", python, "--dry-run", "--format", "json", *H100]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["source"] == "acme" and plan["torch"] == "2.14.1+acme128"
    assert "torch==2.14.1+acme128" in plan["argv"] and f"{ROOT}/acme128" in plan["argv"]


def test_plan_and_install_plan_and_report_carry_the_source(tmp_path) -> None:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(detect_line("h100", HASWELL, ["9.0"], "570.86.10") + detect_line("cpu", HASWELL, [], None))
    result = runner.invoke(
        app, ["plan", str(cluster), "--source", "acme", "--format", "json", "--python-version", "3.12"]
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["source"] == "acme"
    assert {node["label"]: node["torch"] for node in plan["nodes"]} == {"h100": "2.14.1+acme128", "cpu": "2.14.1+cpu"}
    (tmp_path / "plan.json").write_text(result.stdout)
    # The plan names its source: the wheels source refuses it, naming the one that made it.
    other = runner.invoke(app, ["install", "--source", "wheels", "--plan", str(tmp_path / "plan.json"), "--dry-run"])
    assert other.exit_code == 2 and "install it with --source acme" in other.stderr
    report = runner.invoke(app, ["report", "--source", "acme", "--format", "json", "--python-version", "3.12", *H100])
    assert report.exit_code == 0, report.output
    data = json.loads(report.stdout)
    assert data["source"] == "acme" and data["recommendation"]["torch"] == "2.14.1+acme128"
    assert data["described"] is True


def test_each_source_refuses_the_options_another_adds_naming_every_source_that_takes_them(tmp_path) -> None:
    """The options a source adds are the source's (its installer's): a source that does not take one refuses it in
    one line naming the sources that do, and what it installs itself; the registered source is among them."""
    python = ["--python", sys.executable]
    detect = runner.invoke(app, ["detect", "--source", "flox", "--format", "json", *python, *H100])
    assert detect.exit_code == 2 and detect.stdout == ""
    assert detect.stderr == (
        "pickvariant: --python: only with --source wheels or --source acme: --source flox installs into a Flox "
        "environment\n"
    )
    install = runner.invoke(app, ["install", "--source", "acme", "--package", "pytorch", "--dry-run", *H100])
    assert install.exit_code == 2
    assert "--package: only with --source flox: --source acme installs Acme's wheels with pip or uv" in install.stderr
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(detect_line("h100", HASWELL, ["9.0"], "570.86.10"))
    plan = runner.invoke(app, ["plan", str(cluster), "--source", "flox", "--wheel-index", ROOT])
    assert plan.exit_code == 2 and "--wheel-index: only with --source wheels or --source acme" in plan.stderr
    platform = runner.invoke(app, ["detect", "--platform", "windows-amd64", "--gpu", "6.1"])
    assert platform.exit_code == 2 and "--platform windows-amd64: only with --source wheels or --source acme" in (
        platform.stderr
    )
    requirements = runner.invoke(app, ["detect", "--format", "requirements", *H100])
    assert requirements.exit_code == 2 and "--format requirements: only with --source wheels" in requirements.stderr
    # The same options are the wheels' and the registered source's own: taken, never refused.
    taken = runner.invoke(
        app, ["detect", "--source", "acme", "--format", "requirements", "--python-version", "3.12", *H100]
    )
    assert taken.exit_code == 0 and "torch==2.14.1+acme128" in taken.stdout


def test_a_sources_catalog_holding_a_value_of_a_shape_the_rules_do_not_read_is_refused_whole_naming_it() -> None:
    """Whitelists: a source's catalog (its code may read it from a channel nobody vouches for) whose build holds a
    release that is no release, a label or an index with control characters (a line break would add a line of its
    own to `--format requirements`), a Python tag with a bidirectional character, an address with an escape, or an
    instruction set a prebuilt build never requires, is refused whole in one line naming the source (exit 1),
    nothing of it shown raw; the shipped wheel catalog fits the same shapes."""
    from pickvariant._base.records import replace
    from pickvariant.sources.plugin_values import misvalued

    good = ACME.builds[0]
    wrong = {
        "torch": replace(ACME, builds=(replace(good, torch="two.fourteen"),)),
        "label": replace(ACME, builds=(replace(good, label="2.14.1+acme128\x1b]0;owned\x07"),)),
        "python": replace(ACME, builds=(replace(good, python=("cp312\u202e",)),)),
        "index": replace(ACME, builds=(replace(good, index="acme128\n--extra-index-url=https://evil.example"),)),
        "root": replace(ACME, index_root=f"{ROOT}\x1b[2J"),
        "isa": replace(ACME, builds=(replace(good, cpu_isa="avx512"),)),
    }
    for name, catalog in wrong.items():
        registry.register(
            registry.Source(
                name=f"wrong-{name}", pipeline="prebuilt", builds=lambda c=catalog: c, publisher="Acme", nouns=WHEELS
            )
        )
        try:
            for output in ("text", "json", "requirements"):
                args = ["detect", "--source", f"wrong-{name}", "--format", output, "--python-version", "3.12", *H100]
                refused = runner.invoke(app, args)
                assert refused.exit_code == 1 and refused.stdout == "", refused.stdout
                assert refused.stderr.startswith(f"pickvariant: source plug-in 'wrong-{name}': its catalog is refused")
                assert refused.stderr.count("\n") == 1 and refused.stderr[:-1].isprintable(), refused.stderr
        finally:
            registry.unregister(f"wrong-{name}")
    assert misvalued(ACME) is None and misvalued(registry.named("wheels").catalog()) is None
