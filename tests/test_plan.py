"""`pickvariant plan`: gathering lines with `detect --compact --label`, the exact solver against brute
force, mixed clusters derived from the facts, and a real Ansible run gathering several hosts."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import cli_runner, cpuinfo_path, generated, require
from hypothesis import given
from hypothesis import strategies as st

from pickvariant._base.request import Request
from pickvariant.cli.main import app
from pickvariant.machine.facts_json import facts_from_json
from pickvariant.rules import cluster_input
from pickvariant.rules import fewest_builds as planner
from pickvariant.rules.compat import why_not
from pickvariant.rules.decide import decide

runner = cli_runner()
CASCADE_LAKE = cpuinfo_path("linux-centos7-cascadelake")  # AVX-512 with VNNI, no BF16
ICE_LAKE_GUEST = cpuinfo_path("linux-azure-icelake-8370c")  # AVX-512 whose hypervisor hides VNNI
SAPPHIRE_RAPIDS = cpuinfo_path("linux-unknown-sapphirerapids")
HASWELL = cpuinfo_path("linux-rhel7-haswell")
GRACE = cpuinfo_path("linux-rhel9-neoverse_v2")


def detect_line(label: str, cpuinfo: Path, gpus: list[str], driver: str | None) -> str:
    args = ["detect", "--format", "json", "--compact", "--label", label, "--cpuinfo", str(cpuinfo)]
    args += [part for cc in gpus for part in ("--gpu", cc)] or ["--no-gpu"]
    args += ["--driver", driver] if driver else []
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 3), result.output
    assert result.stdout.count("\n") == 1
    return result.stdout


def run_plan(tmp_path: Path, lines: list[str], *options: str) -> dict:
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text("".join(lines))
    result = runner.invoke(app, ["plan", str(cluster), "--format", "json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_detect_compact_is_the_same_object_on_one_line_with_the_label(monkeypatch) -> None:
    pretty = runner.invoke(app, ["detect", "--format", "json", "--cpuinfo", str(HASWELL), "--no-gpu"]).stdout
    monkeypatch.setenv("PICKVARIANT_LABEL", "rack3-node07")
    compact = runner.invoke(
        app, ["detect", "--format", "json", "--compact", "--cpuinfo", str(HASWELL), "--no-gpu"]
    ).stdout
    assert compact.count("\n") == 1
    labelled = json.loads(compact)
    assert labelled.pop("label") == "rack3-node07" and labelled == json.loads(pretty)
    implied = runner.invoke(app, ["detect", "--compact", "--cpuinfo", str(HASWELL), "--no-gpu"])
    assert implied.exit_code == 0 and implied.stdout == compact  # --compact implies --format json
    # The variable names the node in JSON lines; a person's text view is not refused for it.
    assert runner.invoke(app, ["detect", "--cpuinfo", str(HASWELL), "--no-gpu"]).exit_code == 0
    refused = runner.invoke(app, ["detect", "--label", "n1", "--cpuinfo", str(HASWELL), "--no-gpu"])
    assert refused.exit_code == 2 and "--format json" in refused.stderr


def test_mixed_cluster_a100_h100_old_driver_grace_v100_and_a_gpu_nothing_serves(tmp_path, catalog) -> None:
    lines = (
        [detect_line(f"a100-{i}", ICE_LAKE_GUEST, ["8.0"], "580.95.05") for i in range(3)]
        + [detect_line(f"h100-{i}", SAPPHIRE_RAPIDS, ["9.0"], "580.95.05") for i in range(4)]
        + [detect_line(f"old-rack-{i}", SAPPHIRE_RAPIDS, ["9.0"], "550.54.15") for i in range(2)]
        + [detect_line("gh200-0", GRACE, ["9.0"], "580.95.05")]
        + [detect_line(f"v100-{i}", HASWELL, ["7.0"], "580.95.05") for i in range(2)]
        + [detect_line("kepler-0", HASWELL, ["3.5"], "470.256.02")]
    )
    plan = run_plan(tmp_path, lines, "--org", "acme")
    nodes = {node["label"]: node for node in plan["nodes"]}
    # Every assignment is one that node's own detect admits, so a plan never contradicts detect.
    for line in lines:
        document = json.loads(line)
        node = nodes[document["label"]]
        facts = facts_from_json(document["hardware"], catalog)
        decision = decide(facts, catalog, Request(), with_hints=False)
        if node["package"] is None:
            assert not decision.candidates and node["why"]
            continue
        variant = catalog.variant(node["package"], node["branch"])
        assert variant in decision.candidates and not why_not(variant, facts, catalog)
        assert node["rank"] == decision.candidates.index(variant) + 1
    assert nodes["kepler-0"]["package"] is None
    # The Ice Lake guests' CPU reports no avx512_vnni: no variant needing it may reach them.
    assert not nodes["a100-0"]["package"].endswith("vnni")
    # CUDA 13 needs an R580 driver: the 550 rack gets a CUDA 12 build, the 580 H100s may share it.
    assert catalog.variant(nodes["old-rack-0"]["package"], nodes["old-rack-0"]["branch"]).cuda.startswith("12.")
    assert catalog.variant(nodes["gh200-0"]["package"], nodes["gh200-0"]["branch"]).platform == "aarch64-linux"
    assert nodes["v100-0"]["package"] and "sm70" in nodes["v100-0"]["package"]
    assert sum(v["nodes"] for v in plan["variants"]) == 12 and plan["solver"]["status"] == "Optimal"
    # H100 hosts on a 580 driver share the 550 rack's CUDA 12 build rather than a fifth variant.
    assert nodes["h100-0"]["package"] == nodes["old-rack-0"]["package"] and nodes["h100-0"]["rank"] > 1
    assert len(plan["variants"]) == 4


def test_max_variants_serves_the_most_nodes_and_says_who_gets_none(tmp_path) -> None:
    lines = [detect_line(f"a100-{i}", CASCADE_LAKE, ["8.0"], "580.95.05") for i in range(3)] + [
        detect_line(f"cpu-{i}", HASWELL, [], None) for i in range(2)
    ]
    plan = run_plan(tmp_path, lines, "--max-variants", "1")
    assert [v["nodes"] for v in plan["variants"]] == [3]
    assert {n["why"] for n in plan["nodes"] if n["package"] is None} == {"none of the 1 chosen variant(s) runs here"}


def test_an_avx2_build_shared_with_avx512_nodes_is_named_as_the_cost(tmp_path) -> None:
    # One A100 on Haswell (AVX2) and three on Cascade Lake: one build serves all if it is AVX2.
    lines = [detect_line("haswell-a100", HASWELL, ["8.0"], "580.95.05")] + [
        detect_line(f"clx-a100-{i}", CASCADE_LAKE, ["8.0"], "580.95.05") for i in range(3)
    ]
    plan = run_plan(tmp_path, lines)
    assert len(plan["variants"]) == 1 and plan["variants"][0]["package"].endswith("-avx2")
    costs = {n["why"] for n in plan["nodes"] if n["rank"] != 1}
    assert costs == {"avx2 build on an avx512 node"}
    text = runner.invoke(app, ["plan", str(tmp_path / "cluster.jsonl"), "--org", "acme"]).stdout
    assert "3 node(s) get pytorch-python313-cuda13_1-sm80-avx2: avx2 build on an avx512 node" in text
    assert "flox publish -o acme pytorch-python313-cuda13_1-sm80-avx2" in text


def test_bad_lines_are_counted_and_named_and_only_fatal_when_nothing_is_valid(tmp_path) -> None:
    good = detect_line("n1", HASWELL, [], None)
    cluster = tmp_path / "c.jsonl"
    cluster.write_text(
        good + "not json\n" + '{"schema_version": 1}\n' + "x" * (cluster_input.MAX_LINE_BYTES + 10) + "\n" + good
    )
    result = runner.invoke(app, ["plan", str(cluster), "--format", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["input"]["nodes"] == 2 and data["input"]["bad_lines"] == 3
    assert [b["where"] for b in data["input"]["bad"]] == [f"{cluster}:2", f"{cluster}:3", f"{cluster}:4"]
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text("nope\n")
    refused = runner.invoke(app, ["plan", str(only_bad)])
    assert refused.exit_code == 2 and "no node in the input" in refused.stderr and f"{only_bad}:1" in refused.stderr


@pytest.mark.parametrize("extra", [-1, 0, 1], ids=["1 MiB less a byte", "exactly 1 MiB", "1 MiB and a byte"])
def test_the_node_after_a_line_at_the_length_bound_is_read(tmp_path, extra) -> None:
    """A junk line within a byte of the 1 MiB bound, its newline included or not, is one bad line: the node after
    it is planned, never swallowed with it."""
    first, after = detect_line("before", HASWELL, [], None), detect_line("after", HASWELL, [], None)
    cluster = tmp_path / "c.jsonl"
    cluster.write_text(first + "x" * (cluster_input.MAX_LINE_BYTES + extra - 1) + "\n" + after)
    result = runner.invoke(app, ["plan", str(cluster), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {node["label"] for node in data["nodes"]} == {"before", "after"}
    assert data["input"]["bad_lines"] == 1 and data["input"]["bad"][0]["where"] == f"{cluster}:2"


def test_directories_of_json_files_and_stdin_are_read_the_same(tmp_path) -> None:
    lines = [detect_line(f"n{i}", CASCADE_LAKE, ["8.0"], "580.95.05") for i in range(2)]
    folder = tmp_path / "facts"
    folder.mkdir()
    for line in lines:
        pretty = json.dumps(json.loads(line), indent=2)
        (folder / f"{json.loads(line)['label']}.json").write_text(pretty)
    from_dir = runner.invoke(app, ["plan", str(folder), "--format", "json"]).stdout
    from_stdin = runner.invoke(app, ["plan", "-", "--format", "json"], input="".join(lines)).stdout
    assert json.loads(from_dir)["variants"] == json.loads(from_stdin)["variants"]
    assert [n["label"] for n in json.loads(from_dir)["nodes"]] == ["n0", "n1"]


# --- the solver against brute force ------------------------------------------------------------


@st.composite
def clusters(draw) -> list[tuple[int, list[int]]]:
    """Small random clusters: groups of nodes, each with its ranked candidate variants out of six."""
    groups = []
    for _ in range(draw(st.integers(1, 5))):
        count = draw(st.integers(1, 4))
        candidates = draw(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True))
        groups.append((count, candidates))
    return groups


def brute_force(groups: list[tuple[int, list[int]]], limit: int | None) -> tuple[int, int, int]:
    """(unserved nodes, variants, node-weighted rank) of the best plan, by trying every set of variants."""
    variants = sorted({v for _, c in groups for v in c})
    best = None
    for size in range(len(variants) + 1):
        if limit is not None and size > limit:
            break
        for chosen in itertools.combinations(variants, size):
            unserved = rank = 0
            for count, candidates in groups:
                ranks = [r for r, v in enumerate(candidates) if v in chosen]
                if ranks:
                    rank += count * min(ranks)
                else:
                    unserved += count
            if limit is None and unserved:
                continue
            # Without a limit: fewest variants, then rank. With one: most served, then rank, then fewest.
            score = (unserved, size, rank) if limit is None else (unserved, rank, size)
            best = score if best is None or score < best else best
    assert best is not None
    return best


@given(clusters(), st.one_of(st.none(), st.integers(1, 3)))
def test_the_plan_is_optimal_against_brute_force(groups, limit) -> None:
    generated("plan: solver == brute force")
    solution = planner.solve(groups, limit)
    unserved = sum(count for (count, _), v in zip(groups, solution.assignment, strict=False) if v is None)
    rank = sum(
        count * candidates.index(v)
        for (count, candidates), v in zip(groups, solution.assignment, strict=False)
        if v is not None
    )
    assert all(v in solution.chosen for v in solution.assignment if v is not None)
    assert all(v is None or v in candidates for (_, candidates), v in zip(groups, solution.assignment, strict=False))
    if limit is not None:
        assert len(solution.chosen) <= limit
    score = (unserved, len(solution.chosen), rank) if limit is None else (unserved, rank, len(solution.chosen))
    assert score == brute_force(groups, limit)


# --- gathering with a real Ansible ----------------------------------------------------------

PLAYBOOK = Path(__file__).resolve().parent.parent / "examples" / "gather-facts.yml"


def test_a_real_ansible_run_gathers_every_host_and_the_plan_covers_them(tmp_path) -> None:
    bin_dir = Path(sys.executable).parent
    playbook_bin = shutil.which("ansible-playbook", path=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    require(playbook_bin is not None, "ansible-playbook is not installed (pip install ansible-core)")
    hosts = {
        "a100-clx": (CASCADE_LAKE, "8.0", "580.95.05"),
        "h100-spr": (SAPPHIRE_RAPIDS, "9.0", "580.95.05"),
        "h100-old": (SAPPHIRE_RAPIDS, "9.0", "550.54.15"),
        "cpu-only": (HASWELL, "none", ""),
    }
    inventory = ["[cluster]"]
    for name, (cpuinfo, gpu, driver) in hosts.items():
        env = {"PICKVARIANT_CPUINFO": str(cpuinfo), "PICKVARIANT_GPU": gpu, "PICKVARIANT_DRIVER": driver}
        inventory.append(
            f"{name} ansible_connection=local ansible_python_interpreter={sys.executable} "
            f"pickvariant_env='{json.dumps(env)}'"
        )
    (tmp_path / "hosts.ini").write_text("\n".join(inventory) + "\n")
    facts_dir = tmp_path / "facts"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="False",
    )
    done = subprocess.run(
        [playbook_bin, "-i", str(tmp_path / "hosts.ini"), str(PLAYBOOK), "-e", f"facts_dir={facts_dir}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(p.stem for p in facts_dir.iterdir()) == sorted(hosts)
    plan = json.loads(runner.invoke(app, ["plan", str(facts_dir), "--format", "json"]).stdout)
    nodes = {n["label"]: n for n in plan["nodes"]}
    assert set(nodes) == set(hosts) and all(n["package"] for n in nodes.values())
    assert nodes["cpu-only"]["package"] == "pytorch-python313-cpu-avx2"
    assert nodes["h100-old"]["package"] == nodes["h100-spr"]["package"]
    assert len(plan["variants"]) == 3


def test_a_line_that_differs_from_a_known_node_only_in_a_broken_label_is_still_bad(tmp_path) -> None:
    good = detect_line("n1", HASWELL, [], None)
    broken = good.replace('"label":"n1"', '"label":"n2\\x"', 1)  # an invalid escape: not JSON
    plan = run_plan(tmp_path, [good, broken, good.replace('"n1"', '"n3"', 1)])
    assert [n["label"] for n in plan["nodes"]] == ["n1", "n3"] and plan["input"]["bad_lines"] == 1


def _plan_with_a_terminal_for_stderr(feed: Callable[[subprocess.Popen], None], *args: str) -> tuple[bytes, bytes, int]:
    """Runs `pickvariant plan` with stderr on a pseudo-terminal (as a user's shell would have it)."""
    import pty
    import threading

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "pickvariant", "plan", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    terminal = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer of the terminal has gone
                return
            if not chunk:
                return
            terminal.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    stdout_chunks: list[bytes] = []
    collector = threading.Thread(target=lambda: stdout_chunks.append(process.stdout.read()))
    collector.start()
    feed(process)
    process.stdin.close()
    returncode = process.wait(timeout=120)
    collector.join()
    reader.join(timeout=10)
    os.close(leader)
    return b"".join(stdout_chunks), bytes(terminal), returncode


def test_a_slow_input_shows_a_progress_bar_on_a_terminal_and_only_there(tmp_path) -> None:
    line = json.loads(detect_line("n", HASWELL, [], None))
    lines = []
    for index in range(12_000):
        line["label"] = f"node{index:05d}"
        lines.append(json.dumps(line, separators=(",", ":")) + "\n")
    payload = "".join(lines).encode()
    half = len(payload) // 2

    def slowly(process: subprocess.Popen) -> None:
        # Half the nodes, then a pause longer than the second after which the bar appears.
        process.stdin.write(payload[:half])
        process.stdin.flush()
        time.sleep(1.5)
        process.stdin.write(payload[half:])

    stdout, terminal, returncode = _plan_with_a_terminal_for_stderr(slowly, "-", "--format", "json")
    assert returncode == 0
    assert json.loads(stdout)["input"]["nodes"] == 12_000  # the plan alone on stdout
    assert b"reading nodes" in terminal and b"nodes" in terminal and "━".encode() in terminal
    # A fast input shows nothing, and a stderr that is no terminal never gets a bar.
    _, quiet_terminal, _ = _plan_with_a_terminal_for_stderr(lambda process: process.stdin.write(payload[:half]), "-")
    assert b"reading nodes" not in quiet_terminal
    piped = subprocess.run(
        [sys.executable, "-m", "pickvariant", "plan", "-"], input=payload[:half], capture_output=True
    )
    assert piped.returncode == 0 and piped.stderr == b""


# --- gathering with pdsh and clush --------------------------------------------------------------

GATHERED_HOSTS = {
    "node01": (ICE_LAKE_GUEST, "8.0", "580.95.05"),
    "node02": (SAPPHIRE_RAPIDS, "9.0", "580.95.05"),
    "node03": (HASWELL, "none", ""),
    "node04": (HASWELL, "3.5", "470.256.02"),  # Kepler: no variant, detect exits 3 but still prints
}


@pytest.mark.parametrize("tool", ["pdsh", "clush"])
def test_pdsh_and_clush_gather_one_line_per_host_that_plan_reads(tool: str, tmp_path) -> None:
    """The README's -N gathering, with each tool's exec worker standing in for ssh: every "host" is a
    local process with its own stated hardware, so the collection of output is the tool's real one."""
    bin_dir = Path(sys.executable).parent
    search_path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    binary = shutil.which(tool, path=search_path)
    require(
        binary is not None,
        f"{tool} is not installed ({'apt-get install pdsh' if tool == 'pdsh' else 'pip install ClusterShell'})",
    )
    hosts_dir = tmp_path / "hosts"
    hosts_dir.mkdir()
    for name, (cpuinfo, gpu, driver) in GATHERED_HOSTS.items():
        (hosts_dir / f"{name}.env").write_text(
            f"export PICKVARIANT_CPUINFO='{cpuinfo}' PICKVARIANT_GPU='{gpu}' PICKVARIANT_DRIVER='{driver}'\n"
        )
    detect = f". {hosts_dir}/%h.env && pickvariant detect --format json --compact --label %h"
    nodes = "node[01-04]"
    argv = (
        [binary, "-R", "exec", "-w", nodes, "-N", "sh", "-c", detect]
        if tool == "pdsh"
        else [binary, "-R", "exec", "-w", nodes, "-N", detect]
    )
    gathered = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=dict(os.environ, PATH=search_path, HOME=str(tmp_path)),
    )
    lines = gathered.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith('{"label":"node0') for line in lines), (
        gathered.stdout + gathered.stderr
    )
    (tmp_path / "cluster.jsonl").write_text(gathered.stdout)
    plan = json.loads(runner.invoke(app, ["plan", str(tmp_path / "cluster.jsonl"), "--format", "json"]).stdout)
    by_label = {node["label"]: node for node in plan["nodes"]}
    assert set(by_label) == set(GATHERED_HOSTS) and plan["input"]["bad_lines"] == 0
    assert by_label["node03"]["package"] == "pytorch-python313-cpu-avx2" and by_label["node04"]["package"] is None
    assert "sm80" in by_label["node01"]["package"] and not by_label["node01"]["package"].endswith("vnni")


def test_the_daemonset_container_prints_one_labelled_line_and_then_idles(tmp_path) -> None:
    """The Kubernetes manifest's container command, run as the container would run it (not in a
    cluster: no Kubernetes here); `sleep` is shimmed so that "idle until deleted" returns."""
    import yaml  # comes with ansible-core

    manifest = yaml.safe_load((PLAYBOOK.parent / "detect-daemonset.yaml").read_text())
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    assert (
        manifest["kind"] == "DaemonSet" and container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    )
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "sleep").write_text('#!/bin/sh\necho slept "$@" >&2\n')
    (shims / "sleep").chmod(0o755)
    search_path = f"{shims}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    for gpu, driver in (("9.0", "580.95.05"), ("3.5", "470.256.02")):  # the second: exit 3, still idles
        env = dict(
            os.environ,
            PATH=search_path,
            NODE_NAME="gpu-node-7",
            PICKVARIANT_CPUINFO=str(SAPPHIRE_RAPIDS),
            PICKVARIANT_GPU=gpu,
            PICKVARIANT_DRIVER=driver,
        )
        done = subprocess.run(container["command"], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0 and "slept infinity" in done.stderr
        (line,) = done.stdout.splitlines()
        assert json.loads(line)["label"] == "gpu-node-7"


@given(st.lists(st.from_regex(r"[a-z]{1,3}-?[0-9]{0,3}", fullmatch=True), min_size=1, max_size=40))
def test_folded_labels_expand_back_to_exactly_the_labels(labels: list[str]) -> None:
    """Checked with ClusterShell's NodeSet, the hostlist reader pdsh and Slurm users already trust."""
    generated("plan: labels fold to hostlists")
    try:
        from ClusterShell.NodeSet import NodeSet
    except ImportError:
        require(False, "ClusterShell is not installed (pip install ClusterShell)")

    from pickvariant.output.cluster_plan import fold_labels

    folded = fold_labels(labels)
    assert len(folded) <= len(set(labels))
    assert set(NodeSet.fromlist(folded)) == set(labels)


def test_compact_implies_json_in_both_parsers() -> None:
    """`detect --compact --label X` exists only to feed plan: it prints the JSON line, typer CLI and fast path alike."""
    import contextlib
    import io

    from pickvariant.cli import entry, plainline
    from pickvariant.cli.main import main as cli_main

    argv = ["detect", "--compact", "--label", "n7", "--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--no-gpu"]
    assert plainline.parse_plain_detect(argv) is not None
    outcomes = []
    for main in (entry.main, cli_main):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(list(argv))
        outcomes.append((code, out.getvalue()))
    assert outcomes[0] == outcomes[1]
    code, text = outcomes[0]
    assert code == 0 and text.count("\n") == 1 and json.loads(text)["label"] == "n7"
    refused = runner.invoke(app, ["detect", "--compact", "--format", "markdown", "--no-gpu"])
    assert refused.exit_code == 2 and "cannot be --format markdown" in refused.stderr


def test_each_node_gets_detects_own_reason_and_hint_and_each_build_its_system(tmp_path) -> None:
    """An A100 on driver 470: plan says what detect says there (the driver is too old, which driver would do),
    not a generic line; an empty section has no header; each build command says where it can run."""
    lines = [
        detect_line("old-a100", HASWELL, ["8.0"], "470.57.02"),
        detect_line("cpu-1", HASWELL, [], None),
        detect_line("grace-1", cpuinfo_path("linux-rhel9-neoverse_v2"), ["9.0"], "580.95.05"),
    ]
    detected = runner.invoke(app, ["detect", "--cpuinfo", str(HASWELL), "--gpu", "8.0", "--driver", "470.57.02"])
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text("".join(lines))
    text = runner.invoke(app, ["plan", str(cluster)]).stdout
    told = detected.stderr.removeprefix("pickvariant: no compatible variant for this machine: ").strip()
    assert "driver 470.57.02 is too old" in told and "a driver >= 525.60.13" in told
    assert f"1 node(s): {told} [old-a100]" in text
    assert "nodes that get less than their own best" not in text
    assert "(on an x86_64 Linux machine)" in text and "(on an aarch64 Linux machine)" in text


def test_a_label_on_two_machines_is_named_and_markdown_nests_what_belongs_to_a_build(tmp_path) -> None:
    lines = [
        detect_line("n1", HASWELL, ["9.0"], "580.95.05"),
        detect_line("n1", HASWELL, ["8.0"], "580.95.05"),
        detect_line("n2", HASWELL, ["9.0"], "580.95.05"),
        detect_line("n2", HASWELL, ["9.0"], "580.95.05"),
    ]
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text("".join(lines))
    text = runner.invoke(app, ["plan", str(cluster)]).stdout
    assert "labels on more than one line (2):" in text
    assert "  n1: 2 lines, 2 different machines (each counted as a node)" in text
    assert "  n2: 2 lines, the same hardware (each counted as a node)" in text
    data = json.loads(runner.invoke(app, ["plan", str(cluster), "--format", "json"]).stdout)
    assert len(data["input"]["duplicate_labels"]) == 2 and data["input"]["nodes"] == 4
    markdown = runner.invoke(app, ["plan", str(cluster), "--format", "markdown"]).stdout.splitlines()
    build = next(index for index, line in enumerate(markdown) if line.startswith("- `pytorch-"))
    assert markdown[build + 1].startswith("  - covers ") and any(
        line.startswith("  - nodes: ") for line in markdown[build + 1 : build + 8]
    )
    unique = tmp_path / "unique.jsonl"
    unique.write_text(lines[0] + lines[2])
    assert "labels on more than one line" not in runner.invoke(app, ["plan", str(unique)]).stdout


def test_a_real_ansible_ad_hoc_run_in_its_oneline_format_feeds_plan(tmp_path) -> None:
    """`ansible all -m shell -a 'pickvariant detect --compact --label …' -o`, as README gives it, run for real."""
    bin_dir = Path(sys.executable).parent
    ansible = shutil.which("ansible", path=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    require(ansible is not None, "ansible is not installed (pip install ansible-core)")
    hosts = {"n1": (HASWELL, "none"), "n2": (SAPPHIRE_RAPIDS, "9.0"), "broken": (HASWELL, "hopper")}
    inventory = ["[cluster]"] + [
        f"{name} ansible_connection=local ansible_python_interpreter={sys.executable} cpuinfo={cpuinfo} gpu={gpu}"
        for name, (cpuinfo, gpu) in hosts.items()
    ]
    (tmp_path / "hosts.ini").write_text("\n".join(inventory) + "\n")
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_DEPRECATION_WARNINGS="False",
    )
    command = (
        "PICKVARIANT_CPUINFO={{ cpuinfo }} PICKVARIANT_GPU={{ gpu }} PICKVARIANT_DRIVER=580.95.05 "
        "pickvariant detect --compact --label {{ inventory_hostname }} || [ $? -eq 3 ]"
    )
    done = subprocess.run(
        [ansible, "all", "-i", str(tmp_path / "hosts.ini"), "-m", "ansible.builtin.shell", "-a", command, "-o"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = tmp_path / "cluster.txt"
    lines.write_text(done.stdout)
    # ansible-core 2.19 writes a failed host as "| FAILED | rc=…" and then "FAILED! => {…}"; before it, the latter alone.
    failed = " | FAILED | " in done.stdout or " | FAILED! => {" in done.stdout
    assert " | CHANGED | rc=0 | (stdout) {" in done.stdout and failed, done.stdout[-2000:] + done.stderr[-2000:]
    plan = json.loads(runner.invoke(app, ["plan", str(lines), "--format", "json"]).stdout)
    assert sorted(node["label"] for node in plan["nodes"]) == ["n1", "n2"]
    # A failed host gets Ansible's oneline and its "FAILED! =>" detail: both are named, neither is a node.
    assert plan["input"]["bad_lines"] >= 1 and all("for broken" in bad["why"] for bad in plan["input"]["bad"])


def test_plan_with_a_companion_covers_the_cluster_with_the_fewest_sets(tmp_path) -> None:
    """Two H100 nodes (drivers 580 and 570) and a CPU node, with torchvision: the 570 node can have no set on torch
    2.10.0, so both H100s share the 2.9.1 set (one set, not two), and each set names its torchvision."""
    sapphire = cpuinfo_path("linux-unknown-sapphirerapids")
    lines = [
        detect_line("h100-new", sapphire, ["9.0"], "580.95.05"),
        detect_line("h100-old", sapphire, ["9.0"], "570.124.06"),
        detect_line("cpu-1", HASWELL, [], None),
    ]
    alone = run_plan(tmp_path, lines)
    data = run_plan(tmp_path, lines, "--with", "torchvision")
    sets = {row["package"]: row for row in data["variants"]}
    assert len(sets) == 2 and len(alone["variants"]) >= 2
    h100 = sets["pytorch-python313-cuda12_9-sm90-avx512"]
    (vision,) = h100["companions"]
    assert (vision["package"], vision["torch"], h100["nodes"]) == (
        "torchvision-python313-cuda12_9-sm90-avx512",
        "2.9.1",
        2,
    )
    nodes = {node["label"]: node for node in data["nodes"]}
    assert nodes["h100-new"]["package"] == "pytorch-python313-cuda12_9-sm90-avx512" and nodes["h100-new"]["rank"] > 1
    assert all(
        row["companions"] and row["companions"][0]["torch"] == sets[package]["companions"][0]["torch"]
        for package, row in sets.items()
    )
    text = runner.invoke(app, ["plan", str(tmp_path / "cluster.jsonl"), "--with", "torchvision"]).stdout
    assert (
        "in a clone of https://github.com/barstoolbluz/build-torchvision: git checkout pytorch-2.9 && flox build torchvision-python313-cuda12_9-sm90-avx512"
        in text
    )
    # A companion nothing published pairs with is generated on each set's variant: one torch build and one build
    # of it per set, with the commands that make its recipe.
    audio = run_plan(tmp_path, lines, "--with", "torchaudio")
    assert audio["variants"] and all(
        [c["torch_relation"] for c in row["companions"]] == ["generated"] for row in audio["variants"]
    )
    assert all(node["package"] for node in audio["nodes"])
    text = runner.invoke(app, ["plan", str(tmp_path / "cluster.jsonl"), "--with", "torchaudio"]).stdout
    first = audio["variants"][0]
    assert f"pickvariant recipe {first['package']} --branch {first['branch']} --with torchaudio -o .flox/pkgs" in text


def test_every_companion_asked_for_is_in_each_set_the_plan_names(tmp_path) -> None:
    """--with torchvision,torchaudio: each set the plan chooses carries both, none dropped, and a node's set is the
    one detect answers there with the same --with."""
    sapphire = cpuinfo_path("linux-unknown-sapphirerapids")
    machines = {"h100": (sapphire, ["9.0"], "580.95.05"), "cpu-1": (HASWELL, [], None)}
    lines = [detect_line(label, *facts) for label, facts in machines.items()]
    data = run_plan(tmp_path, lines, "--with", "torchvision,torchaudio")
    assert data["variants"]
    for row in data["variants"]:
        projects = sorted(companion["package"].split("-", 1)[0] for companion in row["companions"])
        assert projects == ["torchaudio", "torchvision"], row
    for node in data["nodes"]:
        cpuinfo, gpus, driver = machines[node["label"]]
        args = ["detect", "--format", "json", "--cpuinfo", str(cpuinfo), "--with", "torchvision,torchaudio"]
        args += [part for cc in gpus for part in ("--gpu", cc)] or ["--no-gpu"]
        args += ["--driver", driver] if driver else []
        detected = json.loads(runner.invoke(app, args).stdout)
        row = next(row for row in data["variants"] if row["package"] == node["package"])
        assert row["package"] == detected["recommendation"]["package"], node["label"]
        assert sorted(c["package"] for c in row["companions"]) == sorted(
            package for package in detected["set"]["installed"] if package != row["package"]
        ), node["label"]


def test_an_empty_input_says_it_holds_no_line_and_what_to_give(tmp_path) -> None:
    empty = tmp_path / "nodes"
    empty.mkdir()
    result = runner.invoke(app, ["plan", str(empty)])
    assert result.exit_code == 2
    assert result.stderr.startswith("pickvariant: no node in the input: it holds no line at all (give the output of")


def test_a_tie_between_covers_goes_to_fewer_builds_then_to_better_ranks() -> None:
    """Two nodes: each has its own best build (0, 1) and both run build 2, second best. Without a limit one build
    serving both beats two best ones (the objective says so: one build, rank 1 each); with room for two, every node
    gets its best."""
    from pickvariant.rules import fewest_builds as planner

    groups = [(1, [0, 2]), (1, [1, 2])]
    one = planner.solve(groups, None)
    assert one.chosen == (2,) and one.assignment == (2, 2)
    rank_total = 2  # each group's candidates beyond its first
    assert one.objective == (rank_total + 1) * 1 + 1 + 1  # one build chosen, then each node's rank
    two = planner.solve(groups, 2)
    assert sorted(two.chosen) == [0, 1] and two.assignment == (0, 1)


@pytest.mark.parametrize("source", ["flox", "wheels"])
@pytest.mark.parametrize("limit", ["0", "-1"])
def test_a_limit_of_no_builds_is_refused_never_an_empty_plan(tmp_path, source, limit) -> None:
    """--max-variants 0 would serve no node: one line naming the flag, exit 2, and no plan written."""
    cluster = tmp_path / "cluster.jsonl"
    cluster.write_text(detect_line("cpu-1", HASWELL, [], None))
    result = runner.invoke(app, ["plan", str(cluster), "--source", source, "--max-variants", limit])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--max-variants" in result.stderr
