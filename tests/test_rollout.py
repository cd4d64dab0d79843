"""From a cluster's plan to every node installed and proven: `install --plan`, `verify --compact --label`, the real
`ansible-playbook` running examples/rollout.yml over local inventory hosts (each with its own stated hardware and the
Flox stand-in, tests/flox_standin.py), pdsh and clush with exec workers, and `fleet` reading the lines back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import cli_runner, cpuinfo_path, require
from test_plan import detect_line

from pickvariant.cli.main import app

runner = cli_runner()
HASWELL = cpuinfo_path("linux-rhel7-haswell")
SAPPHIRE_RAPIDS = cpuinfo_path("linux-unknown-sapphirerapids")
PLAYBOOK = Path(__file__).resolve().parent.parent / "examples" / "rollout.yml"
BIN = Path(sys.executable).parent

# label: (CPU dump, GPUs, driver) as gathered for the plan
HOSTS = {
    "cpu-haswell": (HASWELL, [], None),
    "cpu-spr": (SAPPHIRE_RAPIDS, [], None),  # its own detect picks avx512; the plan gives it the avx2 build
    "gpu-a100": (HASWELL, ["8.0"], "580.95.05"),  # the CPU torch here has no CUDA: its verify fails
    "cpu-changed": (HASWELL, [], None),  # gains a GPU after the plan: refused
}
# What each host states at rollout time: cpu-changed is no longer the machine it was planned as.
AT_ROLLOUT = {**HOSTS, "cpu-changed": (HASWELL, ["9.0"], "580.95.05")}


def _plan(tmp_path: Path) -> tuple[Path, dict]:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text("".join(detect_line(label, *facts) for label, facts in HOSTS.items()))
    result = runner.invoke(app, ["plan", str(cluster), "--format", "json"])
    assert result.exit_code == 0, result.output
    (tmp_path / "plan.json").write_text(result.stdout)
    return tmp_path / "plan.json", json.loads(result.stdout)


def _host_env(tmp_path: Path, label: str, facts: tuple) -> dict[str, str]:
    cpuinfo, gpus, driver = facts
    return {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}",
        "PICKVARIANT_CPUINFO": str(cpuinfo),
        "PICKVARIANT_GPU": ",".join(gpus) or "none",
        "PICKVARIANT_DRIVER": driver or "",
        "XDG_CACHE_HOME": str(tmp_path / "hosts" / label / "cache"),  # each host remembers its own last install
        # The hosts share this machine's CPU but state others (a Sapphire Rapids among them): torch is asked for the
        # AVX2 kernels every x86_64 test machine runs, and verify reads that as the environment's choice, so the
        # verdicts are the same on a CPU with AVX-512 and on one without.
        "ATEN_CPU_CAPABILITY": "avx2",
        **{name: os.environ[name] for name in os.environ if name.startswith("FAKE_FLOX_")},
    }


def _own_detect(facts: tuple) -> str:
    cpuinfo, gpus, driver = facts
    args = ["detect", "--format", "json", "--cpuinfo", str(cpuinfo)]
    args += [part for cc in gpus for part in ("--gpu", cc)] or ["--no-gpu"]
    args += ["--driver", driver] if driver else []
    return json.loads(runner.invoke(app, args).stdout)["recommendation"]["package"]


def _installed(directory: Path) -> set[str]:
    manifest = tomllib.loads((directory / ".flox/env/manifest.toml").read_text())
    return {entry["pkg-path"] for entry in manifest["install"].values() if "/" in entry.get("pkg-path", "")}


def test_install_plan_installs_the_assignment_even_where_the_node_would_pick_another(tmp_path, fake_flox) -> None:
    plan_path, plan = _plan(tmp_path)
    assigned = {node["label"]: node for node in plan["nodes"]}["cpu-spr"]
    assert _own_detect(HOSTS["cpu-spr"]) != assigned["package"]  # the fewest builds: avx2 serves both CPU nodes
    env = _host_env(tmp_path, "cpu-spr", HOSTS["cpu-spr"])
    args = ["install", "--plan", str(plan_path), "--label", "cpu-spr", "--org", "acme", "--dir", str(tmp_path / "e")]
    result = runner.invoke(app, [*args, "--yes", "--no-verify"], env=env)
    assert result.exit_code == 0, result.output
    assert _installed(tmp_path / "e") == {f"acme/{assigned['package']}"}
    assert f"assigned to node cpu-spr by plan {plan_path}" in result.stdout
    # A real install with --format json: its progress on stderr, one line on stdout saying what it installed.
    again = runner.invoke(app, [*args, "--yes", "--no-verify", "--format", "json"], env=env)
    assert again.exit_code == 0 and again.stdout.count("\n") == 1, again.output
    line = json.loads(again.stdout)
    assert line["installed"] and line["variant"]["package"] == assigned["package"] and line["verdict"] is None


@pytest.mark.parametrize(
    ("label", "facts", "code", "said"),
    [
        ("cpu-changed", AT_ROLLOUT["cpu-changed"], 2, "GPU compute capabilities none in the plan, 9.0 now"),
        ("nobody", HOSTS["cpu-haswell"], 2, "--label 'nobody': no node of that label in plan"),
        ("bad\x1blabel", HOSTS["cpu-haswell"], 2, "--label: it holds a control character"),
    ],
)
def test_a_node_that_is_not_the_one_planned_is_refused_and_nothing_runs(
    tmp_path, fake_flox, label, facts, code, said
) -> None:
    plan_path, _ = _plan(tmp_path)
    env = _host_env(tmp_path, "x", facts)
    result = runner.invoke(
        app, ["install", "--plan", str(plan_path), "--label", label, "--org", "acme", "--yes"], env=env
    )
    assert result.exit_code == code and said in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and fake_flox() == []


def test_a_node_the_plan_leaves_unserved_exits_3_with_the_plans_why(tmp_path, fake_flox) -> None:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(detect_line("kepler", HASWELL, ["3.5"], "470.256.02"))
    plan = runner.invoke(app, ["plan", str(cluster), "--format", "json"]).stdout
    (tmp_path / "plan.json").write_text(plan)
    env = _host_env(tmp_path, "kepler", (HASWELL, ["3.5"], "470.256.02"))
    result = runner.invoke(app, ["install", "--plan", "plan.json", "--label", "kepler", "--org", "acme"], env=env)
    assert result.exit_code == 3 and json.loads(plan)["nodes"][0]["why"] in result.stderr


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda p: {**p, "catalog": {**p["catalog"], "commit": "0" * 40}}, "was made from another catalog"),
        # The same repository and commit, synced with other variants (another --upstream, --trust-recipes): refused.
        (lambda p: {**p, "catalog": {**p["catalog"], "variants_sha256": "0" * 32}}, "was made from another catalog"),
        (lambda p: {**p, "catalog": {**p["catalog"], "repo": "https://ci:s3cret@git.example/x"}}, "another catalog"),
        (lambda p: {**p, "nodes": [{**p["nodes"][0], "package": "$(reboot)"}]}, "not a plan"),
        (lambda p: {**p, "nodes": [{**p["nodes"][0], "label": "a\nb"}]}, "not a plan"),
        (lambda p: {**p, "nodes": [{**p["nodes"][0], "package": "pytorch-python313-cpu-avx9"}]}, "not a package"),
        (lambda p: {**p, "nodes": [{**p["nodes"][0], "profile": 999}]}, "names profile 999"),
        (lambda p: [p], "not a plan"),
    ],
)
def test_a_hostile_or_foreign_plan_is_one_line_naming_it_and_nothing_runs(tmp_path, fake_flox, edit, said) -> None:
    plan_path, plan = _plan(tmp_path)
    plan_path.write_text(json.dumps(edit(plan)))
    env = _host_env(tmp_path, "cpu-haswell", HOSTS["cpu-haswell"])
    label = plan["nodes"][0]["label"]
    result = runner.invoke(app, ["install", "--plan", str(plan_path), "--label", label, "--org", "acme"], env=env)
    assert result.exit_code == 2 and said in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and fake_flox() == [] and "s3cret" not in result.stderr


def test_a_plan_edited_to_a_build_this_node_cannot_run_never_suggests_an_option_install_plan_refuses(
    tmp_path, fake_flox
) -> None:
    """An AVX2 node's assignment edited to the avx512 build of the same branch: refused with what to do (plan again),
    not with --force, which --plan refuses (issue 51)."""
    plan_path, plan = _plan(tmp_path)
    nodes = [{**node, "package": node["package"].replace("-avx2", "-avx512")} for node in plan["nodes"]]
    haswell = next(node for node in nodes if node["label"] == "cpu-haswell")
    assert haswell["package"].endswith("-avx512")
    plan_path.write_text(json.dumps({**plan, "nodes": nodes}))
    env = _host_env(tmp_path, "cpu-haswell", HOSTS["cpu-haswell"])
    args = ["install", "--plan", str(plan_path), "--label", "cpu-haswell", "--org", "acme", "--yes"]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 2, result.output
    assert "does not fit this machine" in result.stderr and "plan again" in result.stderr
    assert "--force" not in result.stderr and fake_flox() == []


def test_a_plan_file_that_never_ends_is_refused_bounded(tmp_path, fake_flox) -> None:
    result = runner.invoke(app, ["install", "--plan", "/dev/zero", "--label", "n", "--org", "acme"])
    assert result.exit_code == 2 and "plan" in result.stderr and fake_flox() == []


def test_a_plan_of_thirty_megabytes_is_refused_before_it_is_parsed(tmp_path, fake_flox) -> None:
    """Parsed, a 30 MB plan took 885 MB (a 120 MB one a MemoryError): it is refused by its size, one line (issue 51)."""
    plan_path, plan = _plan(tmp_path)
    padded = {**plan, "nodes": plan["nodes"] * (30 * 1024 * 1024 // len(json.dumps(plan["nodes"])) + 1)}
    plan_path.write_text(json.dumps(padded))
    assert plan_path.stat().st_size > 30 * 1024 * 1024
    args = ["install", "--plan", str(plan_path), "--label", "cpu-haswell", "--org", "acme", "--yes"]
    result = runner.invoke(app, args, env=_host_env(tmp_path, "cpu-haswell", HOSTS["cpu-haswell"]))
    assert result.exit_code == 2 and "is larger than 24 MiB" in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and fake_flox() == []


def _rollout(tmp_path: Path, plan_path: Path, extra: list[str] = ()) -> subprocess.CompletedProcess:
    playbook = shutil.which("ansible-playbook", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    require(playbook is not None, "ansible-playbook is not installed (pip install ansible-core)")
    inventory = ["[cluster]"]
    for label, facts in AT_ROLLOUT.items():
        env = json.dumps(_host_env(tmp_path, label, facts))
        inventory.append(
            f"{label} ansible_connection=local ansible_python_interpreter={sys.executable} "
            f"pickvariant_dir={tmp_path / 'hosts' / label / 'env'} pickvariant_env='{env}'"
        )
    (tmp_path / "hosts.ini").write_text("\n".join(inventory) + "\n")
    env = dict(
        os.environ,
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="False",
        TMPDIR=str(tmp_path),
    )
    argv = [playbook, "-i", str(tmp_path / "hosts.ini"), str(PLAYBOOK), "-e", f"plan={plan_path}", "-e", "org=acme"]
    argv += ["-e", f"results_dir={tmp_path / 'results'}", "-e", '{"verify_args": ["--quick"]}', *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=540)


def test_a_real_ansible_rollout_installs_every_assignment_and_fleet_names_each_failure(tmp_path, fake_flox) -> None:
    require(fake_flox.site_packages is not None, "torch is not installed (the probe runs a real CPU torch)")
    plan_path, plan = _plan(tmp_path)
    done = _rollout(tmp_path, plan_path, ["-e", "batch=2"])
    (tmp_path / "ansible.log").write_text(done.stdout)  # kept with the run's folder (pytest --basetemp), for reading
    log = done.stdout[-4000:] + done.stderr[-2000:]
    # Two hosts fail (one refused, one whose verify fails); every other host still ran, and the failed are named.
    assert done.returncode != 0, log
    assert "cpu-changed: install exited 2" in done.stdout and "gpu-a100: verify exited 1" in done.stdout, log
    assigned = {node["label"]: node["package"] for node in plan["nodes"]}
    for label in ("cpu-haswell", "cpu-spr", "gpu-a100"):
        assert _installed(tmp_path / "hosts" / label / "env") == {f"acme/{assigned[label]}"}, label
    assert not (tmp_path / "hosts" / "cpu-changed" / "env").exists()
    assert sorted(p.stem for p in (tmp_path / "results").iterdir()) == ["cpu-haswell", "cpu-spr", "gpu-a100"]
    line = json.loads((tmp_path / "results" / "cpu-spr.json").read_text())
    assert (line["label"], line["package"]) == ("cpu-spr", assigned["cpu-spr"])

    verdict = runner.invoke(app, ["fleet", str(plan_path), str(tmp_path / "results"), "--format", "json"])
    assert verdict.exit_code == 1, verdict.output
    status = {node["label"]: node for node in json.loads(verdict.stdout)["nodes"]}
    assert {label: node["status"] for label, node in status.items()} == {
        "cpu-haswell": "proven",
        "cpu-spr": "proven",
        "gpu-a100": "failed",
        "cpu-changed": "missing",
    }
    assert "cannot use CUDA" in status["gpu-a100"]["why"]


@pytest.mark.parametrize("tool", ["pdsh", "clush"])
def test_pdsh_and_clush_roll_out_with_exec_workers_and_fleet_reads_their_lines(tool, tmp_path, fake_flox) -> None:
    """The how-to's one-liner: each node installs its assignment and prints its verify line; the tool gathers them."""
    require(fake_flox.site_packages is not None, "torch is not installed (the probe runs a real CPU torch)")
    search = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    binary = shutil.which(tool, path=search)
    require(
        binary is not None,
        f"{tool} is not installed ({'apt-get install pdsh' if tool == 'pdsh' else 'pip install ClusterShell'})",
    )
    hosts = {"cpu-haswell": HOSTS["cpu-haswell"], "cpu-spr": HOSTS["cpu-spr"]}
    plan_path, _ = _plan(tmp_path)
    for label, facts in hosts.items():
        exports = " ".join(f"{k}={json.dumps(v)}" for k, v in _host_env(tmp_path, label, facts).items())
        (tmp_path / f"{label}.env").write_text(f"export {exports}\n")
    step = (
        f". {tmp_path}/%h.env && pickvariant install --plan {plan_path} --label %h --org acme --yes --no-verify "
        f"--dir {tmp_path}/hosts/%h/env >{tmp_path}/%h.log 2>&1 && pickvariant verify --quick --format json --compact --label %h"
    )
    nodes = "cpu-haswell,cpu-spr"
    argv = [binary, "-R", "exec", "-w", nodes, "-N", *(["sh", "-c", step] if tool == "pdsh" else [step])]
    gathered = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=dict(os.environ, PATH=search)
    )
    (tmp_path / "results.jsonl").write_text(gathered.stdout)
    verdict = runner.invoke(app, ["fleet", str(plan_path), str(tmp_path / "results.jsonl"), "--format", "json"])
    status = {node["label"]: node["status"] for node in json.loads(verdict.stdout)["nodes"]}
    logs = "".join((tmp_path / f"{label}.log").read_text() for label in hosts)
    assert status["cpu-haswell"] == status["cpu-spr"] == "proven", gathered.stdout + gathered.stderr + logs


def test_a_plan_of_sets_installs_the_set_the_plan_made_and_refuses_one_edited_to_another(tmp_path, fake_flox) -> None:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(detect_line("c1", HASWELL, [], None))
    plan = json.loads(runner.invoke(app, ["plan", str(cluster), "--with", "torchvision", "--format", "json"]).stdout)
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    planned = [c["package"] for c in plan["variants"][0]["companions"]]
    env = _host_env(tmp_path, "c1", HOSTS["cpu-haswell"])
    args = ["install", "--plan", "plan.json", "--label", "c1", "--org", "acme", "--dry-run", "--format", "json"]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["companions"] == planned
    plan["variants"][0]["companions"][0]["package"] = "torchvision-python313-cpu-avx"
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    edited = runner.invoke(app, args, env=env)
    assert edited.exit_code == 2 and "is not one this catalog makes" in edited.stderr


@pytest.mark.parametrize(
    ("extra", "variable", "named"),
    [(["--torch", "2.9"], None, "--torch"), (["--force"], None, "--force"), ([], "torchvision", "PICKVARIANT_WITH")],
)
def test_nothing_that_chooses_another_build_is_taken_beside_a_plan(tmp_path, fake_flox, extra, variable, named) -> None:
    plan_path, _ = _plan(tmp_path)
    env = _host_env(tmp_path, "cpu-haswell", HOSTS["cpu-haswell"]) | (
        {"PICKVARIANT_WITH": variable} if variable else {}
    )
    args = ["install", "--plan", str(plan_path), "--label", "cpu-haswell", "--org", "acme", "--yes", *extra]
    result = runner.invoke(app, args, env=env)
    assert (
        result.exit_code == 2 and result.stderr.startswith(f"pickvariant: {named}: --plan gives") and fake_flox() == []
    )
