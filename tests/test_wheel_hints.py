"""Issue 52: a wheel answer's driver hint promises only what the rules then choose, as the recipe answer's hints do.

Each hint that names a driver ("a driver >= X would run torch Y", "a JetPack driver of CUDA C or newer would run
torch Y", "a driver that runs CUDA 12.x would run torch Y") is held to its word: detect with that driver chooses
torch Y, with the same pins and companions. The machines are the hardware facts' GPUs on drivers too old for them
(and a Jetson, a Windows machine), with and without companions: the expectation is the hint's own sentence, checked
by asking again, never a list written from the code.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import cli_runner, cpuinfo_path

from pickvariant.cli.main import app

runner = cli_runner()
HASWELL = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell"))]
GRACE = ["--cpuinfo", str(cpuinfo_path("linux-rhel9-neoverse_v2"))]
BY_NUMBER = re.compile(
    r"a driver (?:of branch R\d+ or older, )?>= (\S+)(?: that also drives .*)? would run torch (\S+)$"
)
BY_CUDA = re.compile(
    r"a (?:JetPack driver of CUDA|driver that runs CUDA) (\d+)\.(\d+|x)(?: or newer)? would run torch (\S+)$"
)

MACHINES = [
    [*HASWELL, "--gpu", cc, "--driver", driver]
    for cc in ("6.1", "7.0", "7.5", "8.6", "9.0", "12.0")
    for driver in ("470.57.02", "515.65.01", "565.57.01")
]
MACHINES += [[*HASWELL, "--gpu", "8.9", "--gpu", "6.1", "--driver", "470.57.02"]]
MACHINES += [[*HASWELL, "--gpu", "6.1", "--driver", "590.10"], [*HASWELL, "--gpu", "7.0", "--driver", "590.10"]]
MACHINES += [[*GRACE, "--gpu", "8.7", "--driver-cuda", cuda] for cuda in ("12.6", "13.0")]
MACHINES += [["--platform", "windows-amd64", "--gpu", "8.6", "--driver", "470.10", "--driver-cuda", "11.4"]]


def _detect(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["detect", "--source", "wheels", "--format", "json", "--python-version", "3.12", *args])
    assert result.exit_code in (0, 3), result.output
    return result.exit_code, json.loads(result.stdout)


def _with_driver(machine: list[str], driver: str | None, driver_cuda: str | None) -> list[str]:
    """The machine with its driver changed as a hint names it (its other words kept)."""
    changed, words = [], iter(machine)
    for word in words:
        if word in ("--driver", "--driver-cuda"):
            next(words)
            continue
        changed.append(word)
    changed += ["--driver", driver] if driver else []
    changed += ["--driver-cuda", driver_cuda] if driver_cuda else []
    return changed


@pytest.mark.parametrize("companions", [(), ("--with", "torchvision,torchaudio")])
def test_every_driver_hint_is_what_detect_then_chooses(companions) -> None:
    checked = 0
    for machine in MACHINES:
        code, answer = _detect(*machine, *companions)
        if code == 0:
            continue
        for hint in answer["hints"]:
            windows = "windows-amd64" in machine
            if number := BY_NUMBER.match(hint):
                floor, promised = number.groups()
                again = _with_driver(machine, floor, None)
            elif cuda := BY_CUDA.match(hint):
                major, minor, promised = cuda.groups()
                version = "0" if minor == "x" else minor
                stated = "581.80" if windows else None  # a Windows driver is judged by its CUDA version alone
                again = _with_driver(machine, stated, f"{major}.{version}")
            else:
                assert "would run torch" not in hint, hint  # every driver hint is one of the two shapes
                continue
            code, decided = _detect(*again, *companions)
            assert code == 0 and decided["recommendation"]["torch"] == promised, (machine, hint, decided["reasons"])
            checked += 1
    assert checked >= 20  # the machines give driver hints: a change that drops them fails here


def test_a_jetson_whose_driver_cuda_is_not_known_is_asked_for_it_as_the_recipe_answer_asks() -> None:
    """A Jetson stated by its driver's number alone: no driver floor can be promised (JetPack numbers its drivers
    apart); both sources say the same: state the CUDA version it reports."""
    machine = [*GRACE, "--gpu", "8.7", "--driver", "540.4.0"]
    _, wheels = _detect(*machine)
    recipes = json.loads(runner.invoke(app, ["detect", "--format", "json", *machine]).stdout)
    asked = [hint for hint in recipes["hints"] if "--driver-cuda X.Y" in hint]
    assert asked and asked[0] in wheels["hints"]
    assert not any("would run torch" in hint for hint in wheels["hints"])


@pytest.mark.parametrize("gpu", ["6.1", "9.0"])
def test_a_set_held_back_by_its_companion_says_so_and_names_torch_alone(gpu) -> None:
    """`--with torchaudio` where torchaudio's last release pairs with an older torch than runs here alone (a GTX
    1080's cu126 index): the answer never calls its torch "the newest torch with a wheel that runs here"; it says
    the set was held back and names the torch the answer without --with gives, decided again."""
    machine = [*HASWELL, "--gpu", gpu, "--driver", "580.95.05"]

    def answer(*extra: str) -> dict:
        result = runner.invoke(app, ["detect", "--source", "wheels", "--format", "json", *machine, *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    alone, with_audio = answer(), answer("--with", "torchaudio")
    held = [reason for reason in with_audio["reasons"] if reason.startswith("held back by --with")]
    if alone["recommendation"]["torch"] == with_audio["recommendation"]["torch"]:
        assert held == []  # nothing held it back: nothing to say
        return
    (sentence,) = held
    assert f"without --with torchaudio, torch {alone['recommendation']['torch']} is the answer" in sentence
    assert not any("the newest torch with a wheel that runs here" in reason for reason in with_audio["reasons"])


def test_windows_rows_are_judged_by_the_same_standard_of_evidence_as_linux_rows() -> None:
    """Every Windows row the facts grade documented or verified (D, V) is judged, as a Linux row of that grade is:
    a Windows GTX 1080 (sm_61, which only Windows' cu126 builds carry) gets the newest such release, never an older
    one. Issue 70: 2.13 and 2.14's Windows cu126 rows cite the release matrix as 2.12's does, and were left out."""
    from pickvariant.sources.wheels.catalog.facts import FACTS, read_facts

    graded = [
        release["torch"]
        for release in read_facts(FACTS)["releases"]
        for row in release["builds"]
        if row["platform"] == "windows-amd64" and row["variant"] == "cu126" and row["sass_confidence"] in ("D", "V")
        and "6.1" in (row["sass"] or [])
    ]  # fmt: skip
    from packaging.version import Version

    newest = max(graded, key=Version)
    result = runner.invoke(
        app, ["detect", "--source", "wheels", "--format", "json", "--platform", "windows-amd64", "--gpu", "6.1",
              "--driver", "580.88"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["recommendation"]["release"] == newest


def test_a_sets_python_is_one_every_member_has_a_wheel_for() -> None:
    """torch 2.15.0 has cp315 wheels; torchaudio 2.11.0, paired with it on PyPI, was built with torch 2.11.0 and has
    only that release's Pythons (the facts' A2). With no Python stated, the set is shown for a Python both have;
    with Python 3.15 stated, torchaudio has no wheel for it, so no cp315 set is answered, while torch alone is."""
    from pickvariant.sources.wheels.catalog.facts import FACTS, read_facts

    releases = {release["torch"]: release for release in read_facts(FACTS)["releases"]}
    audio_pythons = set(releases["2.11.0"]["python"])
    assert "cp315" in releases["2.15.0"]["python"] and "cp315" not in audio_pythons
    machine = [*HASWELL, "--gpu", "9.0", "--driver", "580.95.05"]

    def answer(*extra: str) -> tuple[int, dict]:
        result = runner.invoke(app, ["detect", "--source", "wheels", "--format", "json", *machine, *extra])
        assert result.exit_code in (0, 3), result.output
        return result.exit_code, json.loads(result.stdout)

    _, shown = answer("--with", "torchaudio")
    assert shown["recommendation"]["release"] == "2.15.0" and shown["recommendation"]["python_tag"] in audio_pythons
    alone_code, alone = answer("--python-version", "3.15")
    assert alone_code == 0 and alone["recommendation"]["release"] == "2.15.0"
    code, stated = answer("--python-version", "3.15", "--with", "torchaudio")
    assert code == 3 or stated["recommendation"]["python_tag"] != "cp315"
    # Said as what it is: torchaudio is paired with torch 2.15.0, and has no wheel for that Python.
    assert any("torchaudio 2.11.0, paired with torch 2.15.0, has no wheel for cp315" in r for r in stated["reasons"])
    # Nowhere (the nearest wheel, each index and release refused) said as a pairing that was never published.
    said = json.dumps([stated["reasons"], stated["rejected"]])
    assert "published no release paired" not in said and "paired with torch 2.15.0 has no wheel for cp315" in said


@pytest.mark.parametrize("gpu", ["6.1", "8.9"])
def test_a_driver_stated_by_its_cuda_version_alone_is_raised_by_one_search_for_both_sources(gpu) -> None:
    """A Linux driver stated by the CUDA version it reports (11.8), too old for every build: both sources raise it
    through the one driver-upgrade search (rules/upgrades.py), so their smallest hints name the same driver, and that
    driver, stated, gives what each hint names."""
    machine = [*HASWELL, "--gpu", gpu, "--driver-cuda", "11.8"]

    def recipes(*args: str) -> dict:
        return json.loads(runner.invoke(app, ["detect", "--format", "json", *args]).stdout)

    _, wheels = _detect(*machine)
    wheel_floor, torch = next(found.groups() for hint in wheels["hints"] if (found := BY_NUMBER.match(hint)))
    recipe_hint = re.compile(r"a driver >= (\S+) \(.*?\) would allow (\S+)")
    recipe_floor, package = next(found.groups() for h in recipes(*machine)["hints"] if (found := recipe_hint.match(h)))
    assert wheel_floor == recipe_floor
    code, again = _detect(*_with_driver(machine, wheel_floor, None))
    assert code == 0 and again["recommendation"]["torch"] == torch
    assert recipes(*_with_driver(machine, recipe_floor, None))["recommendation"]["package"] == package
