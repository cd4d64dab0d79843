"""Issue 52: one detect document for every source, checked against its one schema (pickvariant/output/detect.schema.json)
by the real jsonschema library, and its `build` record held to the facts of the machine it was chosen for.

The machines are every real CPU dump of ../shared/fixtures/cpuinfo with GPUs and drivers from the hardware facts
(a GTX 1080, a V100, an H100 on R550 and R580, an RTX 5090, a GH200's Grace with an H100, none); the sources are the
two built in and a registered one (tests/test_registered_source.py's acme). What `build` says is judged by the facts, not
by the code that wrote it: its os and arch are the machine's, its kernels run on every GPU by CUDA binary
compatibility (SASS of the same major, a minor at most the card's; PTX of a capability at most the card's), the
machine's driver is at least its floor, and it requires no CPU flag the CPU lacks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, cli_runner, cpuinfo_path
from jsonschema import Draft202012Validator

from pickvariant.cli.main import app

SCHEMA = json.loads((REPO / "pickvariant" / "output" / "detect.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
DUMPS = sorted(
    path.name for path in Path(cpuinfo_path("linux-rhel7-haswell")).parent.iterdir() if path.name.startswith("linux-")
)
# (GPU compute capabilities, driver) from the hardware facts: Pascal, Volta, Hopper on R550 and R580, Blackwell.
MACHINES = [((), None), (("6.1",), "550.54.14"), (("7.0",), "570.86.10"), (("9.0",), "550.54.14")]
MACHINES += [(("9.0",), "580.95.05"), (("12.0",), "570.86.10"), (("8.9", "6.1"), "570.86.10")]
runner = cli_runner()


def _detect(source: str, dump: str, gpus: tuple[str, ...], driver: str | None, *extra: str) -> tuple[int, dict]:
    machine = ["--cpuinfo", str(cpuinfo_path(dump))]
    machine += [word for cc in gpus for word in ("--gpu", cc)] or ["--no-gpu"]
    machine += ["--driver", driver] if driver else []
    result = runner.invoke(app, ["detect", "--source", source, "--format", "json", *machine, *extra])
    assert result.exit_code in (0, 3), result.output
    return result.exit_code, json.loads(result.stdout)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _runs_on(build: dict, capability: str) -> bool:
    """CUDA binary compatibility as facts/hardware-facts.md states it (discrete GPUs: these machines have no Tegra)."""
    major, minor = _version(capability)
    sass = any(_version(cc)[0] == major and _version(cc)[1] <= minor for cc in build["sass"])
    return sass or any(_version(cc) <= (major, minor) for cc in build["ptx"])


def _holds_to_the_facts(document: dict) -> None:
    build, hardware = document["build"], document["hardware"]
    if document["recommendation"] is None:
        assert build is None
        return
    assert build["source"] == document["source"]
    assert (build["os"], build["arch"]) == (hardware["os"], hardware["arch"])
    for gpu in hardware["gpus"]:
        assert _runs_on(build, gpu["compute_capability"]), (build, gpu)
    if hardware["gpus"] and build["cuda_min_driver"] is not None:
        assert _version(hardware["driver"]["version"]) >= _version(build["cuda_min_driver"])
    if not hardware["gpus"]:
        assert build["cuda"] is None and build["sass"] == []


@pytest.mark.parametrize("dump", DUMPS)
@pytest.mark.parametrize("source", ["flox", "wheels"])
def test_every_sources_detect_document_is_the_one_schemas_and_its_build_holds(source, dump) -> None:
    for gpus, driver in MACHINES:
        code, document = _detect(source, dump, gpus, driver)
        errors = sorted(VALIDATOR.iter_errors(document), key=str)
        assert errors == [], (dump, gpus, errors[0].message)
        assert (code == 0) is (document["build"] is not None)
        _holds_to_the_facts(document)


def test_the_flox_build_says_the_recipe_it_names_and_the_wheel_build_the_wheel() -> None:
    """Both sources on one H100 host: the same keys, each filled from its own record (the recipe's one SASS and
    instruction set, the wheel's many SASS and none)."""
    _, flox = _detect("flox", "linux-unknown-sapphirerapids", ("9.0",), "580.95.05")
    _, wheels = _detect("wheels", "linux-unknown-sapphirerapids", ("9.0",), "580.95.05")
    recipe, wheel = flox["build"], wheels["build"]
    assert recipe.keys() == wheel.keys()
    assert recipe["label"].startswith(flox["recommendation"]["package"]) and recipe["cpu_isa"] is not None
    assert recipe["sass"] == ["9.0"] and recipe["python"] == ["cp" + flox["recommendation"]["python"].replace(".", "")]
    assert wheel["label"] == wheels["recommendation"]["torch"] and wheel["cpu_isa"] is None
    assert len(wheel["sass"]) > 1 and wheel["torch"] == wheels["recommendation"]["release"]


def test_a_report_and_a_registered_sources_answer_are_the_same_document() -> None:
    """report --format json adds its own keys to the detect document; a source registered at run time (acme) writes
    the same document."""
    from test_registered_source import ACME

    from pickvariant.sources import registry
    from pickvariant.sources.nouns import WHEELS

    registry.register(
        registry.Source(name="acme", pipeline="prebuilt", builds=lambda: ACME, publisher="Acme", nouns=WHEELS)
    )
    try:
        code, document = _detect("acme", "linux-rhel7-haswell", ("9.0",), "570.86.10", "--python-version", "3.12")
    finally:
        registry.unregister("acme")
    assert code == 0 and document["build"]["label"] == "2.14.1+acme128" and not list(VALIDATOR.iter_errors(document))
    for source in ("flox", "wheels"):
        machine = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "9.0", "--driver", "580.95.05"]
        found = runner.invoke(app, ["report", "--source", source, "--format", "json", *machine])
        assert found.exit_code == 0, found.output
        report = json.loads(found.stdout)
        assert not list(VALIDATOR.iter_errors(report)) and report["source"] == source


def test_a_document_missing_its_build_or_source_is_not_the_schemas() -> None:
    """The schema refuses what a program could not read the same way for every source."""
    _, document = _detect("wheels", "linux-rhel7-haswell", ("9.0",), "580.95.05")
    for key in ("source", "build"):
        broken = {name: value for name, value in document.items() if name != key}
        assert list(VALIDATOR.iter_errors(broken))
    unknown = {**document, "build": {**document["build"], "index_url": "x"}}
    assert list(VALIDATOR.iter_errors(unknown))
