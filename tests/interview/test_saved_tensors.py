"""The saved-tensor audit: kept vs needed bytes per graph, measured in the worker, judged here.

The byte counts are worked out by hand: every tensor is float64 (8 bytes an element);
u, v are (4, 3) = 96 B, p is (3, 5) = 120 B, a matmul's (4, 5) result 160 B; in the
chain a and h are (4, 5) = 160 B and o is (4, 2) = 64 B.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.checks.context import CandidateError, Context, Failed, Shared
from harness.checks.saved_tensors import CASES, Audit, needed_nodes, saved_tensors
from harness.grade import GradeOptions, planned_checks
from harness.report.model import CheckResult, Report
from harness.report.render import render_json, render_markdown, render_text
from harness.report.rubric import load_rubric
from harness.sandbox.launch import Limits
from harness.sandbox.schema import SchemaError, validate_reply

from interview_engines import REFERENCE, write_engine

PROGRAMS = dict(CASES)
CHAIN = "linear -> tanh -> linear"


def test_what_each_op_needs():
    assert {name: needed_nodes(p) for name, p in CASES} == {
        "add": [], "mul": ["v", "u"], "matmul": ["p", "u"], "relu": ["y"], "sum": [], "tanh": ["y"],
        "sigmoid": ["y"], "exp": ["y"], "log": ["u"], "reshape": [], "transpose": [], CHAIN: ["h"]}


def test_excess_counts_what_no_rule_reads_and_allows_copies_and_masks():
    needed = (("y", 96),)
    assert Audit("tanh", "", (("y", 96),), needed).excess == 0
    assert Audit("tanh", "", (("u", 96),), needed).excess == 96  # the input instead of the output
    assert Audit("tanh", "", (("", 96),), needed).excess == 0  # a copy of the output
    assert Audit("relu", "", (("", 12),), needed).excess == 0  # a bool mask
    assert Audit("relu", "", (("y", 96), ("", 12)), needed).excess == 12  # the output and a mask


@pytest.fixture(scope="module")
def audits(launcher, tmp_path_factory):
    """The audit's outcome and table for the reference and three engines that keep too much."""
    folder = tmp_path_factory.mktemp("engines")
    engines = {"reference": REFERENCE, **{name: write_engine(name, folder) for name in
                                          ("saves_every_input", "keeps_tanh_input", "tanh_saves_input")}}
    found = {}
    for name, path in engines.items():
        box = launcher.sandbox(Limits())
        try:
            shared = Shared(time.perf_counter() + 60)
            first = Context(box, path, "Tensor", path.stem, shared)
            members = frozenset(first.worker().hello["members"])
            first.retire()
            ctx = Context(box, path, "Tensor", path.stem, shared, members=members)
            ctx.begin(time.perf_counter() + 30)
            try:
                saved_tensors(ctx)
                found[name] = ("passed", "", ctx.notes["saved_tensors"])
            except (Failed, CandidateError) as exc:
                found[name] = (type(exc).__name__, exc.message, exc.details["saved_tensors"])
            ctx.retire()
        finally:
            box.close()
    return found


def _figures(table):
    return {r["case"]: (r["kept_bytes"], r["needed_bytes"], r["excess_bytes"]) for r in table["rows"]}


def test_the_reference_keeps_exactly_what_its_rules_read(audits):
    outcome, _, table = audits["reference"]
    assert outcome == "passed"
    assert _figures(table) == {
        "add": (0, 0, 0), "mul": (192, 192, 0), "matmul": (216, 216, 0), "relu": (96, 96, 0), "sum": (0, 0, 0),
        "tanh": (96, 96, 0), "sigmoid": (96, 96, 0), "exp": (96, 96, 0), "log": (96, 96, 0),
        "reshape": (0, 0, 0), "transpose": (0, 0, 0), CHAIN: (160, 160, 0)}
    assert table["in_place"] == "detected"  # its version counter refuses a changed saved tensor


def test_an_engine_saving_every_input(audits):
    outcome, message, table = audits["saves_every_input"]
    figures = _figures(table)
    assert outcome == "Failed" and message.startswith("12 of 12 graphs keep tensors their backward never reads")
    assert figures["add"] == (192 + 96, 0, 288)  # u and v for +, y for sum
    assert figures["mul"] == (288, 192, 96)  # y, which only sum's saved input holds
    assert figures["tanh"] == (192, 96, 96)  # u (tanh's input) on top of its output
    assert figures[CHAIN] == (160 + 160 + 64, 160, 224)  # a, h and o
    assert table["in_place"] == "silently wrong"


def test_an_engine_keeping_the_pre_activation(audits):
    outcome, message, table = audits["keeps_tanh_input"]
    figures = _figures(table)
    assert outcome == "Failed" and message.startswith("2 of 12 graphs")
    assert figures[CHAIN] == (320, 160, 160)
    assert [k["node"] for k in next(r for r in table["rows"] if r["case"] == CHAIN)["kept"]] == ["a", "h"]
    assert figures["tanh"] == (192, 96, 96)
    assert all(excess == 0 for case, (_, _, excess) in figures.items() if case not in ("tanh", CHAIN))


def test_an_engine_saving_tanhs_input_instead_of_its_output(audits):
    outcome, message, table = audits["tanh_saves_input"]
    figures = _figures(table)
    assert outcome == "Failed"
    assert "tanh keeps 96 B where 96 B are needed (96 B for nothing: u)" in message
    assert figures["tanh"] == (96, 96, 96)  # as many bytes as needed, but the wrong tensor
    assert figures[CHAIN] == (320, 160, 160)


def test_the_audit_is_an_informational_followup():
    planned = {c.id: c for c in planned_checks(GradeOptions())}
    audit = planned["followups.saved_tensors"]
    assert (audit.level, audit.concept) == ("followups", "saved_tensors")
    rubric = load_rubric()
    assert rubric.weight("followups.saved_tensors") == 0.5
    assert not any(gate.startswith("followups") for gate in rubric.gates)


def _report(outcome: str, table) -> Report:
    check = CheckResult("followups.saved_tensors", "followups", "saved_tensors", "t", outcome,
                        details={"saved_tensors": table})
    return Report(file="s.py", status="graded", score=0, max_score=1, levels={}, checks=(check,))


def test_the_table_is_in_every_format(audits):
    _, _, table = audits["tanh_saves_input"]
    report = _report("failed", table)
    assert json.loads(render_json(report))["saved_tensors"]["rows"][-1]["kept_bytes"] == 320
    text = render_text(report, verbose=True)
    assert "  linear -> tanh -> linear     320 B   160 B       160 B  a 160 B, h 160 B" in text
    assert "backward refused (a version counter, as torch has): credited" in text
    short = render_text(report)  # a failure is one line with its figures, the table waits for -v
    assert "  linear -> tanh -> linear" not in short and "(-v shows the table)" in short
    markdown = render_markdown(report)
    assert "| tanh | 96 | 96 | 96 | u 96 B | output" in markdown and "its derivative is written in its output" in markdown
    lean = render_text(_report("passed", audits["reference"][2]))
    assert "saved tensors: each of 12 graphs keeps only what its backward reads" in lean
    assert "linear -> tanh -> linear" in render_text(_report("passed", audits["reference"][2]), verbose=True)


def test_a_forged_reply_is_the_candidates_error():
    reply = {"cases": [{"kept": [{"node": "u", "bytes": -5, "dtype": "float64", "shape": [4, 3]}],
                        "truncated": False}], "in_place": {"w_before": {"shape": [1], "dtype": "float64",
                                                                         "values": [1.0]}}}
    with pytest.raises(SchemaError, match=r"reply.cases\[0\]: fits none of the allowed forms"):
        validate_reply("saved_tensors", reply)
    with pytest.raises(SchemaError, match="missing field 'in_place'"):
        validate_reply("saved_tensors", {"cases": []})
