"""`plan --source wheels`: a cluster's fewest PyTorch wheel builds, each node's own answer the one
`detect --source wheels` gives it; expected answers worked out from the shipped wheel catalog."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from conftest import cli_runner, cpuinfo_path
from packaging.version import Version
from test_plan import detect_line

from pickvariant.cli.main import app
from pickvariant.sources.wheels.catalog.load import load_wheel_catalog

runner = cli_runner()
HASWELL = cpuinfo_path("linux-rhel7-haswell")
GRACE = cpuinfo_path("linux-rhel9-neoverse_v2")
WHEELS = load_wheel_catalog()

CLUSTER = {
    "gtx1080": (HASWELL, ["6.1"], "580.95.05"),
    "h100-r580": (HASWELL, ["9.0"], "580.95.05"),
    "h100-r550": (HASWELL, ["9.0"], "550.54.15"),
    "kepler": (HASWELL, ["3.5"], "470.256.02"),
    "cpu": (HASWELL, [], None),
}


def _cluster(tmp_path: Path, hosts: dict = CLUSTER) -> Path:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text("".join(detect_line(label, *facts) for label, facts in hosts.items()))
    return cluster


def _plan(cluster: Path, *options: str) -> dict:
    result = runner.invoke(app, ["plan", str(cluster), "--source", "wheels", "--format", "json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _own_answer(label: str) -> str | None:
    cpuinfo, gpus, driver = CLUSTER[label]
    args = ["detect", "--source", "wheels", "--format", "json", "--cpuinfo", str(cpuinfo)]
    args += [part for cc in gpus for part in ("--gpu", cc)] or ["--no-gpu"]
    args += ["--driver", driver] if driver else []
    found = json.loads(runner.invoke(app, args).stdout)["recommendation"]
    return found["torch"] if found else None


def test_every_node_is_served_by_the_fewest_wheel_builds_and_a_node_given_less_says_what_it_loses(tmp_path) -> None:
    plan = _plan(_cluster(tmp_path))
    nodes = {node["label"]: node for node in plan["nodes"]}
    # The GTX 1080 runs only cu126, and cu126 also runs on both H100s: one CUDA build serves the three.
    cu126 = max(
        (b for b in WHEELS.builds if b.index == "cu126" and b.platform == "linux-x86_64"),
        key=lambda b: Version(b.torch),
    )
    assert {nodes[label]["torch"] for label in ("gtx1080", "h100-r580", "h100-r550")} == {cu126.label}
    assert nodes["cpu"]["variant"] == "cpu" and len(plan["builds"]) == 2
    # A node whose own answer is another wheel is told what it loses; one given its own answer is not.
    for label in ("gtx1080", "h100-r580", "h100-r550", "cpu"):
        own = _own_answer(label)
        assert (nodes[label]["rank"] == 1) == (own == nodes[label]["torch"]), label
        assert (nodes[label]["why"] is None) == (own == nodes[label]["torch"]), label
    assert "CUDA 12.6 instead of" in nodes["h100-r580"]["why"]
    # No wheel has kernels for Kepler: the node is unserved, with detect's own last word on it.
    assert nodes["kepler"]["torch"] is None and "no wheel runs here" in nodes["kepler"]["why"]
    served = {b["torch"]: b for b in plan["builds"]}
    assert served[cu126.label]["nodes"] == 3 and served[cu126.label]["index_url"].endswith("/cu126")


def test_the_text_plan_prints_the_command_each_node_runs_quoted_for_the_shell(tmp_path) -> None:
    result = runner.invoke(app, ["plan", str(_cluster(tmp_path)), "--source", "wheels"])
    assert result.exit_code == 0, result.output
    commands = [line.split("each of them runs: ", 1)[1] for line in result.stdout.splitlines() if "runs: " in line]
    plan = _plan(_cluster(tmp_path))
    assert [shlex.split(command) for command in commands] == [
        ["python3", "-m", "pip", "install", *b["requirements"], "--index-url", b["index_url"]] for b in plan["builds"]
    ]


def test_a_limit_of_one_build_serves_the_most_nodes_and_names_who_gets_nothing(tmp_path) -> None:
    plan = _plan(_cluster(tmp_path), "--max-variants", "1")
    assert len(plan["builds"]) == 1 and plan["builds"][0]["variant"] == "cu126"
    cpu = next(node for node in plan["nodes"] if node["label"] == "cpu")
    assert cpu["torch"] is None and "none of the 1 chosen" in cpu["why"]


def test_companions_move_the_plan_to_a_release_that_pairs_them_and_mixed_platforms_get_their_own(tmp_path) -> None:
    hosts = {"h100": (HASWELL, ["9.0"], "580.95.05"), "gh200": (GRACE, ["9.0"], "580.95.05")}
    plan = _plan(_cluster(tmp_path, hosts), "--with", "torchaudio")
    assert {b["platform"] for b in plan["builds"]} == {"linux-x86_64", "linux-aarch64"}
    for build in plan["builds"]:
        audio = WHEELS.companion(build["release"], "torchaudio")
        assert audio is not None and build["companions"] == [{"project": "torchaudio", "version": audio.version}]
        pin = build["release"] if build["index_url"] is None else build["torch"]  # PyPI's own: no local label
        assert build["requirements"] == [f"torch=={pin}", f"torchaudio=={audio.version}"]


def test_a_wheel_option_without_the_wheels_source_is_bad_input(tmp_path) -> None:
    result = runner.invoke(app, ["plan", str(_cluster(tmp_path)), "--wheel-index", "https://mirror.example/whl"])
    assert result.exit_code == 2 and "--wheel-index" in result.stderr


def test_a_mirror_root_is_where_every_node_installs_from(tmp_path) -> None:
    plan = _plan(_cluster(tmp_path), "--wheel-index", "https://mirror.example/whl/")
    assert all(b["index_url"].startswith("https://mirror.example/whl/") for b in plan["builds"])


def test_one_schema_reads_every_sources_plan_and_holds_each_to_its_own_shape(tmp_path) -> None:
    """Issue 52: `install --plan` and `fleet` read every source's plan against one schema (cluster-plan.schema.json).
    A plan is held to the shape its source names: a wheel plan relabelled as the recipes' lacks their fields, a
    recipes' plan relabelled as a wheel plan lacks its index root; fastjsonschema and jsonschema (the reference)
    agree on each."""
    from pickvariant._base.errors import BadInput
    from pickvariant._base.schema import _compiled, _validator, load_schema
    from pickvariant.commands.plan_install import read_plan
    from pickvariant.rules.plan_document import SCHEMA

    cluster = _cluster(tmp_path)
    wheels = _plan(cluster)
    recipes_run = runner.invoke(app, ["plan", str(cluster), "--format", "json"])
    assert recipes_run.exit_code == 0, recipes_run.output
    recipes = json.loads(recipes_run.stdout)
    schema = load_schema(SCHEMA)
    relabelled = (
        {**wheels, "source": "flox"},
        {**recipes, "source": "wheels"},
        {k: v for k, v in wheels.items() if k != "source"},
    )
    for document, valid in ((wheels, True), (recipes, True), *((bad, False) for bad in relabelled)):
        assert _compiled(schema)(document) is valid and _validator(schema).is_valid(document) is valid

    def read(document: dict[str, object]) -> object:
        path = tmp_path / "read.json"
        path.write_text(json.dumps(document))
        return read_plan(str(path))

    assert read(wheels).source == "wheels" and read(recipes).source == "flox"
    for document, named in zip(relabelled, ("nodes[0].branch", "index_root", "nodes[0].branch"), strict=True):
        try:
            read(document)
        except BadInput as error:
            assert f"({named}: required field is missing)" in str(error), str(error)
        else:
            raise AssertionError("a plan in another source's shape was read")


def test_a_plan_of_a_source_not_here_is_refused_in_one_line_naming_the_plan_and_its_source(tmp_path) -> None:
    """A plan is read in the shape its source's plug-in declares: a plan naming a source this machine lacks (a
    plug-in not installed here) is refused by fleet and install --plan alike, in one line naming the file and the
    source, exit 2; its nodes are never read as another source's."""
    plan = {**_plan(_cluster(tmp_path)), "source": "acme"}
    path = tmp_path / "acme-plan.json"
    path.write_text(json.dumps(plan))
    results = tmp_path / "results"
    results.mkdir()
    for args in (["fleet", str(path), str(results)], ["install", "--plan", str(path), "--label", "cpu", "--dry-run"]):
        found = runner.invoke(app, args)
        assert found.exit_code == 2, found.output
        lines = found.stderr.strip().splitlines()
        assert len(lines) == 1 and f"plan {path}: source 'acme'" in lines[0], found.stderr
        assert "flox" in lines[0] and "wheels" in lines[0]  # the sources that are here


def test_a_plan_gives_each_node_what_detect_gives_it_index_and_companions_included(tmp_path) -> None:
    """With no index named, detect answers an H100 and a GH200 with PyPI's own build (no index URL), and with
    --with torchvision,torchaudio it pairs torchaudio 2.11.0 only with PyPI's own builds: each node's plan entry is
    that same build from that same place with those same companions, never the cu132 index's pairing detect
    refuses."""
    hosts = {"h100": (HASWELL, ["9.0"], "580.95.05"), "gh200": (GRACE, ["9.0"], "580.95.05")}
    for companions in ([], ["--with", "torchvision,torchaudio"]):
        plan = _plan(_cluster(tmp_path, hosts), *companions)
        for label, (cpu, gpus, driver) in hosts.items():
            args = [
                "detect",
                "--source",
                "wheels",
                "--format",
                "json",
                "--cpuinfo",
                str(cpu),
                "--driver",
                driver,
                *companions,
            ]
            detected = runner.invoke(app, [*args, *(word for gpu in gpus for word in ("--gpu", gpu))])
            assert detected.exit_code == 0, detected.output
            answer = json.loads(detected.stdout)["recommendation"]
            node = next(node for node in plan["nodes"] if node["label"] == label)
            build = next(b for b in plan["builds"] if b["torch"] == node["torch"] and b["platform"] == node["platform"])
            assert (node["torch"], node["index_url"]) == (answer["torch"], answer["index_url"]), (label, companions)
            assert build["requirements"] == answer["requirements"], (label, companions)


def test_a_node_with_an_amd_gpu_is_never_planned_as_one_with_no_gpu(tmp_path) -> None:
    """An MI300X node (gfx942, as its detect line says) beside an H100: the plan names its GPU in what each build
    covers, never "no GPU", whichever build it gets."""
    hosts = {"mi300x": (HASWELL, ["gfx942"], None), "h100": (HASWELL, ["9.0"], "580.95.05")}
    result = runner.invoke(app, ["plan", str(_cluster(tmp_path, hosts)), "--source", "wheels"])
    assert result.exit_code == 0, result.output
    covers = [line for line in result.stdout.splitlines() if "covers" in line]
    assert any("gfx942" in line for line in covers) and not any("no GPU" in line for line in covers), covers
