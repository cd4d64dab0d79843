"""A plan of PyTorch's wheels carried out on its nodes and proven (issue 52): `install --source wheels --plan` installs
each node's wheel with the real pip from a mirror on 127.0.0.1 (tests/wheel_mirror.py), after checking the node is
the hardware it was planned for and the wheel rules give it exactly that wheel; `fleet` judges the nodes' verify lines
(a real H100's, tests/data/verify-h100.json, with the torch each node's probe names)."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
from conftest import cpuinfo_path, fresh_venv
from test_plan import detect_line
from test_wheel_install import _env, _installed, _pickvariant
from wheel_mirror import build_mirror, served

ZEN4 = cpuinfo_path("linux-rocky8.5-zen4")
NODES = {
    "h100": (ZEN4, ["9.0"], "580.95.05"),
    "gtx1080": (ZEN4, ["6.1"], "580.95.05"),
    "cpu": (ZEN4, [], None),
    "mi300x": (ZEN4, ["gfx942"], None),  # an AMD GPU (issue 72): its ROCm wheel, from its rocmX.Y index
}
H100_LINE = json.loads((Path(__file__).parent / "data" / "verify-h100.json").read_text())


def _stated(label: str) -> list[str]:
    cpuinfo, gpus, driver = NODES[label]
    args = ["--cpuinfo", str(cpuinfo), *[part for cc in gpus for part in ("--gpu", cc)]]
    return args + (["--driver", driver] if driver else [] if gpus else ["--no-gpu"])


@pytest.fixture
def cluster(tmp_path: Path):
    """The cluster's plan, made against a mirror that holds every wheel it chose (and decoys)."""
    (tmp_path / "cluster.jsonl").write_text("".join(detect_line(label, *facts) for label, facts in NODES.items()))
    env = _env(tmp_path)
    first = _pickvariant(
        ["plan", str(tmp_path / "cluster.jsonl"), "--source", "wheels", "--format", "json"], env, tmp_path
    )
    assert first.returncode == 0, first.stderr
    builds = json.loads(first.stdout)["builds"]
    build_mirror(tmp_path / "mirror", {build["variant"]: [("torch", build["torch"])] for build in builds})
    with served(tmp_path / "mirror") as url:
        args = ["plan", str(tmp_path / "cluster.jsonl"), "--source", "wheels", "--format", "json", "--wheel-index", url]
        made = _pickvariant(args, env, tmp_path)
        assert made.returncode == 0, made.stderr
        (tmp_path / "plan.json").write_text(made.stdout)
        yield tmp_path / "plan.json", json.loads(made.stdout)


def _install(
    plan: Path, label: str, python: Path, tmp_path: Path, *extra: str, hardware: str | None = None
) -> subprocess.CompletedProcess[str]:
    """install --plan on a node labelled `label`, of the hardware planned for `hardware` (default: its own)."""
    args = ["install", "--source", "wheels", "--plan", str(plan), "--label", label, "--python", str(python)]
    return _pickvariant([*args, *_stated(hardware or label), "--yes", "--no-verify", *extra], _env(tmp_path), tmp_path)


def test_each_node_installs_its_own_wheel_from_the_plan(cluster, tmp_path) -> None:
    plan, document = cluster
    planned = {node["label"]: node["torch"] for node in document["nodes"]}
    # The fewest builds: the 1080 and the H100 share cu126; the CPU node and the MI300X have their own.
    assert len(set(planned.values())) == 3 and "+rocm" in planned["mi300x"]
    python = fresh_venv(tmp_path / "venv")  # one environment, taken by each node in turn
    for label, torch in planned.items():
        done = _install(plan, label, python, tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"assigned to node {label} by plan {plan}" in done.stdout
        assert _installed(python, "torch") == torch  # what the environment's own importlib.metadata says


def test_a_node_that_is_not_the_planned_hardware_or_asks_for_more_installs_nothing(cluster, tmp_path) -> None:
    plan, _ = cluster
    python = fresh_venv(tmp_path / "venv", with_pip=False)
    NODES["h100-now"] = (ZEN4, ["9.0"], "550.54.15")  # the same node, its driver downgraded since it was planned
    try:
        args = ["install", "--source", "wheels", "--plan", str(plan), "--label", "h100", "--python", str(python)]
        changed = _pickvariant([*args, *_stated("h100-now"), "--yes"], _env(tmp_path), tmp_path)
    finally:
        del NODES["h100-now"]
    assert changed.returncode == 2 and "driver 580.95.05 in the plan, 550.54.15 now" in changed.stderr
    chooser = _install(plan, "h100", python, tmp_path, "--torch", "2.13")
    assert chooser.returncode == 2 and chooser.stderr.startswith("pickvariant: --torch: --plan gives this node")
    unknown = _install(plan, "n99", python, tmp_path, hardware="cpu")
    assert unknown.returncode == 2 and "'n99': no node of that label" in unknown.stderr
    # The plan names its source: without --source, it is the plan's (not the default, Flox), --python included.
    plain = _pickvariant(
        ["install", "--plan", str(plan), "--label", "cpu", "--python", str(python), *_stated("cpu"), "--dry-run"],
        _env(tmp_path), tmp_path,
    )  # fmt: skip
    assert plain.returncode == 0 and "assigned to node cpu by plan" in plain.stdout, plain.stderr
    flox_way = _pickvariant(
        ["install", "--source", "flox", "--plan", str(plan), "--label", "cpu", *_stated("cpu"), "--yes"],
        _env(tmp_path), tmp_path,
    )  # fmt: skip
    assert flox_way.returncode == 2 and "install it with --source wheels" in flox_way.stderr
    assert _installed(python, "torch") is None


def test_a_plan_made_from_other_wheel_facts_is_refused(cluster, tmp_path) -> None:
    plan, document = cluster
    document["catalog"]["builds_sha256"] = "0" * 32
    plan.write_text(json.dumps(document))
    python = fresh_venv(tmp_path / "venv", with_pip=False)
    done = _install(plan, "cpu", python, tmp_path)
    assert done.returncode == 2 and "made from another catalog" in done.stderr and "plan again" in done.stderr
    assert _installed(python, "torch") is None


def _line(label: str, torch: str | None, **changes) -> str:
    line = copy.deepcopy(H100_LINE)
    line.update(label=label, package=None, branch=None, **changes)  # a wheel's torch is no Flox package
    line["probe"]["torch"] = torch
    return json.dumps(line, separators=(",", ":"))


def test_fleet_proves_each_wheel_node_by_the_torch_its_probe_names(cluster, tmp_path) -> None:
    plan, document = cluster
    planned = {node["label"]: node["torch"] for node in document["nodes"]}
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(_line(label, torch) for label, torch in planned.items()) + "\n")
    proven = _pickvariant(["fleet", str(plan), str(results), "--format", "json"], _env(tmp_path), tmp_path)
    assert proven.returncode == 0, proven.stdout + proven.stderr
    assert {n["label"]: n["status"] for n in json.loads(proven.stdout)["nodes"]} == dict.fromkeys(planned, "proven")

    lines = [
        _line("h100", planned["cpu"]),  # another node's wheel
        _line("gtx1080", planned["gtx1080"], passed=False, reasons=["GPU 0: no kernel image for this GPU"]),
    ]
    results.write_text("\n".join(lines) + "\n")  # and the cpu node sent nothing
    judged = _pickvariant(["fleet", str(plan), str(results), "--format", "json"], _env(tmp_path), tmp_path)
    assert judged.returncode == 1
    by_label = {n["label"]: n for n in json.loads(judged.stdout)["nodes"]}
    assert {label: n["status"] for label, n in by_label.items()} == {
        "h100": "other-build",
        "gtx1080": "failed",
        "cpu": "missing",
        "mi300x": "missing",
    }
    assert f"it probed torch {planned['cpu']}; the plan gives torch {planned['h100']}" in by_label["h100"]["why"]


@pytest.mark.parametrize(
    "root", ["http://user:secret@mirror.example/whl", "http://mirror.example/whl?x=1", "http://mirror\x1b[2J.example"]
)
def test_a_plan_whose_index_is_no_plain_url_is_refused_naming_the_plan(cluster, tmp_path, root) -> None:
    """A plan travels to every node: an index root with credentials (a plan never carries them), a query, or a
    control character is not one `plan` wrote, and is refused before anything runs."""
    plan, document = cluster
    document["index_root"] = root
    plan.write_text(json.dumps(document))
    done = _install(plan, "cpu", fresh_venv(tmp_path / "venv", with_pip=False), tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"pickvariant: plan {plan}: not a plan"), done.stderr
    assert "secret" not in done.stderr and "\x1b" not in done.stderr


def test_a_plan_made_with_no_index_named_installs_pypis_own_build_from_the_installers_index(tmp_path) -> None:
    """No --wheel-index: detect answers an H100 with PyPI's own build, so the plan does too (no index URL), and the
    node's install gets it from the index its pip is set to (PIP_INDEX_URL, a mirror standing for PyPI), pinned by
    its release as PyPI's versions carry no local label."""
    (tmp_path / "cluster.jsonl").write_text(detect_line("h100", *NODES["h100"]))
    made = _pickvariant(["plan", str(tmp_path / "cluster.jsonl"), "--source", "wheels", "--format", "json"],
                        _env(tmp_path), tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    document = json.loads(made.stdout)
    (build,) = document["builds"]
    assert document["pypi_first"] and build["index_url"] is None and document["nodes"][0]["index_url"] is None
    assert build["requirements"] == [f"torch=={build['release']}"]
    (tmp_path / "plan.json").write_text(made.stdout)
    build_mirror(tmp_path / "mirror", {"pypi": [("torch", build["release"])]})
    python = fresh_venv(tmp_path / "venv")
    with served(tmp_path / "mirror") as url:
        args = ["install", "--source", "wheels", "--plan", str(tmp_path / "plan.json"), "--label", "h100"]
        env = _env(tmp_path, PIP_INDEX_URL=f"{url}/pypi")
        done = _pickvariant([*args, "--python", str(python), *_stated("h100"), "--yes", "--no-verify"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--index-url" not in done.stdout and _installed(python, "torch") == build["release"]
