"""`pickvariant fleet`: a real plan of H100 nodes against verify lines made from a real H100's verify output
(tests/data/verify-h100.json), each node's line changed only where the test says: one status per node."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import cli_runner, cpuinfo_path
from test_plan import detect_line

from pickvariant.cli.main import app

runner = cli_runner()
SAPPHIRE_RAPIDS = cpuinfo_path("linux-unknown-sapphirerapids")
H100_LINE = json.loads((Path(__file__).parent / "data" / "verify-h100.json").read_text())
NODES = [f"gpu{n:02d}" for n in range(1, 9)]


@pytest.fixture
def plan(tmp_path) -> tuple[Path, dict]:
    cluster = tmp_path / "cluster.jsonl"
    lines = [detect_line(label, SAPPHIRE_RAPIDS, ["9.0"], "580.95.05") for label in NODES]
    lines.append(detect_line("kepler", SAPPHIRE_RAPIDS, ["3.5"], "470.256.02"))
    cluster.write_text("".join(lines))
    result = runner.invoke(app, ["plan", str(cluster), "--format", "json"])
    (tmp_path / "plan.json").write_text(result.stdout)
    return tmp_path / "plan.json", json.loads(result.stdout)


def _line(label: str, node: dict, bf16: float | None = None, **changes) -> str:
    line = copy.deepcopy(H100_LINE)
    line.update(label=label, package=node["package"], branch=node["branch"], **changes)
    if bf16 is not None:
        for check in line["checks"]:
            if check["name"] == "matmul bf16" and check["device"] == "cuda:0":
                check["tflops"] = bf16
    return json.dumps(line, separators=(",", ":"))


def _fleet(plan_path: Path, lines: list[str], tmp_path: Path, *options: str):
    (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
    return runner.invoke(app, ["fleet", str(plan_path), str(tmp_path / "results.jsonl"), *options])


def test_each_node_gets_one_status_and_only_a_fully_proven_fleet_exits_0(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    proven = _fleet(plan_path, lines, tmp_path, "--format", "json")
    assert proven.exit_code == 0, proven.output
    statuses = {n["label"]: n["status"] for n in json.loads(proven.stdout)["nodes"]}
    assert statuses == {**dict.fromkeys(NODES, "proven"), "kepler": "unserved"}

    lines[1] = _line("gpu02", node, passed=False, reasons=["GPU 0 (NVIDIA H100 80GB HBM3): a kernel failed to run"])
    lines[2] = _line("gpu03", {**node, "package": node["package"].rsplit("-", 1)[0] + "-avx"})
    lines[3] = _line("gpu04", node, bf16=H100_LINE_BF16 * 0.45)
    del lines[4]  # gpu05 sent nothing
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    assert result.exit_code == 1
    by_label = {n["label"]: n for n in json.loads(result.stdout)["nodes"]}
    assert {label: n["status"] for label, n in by_label.items()} == {
        **dict.fromkeys(NODES, "proven"),
        "gpu02": "failed",
        "gpu03": "other-build",
        "gpu04": "slow",
        "gpu05": "missing",
        "kepler": "unserved",
    }
    assert "a kernel failed to run" in by_label["gpu02"]["why"]
    assert f"the plan gives {node['package']}" in by_label["gpu03"]["why"]
    assert "45% of the median" in by_label["gpu04"]["why"] and "NVIDIA H100 80GB HBM3" in by_label["gpu04"]["why"]


H100_LINE_BF16 = next(
    c["tflops"] for c in H100_LINE["checks"] if c["name"] == "matmul bf16" and c["device"] == "cuda:0"
)


def test_a_node_a_little_below_the_median_is_not_slow_and_the_spread_is_shown(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    figures = [H100_LINE_BF16 * share for share in (1.0, 0.98, 1.02, 0.9, 1.01, 0.99, 0.97, 0.95)]
    lines = [_line(label, node, bf16=figure) for label, figure in zip(NODES, figures, strict=True)]
    result = _fleet(plan_path, lines, tmp_path)
    assert result.exit_code == 0, result.output
    spread = next(line for line in result.stdout.splitlines() if "NVIDIA H100 80GB HBM3 on" in line)
    assert f"{min(figures):.1f}" in spread and f"{max(figures):.1f}" in spread


def test_hostile_lines_are_counted_and_named_never_trusted(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    lines += [
        "not json",
        "{" * 100000,
        _line("gpu01", node, reasons=["x" * 70000]),  # a reason longer than a verify line holds
        json.dumps({**H100_LINE, "label": "x"}),  # no package or branch: not a line fleet can judge
        "\x1b[2J" + lines[0],
    ]
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    found = json.loads(result.stdout)
    assert result.exit_code == 0 and found["input"]["bad_lines"] == 5
    assert all(n["status"] in ("proven", "unserved") for n in found["nodes"])
    text = _fleet(plan_path, lines, tmp_path)
    assert "\x1b" not in text.stdout


def test_markdown_for_the_change_ticket_escapes_what_nodes_sent(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    lines[0] = _line("gpu01", node, passed=False, reasons=["[click](https://evil.example) <b>x</b>"])
    result = _fleet(plan_path, lines, tmp_path, "--format", "markdown")
    assert result.exit_code == 1
    assert "[click](https://evil.example)" not in result.stdout and "<b>" not in result.stdout


def test_a_label_the_plan_lacks_and_a_repeated_label_are_named(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES] + [_line("stranger", node), _line("gpu01", node)]
    found = json.loads(_fleet(plan_path, lines, tmp_path, "--format", "json").stdout)
    assert found["input"]["not_in_plan"] == ["stranger"] and found["input"]["repeated_labels"] == ["gpu01"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["missing-plan.json", "r"], "missing-plan.json"),
        (["-", "-"], "both be read from stdin"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, said, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["fleet", *args])
    assert result.exit_code == 2 and said in result.stderr and result.stderr.count("\n") == 1


# Issue 51: a line speaks only for the node whose file it is in; lines that disagree fail the node; no NaN.
def test_a_line_for_another_node_in_a_nodes_file_is_a_bad_line_and_proves_nothing(plan, tmp_path) -> None:
    """RESULTS/HOST.json, as examples/rollout.yml writes it: gpu02's file holding a passing line labelled gpu01 does
    not turn gpu01's own failed verify into proven; the line is named as bad."""
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    results = tmp_path / "results"
    results.mkdir()
    for label in NODES:
        (results / f"{label}.json").write_text(_line(label, node) + "\n")
    (results / "gpu01.json").write_text(_line("gpu01", node, passed=False, reasons=["a kernel failed"]) + "\n")
    (results / "gpu02.json").write_text(_line("gpu02", node) + "\n" + _line("gpu01", node) + "\n")
    result = runner.invoke(app, ["fleet", str(plan_path), str(results), "--format", "json"])
    assert result.exit_code == 1
    found = json.loads(result.stdout)
    by_label = {n["label"]: n for n in found["nodes"]}
    assert by_label["gpu01"]["status"] == "failed" and "a kernel failed" in by_label["gpu01"]["why"]
    assert by_label["gpu02"]["status"] == "proven"
    assert found["input"]["bad_lines"] == 1


def test_two_lines_for_one_node_that_disagree_fail_it_whatever_their_order(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES if label != "gpu01"]
    failed, passed = _line("gpu01", node, passed=False, reasons=["a kernel failed"]), _line("gpu01", node)
    for pair in ([failed, passed], [passed, failed]):
        result = _fleet(plan_path, [*lines, *pair], tmp_path, "--format", "json")
        assert result.exit_code == 1
        gpu01 = next(n for n in json.loads(result.stdout)["nodes"] if n["label"] == "gpu01")
        assert gpu01["status"] == "failed" and "2 verify lines disagree" in gpu01["why"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_figure_is_a_bad_line_and_the_output_stays_strict_json(plan, tmp_path, constant) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    lines[3] = _line("gpu04", node, bf16=0.5).replace('"tflops":0.5', f'"tflops":{constant}')
    assert constant in lines[3]
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    assert result.exit_code == 1  # gpu04 sent no line fleet can read: missing
    found = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} in fleet's output"))
    assert found["input"]["bad_lines"] == 1
    assert next(n for n in found["nodes"] if n["label"] == "gpu04")["status"] == "missing"


# The slow rule at its edges: 70 % of the median of at least three alike (a slip of the share, of >= or of the exit
# code fails one of these).
@pytest.mark.parametrize(
    ("shares", "slow"),
    [
        ((1.0, 1.0, 0.6), True),  # exactly three alike, one at 60 %: slow
        ((1.0, 0.6), False),  # two alike: too few for a median
        ((1.0, 1.0, 0.75), False),  # 75 %: within
        ((1.0, 1.0, 1.0, 0.69), True),
    ],
)
def test_slow_is_below_seventy_percent_of_three_or_more_alike_and_alone_fails_the_fleet(
    plan, tmp_path, shares, slow
) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    labels = NODES[: len(shares)]
    lines = [_line(label, node, bf16=H100_LINE_BF16 * share) for label, share in zip(labels, shares, strict=True)]
    lines += [_line(label, {**node, "branch": "elsewhere"}) for label in NODES[len(shares) :]]
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    statuses = {n["label"]: n["status"] for n in json.loads(result.stdout)["nodes"]}
    assert statuses[labels[-1]] == ("slow" if slow else "proven")
    assert all(statuses[label] == "other-build" for label in NODES[len(shares) :])  # same package, another branch
    assert result.exit_code == 1  # the other-build nodes alone fail it


def test_a_slow_node_alone_decides_the_exit_code(plan, tmp_path) -> None:
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    assert _fleet(plan_path, lines, tmp_path).exit_code == 0
    lines[0] = _line("gpu01", node, bf16=H100_LINE_BF16 * 0.5)
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    assert [n["status"] for n in json.loads(result.stdout)["nodes"]].count("slow") == 1
    assert result.exit_code == 1


def test_a_line_in_another_dotted_nodes_file_proves_nothing(tmp_path) -> None:
    """Labels that are dotted host names (gpu01.rack3.example, as `hostname -f` gives them): gpu02's file holding a
    passing line labelled gpu01.rack3.example is a bad line, and gpu01's own failed verify stands."""
    cluster = tmp_path / "cluster.jsonl"
    labels = [f"gpu{n:02d}.rack3.example" for n in (1, 2)]
    cluster.write_text("".join(detect_line(label, SAPPHIRE_RAPIDS, ["9.0"], "580.95.05") for label in labels))
    made = runner.invoke(app, ["plan", str(cluster), "--format", "json"])
    (tmp_path / "plan.json").write_text(made.stdout)
    node = json.loads(made.stdout)["nodes"][0]
    results = tmp_path / "results"
    results.mkdir()
    first, second = labels
    (results / f"{first}.json").write_text(_line(first, node, passed=False, reasons=["a kernel failed"]) + "\n")
    (results / f"{second}.json").write_text(_line(second, node) + "\n" + _line(first, node) + "\n")
    result = runner.invoke(app, ["fleet", str(tmp_path / "plan.json"), str(results), "--format", "json"])
    assert result.exit_code == 1
    found = json.loads(result.stdout)
    by_label = {n["label"]: n for n in found["nodes"]}
    assert by_label[first]["status"] == "failed" and by_label[second]["status"] == "proven"
    assert found["input"]["bad_lines"] == 1


def test_a_node_whose_agreeing_lines_include_a_slow_figure_is_slow(plan, tmp_path) -> None:
    """Two passing lines for gpu05, one at full speed and one at half: its slowest figure stands for it, so it is
    slow among alike nodes, never proven by its better run."""
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    lines.append(_line("gpu05", node, bf16=H100_LINE_BF16 * 0.5))
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    assert next(n for n in json.loads(result.stdout)["nodes"] if n["label"] == "gpu05")["status"] == "slow"
    assert result.exit_code == 1


def test_a_quick_lines_untimed_figure_never_makes_its_node_slow(plan, tmp_path) -> None:
    """verify --quick times samples too short to measure and marks them (`throughput_note`): such a figure is launch
    latency, so gpu04's quick line at 5 % of the others is proven, not slow, and its figure is not counted."""
    plan_path, document = plan
    node = next(n for n in document["nodes"] if n["package"])
    lines = [_line(label, node) for label in NODES]
    quick = json.loads(_line("gpu04", node, bf16=H100_LINE_BF16 * 0.05))
    for check in quick["checks"]:
        if check["name"] == "matmul bf16" and check["device"] == "cuda:0":
            check["throughput_note"] = "3 us per timed sample: too short to time, no speed shown"
    lines[3] = json.dumps(quick)
    result = _fleet(plan_path, lines, tmp_path, "--format", "json")
    assert result.exit_code == 0, result.output
    assert next(n for n in json.loads(result.stdout)["nodes"] if n["label"] == "gpu04")["status"] == "proven"
