"""Issue 71: a third source of another kind than pip's enters with zero edits outside its own folder.

Forge (tests/fixtures/plugins/forge) is its own distribution: conda packages of torch on a conda channel, told apart
by build string, for conda's platforms (`linux-64`), with no local version label, installed into a conda prefix by
py-rattler. The test installs it with pip into a folder of its own, writes a real conda channel (packages indexed by
py-rattler's own indexer, served over HTTP on 127.0.0.1) and asks pickvariant `--source forge`: pickvariant finds it through the entry-point group
alone. The expected answers come from the channel's packages and the source's own table of GPU code: an H100 (9.0)
gets the cuda126 build, a GPU with no kernels there (3.5) none, a machine without a GPU the cpu build.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conda_channel import forge_channel
from conftest import REPO, cpuinfo_path
from test_plan import detect_line
from wheel_mirror import served

pytest.importorskip("rattler", reason="py-rattler (the test extras) installs Forge's packages")

FIXTURE = REPO / "tests" / "fixtures" / "plugins" / "forge"
HASWELL = str(cpuinfo_path("linux-rhel7-haswell"))
H100 = ["--cpuinfo", HASWELL, "--gpu", "9.0", "--driver", "570.86.10", "--python-version", "3.12"]
OLD_GPU = ["--cpuinfo", HASWELL, "--gpu", "3.5", "--driver", "570.86.10", "--python-version", "3.12"]
# What pip's words would be: none of them is Forge's.
PIPS = ("pip", "wheel", "--index-url", "+cuda")


@pytest.fixture(scope="module")
def forge(tmp_path_factory) -> Iterator[dict[str, str]]:
    """Forge installed by pip as a distribution (its .dist-info names its entry point), and its channel."""
    root = tmp_path_factory.mktemp("forge")
    site = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    env = {**os.environ, "HOME": str(root), "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([*pip, "--target", str(site), str(FIXTURE)], env=env, cwd=root, check=True, timeout=300)
    forge_channel(root / "served" / "channel")
    with served(root / "served") as url:
        yield {"site": str(site), "channel": f"{url}/channel", "home": str(root)}


def _run(forge: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), forge["site"]]),
        "HOME": forge["home"],
        "FORGE_CHANNEL": forge["channel"],
    }
    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args], env=env, cwd=cwd or forge["home"], capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


def _detect(forge: dict[str, str], *args: str) -> tuple[int, dict]:
    done = _run(forge, "detect", "--source", "forge", "--format", "json", *args)
    assert done.returncode in (0, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_no_module_of_pickvariant_names_it() -> None:
    # Its name as code or a sentence would name it (the verb "to forge" is not its name).
    name = re.compile(r"pickvariant_forge|FORGE_CHANNEL|\bForge\b|[\"'`]forge\b|--source forge")
    named = [
        str(path.relative_to(REPO))
        for path in (REPO / "pickvariant").rglob("*")
        if path.suffix in (".py", ".json", ".toml") and name.search(path.read_text(errors="replace"))
    ]
    assert named == [], "pickvariant names the third source: it must enter through its own folder alone"


def test_detect_answers_in_its_own_platform_pins_nouns_and_channel_in_every_format(forge) -> None:
    code, answer = _detect(forge, *H100, "--with", "torchvision")
    assert code == 0 and answer["source"] == "forge"
    chosen = answer["recommendation"]
    assert (chosen["variant"], chosen["platform"], chosen["cuda"]) == ("cuda126", "linux-64", "12.6")
    assert chosen["index_url"] == forge["channel"]  # one channel for every variant: no /cuda126 below it
    assert chosen["requirements"] == ["pytorch==2.5.1[build=cuda126_py312_*]", "torchvision==0.20.1[build=py312_*]"]
    assert "+" not in chosen["torch"] and "+" not in json.dumps(chosen["requirements"])
    assert "platform: linux/x86_64, for which Forge publishes linux-64 packages" in answer["reasons"]
    text = _run(forge, "detect", "--source", "forge", *H100, "--with", "torchvision", "--explain").stdout
    markdown = _run(forge, "detect", "--source", "forge", *H100, "--format", "markdown").stdout
    assert "(Forge's cuda126 channel)" in text and "conda install --override-channels --channel" in text
    assert "pickvariant install --source forge" in text and "# pickvariant: PyTorch package for" in markdown
    prose = [*answer["reasons"], *answer["hints"], *(f"{r['choice']}: {r['why']}" for r in answer["rejected"])]
    for said in (text, markdown, "\n".join(prose)):
        assert not [word for word in PIPS if word in said], said
    # A format only pip's sources have is refused, naming what Forge installs.
    refused = _run(forge, "detect", "--source", "forge", "--format", "requirements", *H100)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "installs Forge's packages with py-rattler" in refused.stderr


def test_its_builds_are_judged_by_the_gpus_and_a_variant_it_cannot_judge_is_left_out(forge) -> None:
    code, old = _detect(forge, *OLD_GPU)
    assert code == 3 and old["recommendation"] is None
    assert any("GPU 0 (3.5) has none" in row["why"] for row in old["rejected"])
    assert old["hints"] == ["--no-gpu: the cpu package runs here, without the GPUs"]
    code, cpu = _detect(forge, "--cpuinfo", HASWELL, "--no-gpu", "--python-version", "3.11")
    assert code == 0 and cpu["recommendation"]["variant"] == "cpu"
    assert cpu["recommendation"]["requirements"] == ["pytorch==2.5.1[build=cpu_py311_*]"]
    text = _run(forge, "detect", "--source", "forge", "--cpuinfo", HASWELL, "--no-gpu", "--explain").stdout
    assert "cuda130_py312_0" in text and "no variant Forge's table of GPU code holds" in text
    assert "cuda130" not in json.dumps([cpu["recommendation"], cpu["rejected"]])
    # An AMD GPU, which none of its builds is for: the CPU build, and the GPU said unused, in its nouns.
    code, amd = _detect(forge, "--cpuinfo", HASWELL, "--gpu", "gfx942", "--python-version", "3.12")
    assert code == 0 and amd["recommendation"]["variant"] == "cpu"
    said = " ".join(amd["reasons"])
    assert "the package catalog names no ROCm build" in said and "wheel" not in said
    # A machine stated by its platform alone: every sentence, the machine's notes too, in its words.
    code, stated = _detect(forge, "--platform", "linux-x86_64", *H100[2:])
    assert code == 0 and stated["recommendation"]["variant"] == "cuda126"
    notes = stated["notes"]
    assert any("states no CPU" in note for note in notes), notes
    prose = [*notes, *stated["reasons"], *stated["hints"], *(f"{r['choice']}: {r['why']}" for r in stated["rejected"])]
    assert not [word for word in PIPS if word in "\n".join(prose)], prose


@pytest.mark.slow
def test_install_plans_then_installs_the_chosen_packages_into_the_prefix_with_rattler(forge, tmp_path) -> None:
    prefix = tmp_path / "env"
    dry = _run(forge, "install", "--source", "forge", "--dir", str(prefix), "--dry-run", *H100, "--with", "torchvision")
    assert dry.returncode == 0, dry.stderr
    assert "pytorch==2.5.1[build=cuda126_py312_*]" in dry.stdout and "py-rattler" in dry.stdout
    assert not prefix.exists()  # a dry run runs nothing
    (tmp_path / "work").mkdir()  # a folder a person works in is never made a prefix
    (tmp_path / "work" / "notes.txt").write_text("mine\n")
    refused = _run(forge, "install", "--source", "forge", "--yes", "--no-verify", *H100, cwd=tmp_path / "work")
    assert refused.returncode == 2 and "not a conda prefix" in refused.stderr
    assert sorted(path.name for path in (tmp_path / "work").iterdir()) == ["notes.txt"]
    (prefix / "conda-meta").mkdir(parents=True)  # a prefix with a file of the user's already in it
    kept = prefix / "notes.txt"
    kept.write_text("mine\n")
    real = _run(
        forge, "install", "--source", "forge", "--dir", str(prefix), "--yes", "--no-verify", *H100, "--with",
        "torchvision",
    )  # fmt: skip
    assert real.returncode == 0, real.stderr
    installed = sorted(path.name for path in (prefix / "conda-meta").glob("*.json"))
    assert installed == ["pytorch-2.5.1-cuda126_py312_0.json", "torchvision-0.20.1-py312_0.json"]
    assert kept.read_text() == "mine\n"
    assert (prefix / "share" / "pytorch" / "cuda126_py312_0.txt").read_text() == "pytorch 2.5.1 cuda126_py312_0\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["env", "work"]  # its work beside it is gone
    # Verified, it says plainly that it could not probe this prefix (no Python in it): exit 1, never a pass.
    verify = _run(forge, "install", "--source", "forge", "--dir", str(prefix), "--yes", *H100)
    assert verify.returncode == 1 and "Verify: FAIL" in verify.stdout and "no Python in" in verify.stdout


@pytest.mark.slow
def test_plan_install_plan_report_and_the_library_answer_for_it(forge, tmp_path, monkeypatch) -> None:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(
        detect_line("h100", Path(HASWELL), ["9.0"], "570.86.10") + detect_line("cpu", Path(HASWELL), [], None)
    )
    made = _run(forge, "plan", str(cluster), "--source", "forge", "--format", "json", "--python-version", "3.12")
    assert made.returncode == 0, made.stderr
    plan = json.loads(made.stdout)
    assert plan["source"] == "forge" and plan["index_root"] == forge["channel"]
    assert {node["label"]: node["variant"] for node in plan["nodes"]} == {"h100": "cuda126", "cpu": "cpu"}
    pins = {build["variant"]: build["requirements"] for build in plan["builds"]}
    assert pins == {"cuda126": ["pytorch==2.5.1[build=cuda126_py312_*]"], "cpu": ["pytorch==2.5.1[build=cpu_py312_*]"]}
    assert {node["index_url"] for node in plan["nodes"]} == {forge["channel"]}
    text = _run(forge, "plan", str(cluster), "--source", "forge", "--python-version", "3.12").stdout
    assert "2 package build(s) for 2 node(s)" in text and "conda install" in text and "pip" not in text
    (tmp_path / "plan.json").write_text(made.stdout)
    prefix = tmp_path / "node-env"
    args = ["install", "--plan", str(tmp_path / "plan.json"), "--label", "h100", "--dir", str(prefix), "--yes"]
    node = _run(forge, *args, "--no-verify", *H100[:-2])
    assert node.returncode == 0, node.stderr
    assert (prefix / "conda-meta" / "pytorch-2.5.1-cuda126_py312_0.json").is_file()
    report = _run(forge, "report", "--source", "forge", "--format", "json", *H100)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["recommendation"]["requirements"] == ["pytorch==2.5.1[build=cuda126_py312_*]"]
    # The library, in this process: the distribution on the path, found through the entry-point group.
    monkeypatch.syspath_prepend(forge["site"])
    monkeypatch.setenv("FORGE_CHANNEL", forge["channel"])
    from pickvariant import api

    found = api.recommend(HASWELL, ["9.0"], "570.86.10", source="forge", python_version="3.12")
    assert found.to_json()["recommendation"]["requirements"] == ["pytorch==2.5.1[build=cuda126_py312_*]"]
