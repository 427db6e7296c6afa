"""Graphs sent as a description: the worker builds the very steps the grader's program holds, from a few bytes."""

from __future__ import annotations

import json

import pytest

from harness.checks.timing import GROWTH_WIDTHS, wide_graph
from harness.graph_shapes import MAX_WIDTH, wire_steps


@pytest.mark.parametrize("width", [1, 2, 3, 7, *GROWTH_WIDTHS])
def test_the_worker_builds_the_steps_the_grader_holds(width):
    program = wide_graph(width)
    wire = program.to_wire()
    written = [{"name": s.name, "op": s.op, "args": list(s.args), "params": {}} for s in program.steps]
    assert wire_steps(wire) == written
    assert "steps" not in wire and len(json.dumps(wire)) < 300  # not the megabyte it stands for


@pytest.mark.parametrize("described", [{"shape": "deep", "width": 8}, {"shape": "wide", "width": 0},
                                       {"shape": "wide", "width": MAX_WIDTH + 1}, {"shape": "wide", "width": 2.0},
                                       {"shape": "wide", "width": True}, "wide"])
def test_a_description_out_of_bounds_is_refused(described):
    with pytest.raises(ValueError):
        wire_steps({"described": described})
