"""What a worker may say: replies that a forged or broken worker sends are malformed, never a pass."""

import pytest

from harness.sandbox.schema import SchemaError, validate_hello, validate_reply

ERROR = {"where": "backward", "type": "ValueError", "message": "no", "frames": []}
FLOAT = {"shape": [2], "dtype": "float64", "values": [1.0, 2.0]}
PROGRAM = {
    "leaves": [{"name": "a", "requires_grad": True, **FLOAT}, {"name": "t", "requires_grad": False, "shape": [2],
                                                              "dtype": "int64", "values": [0, 1]}],
    "steps": [{"name": "s", "op": "mul", "args": ["a", "a"], "params": {}},
              {"name": "y", "op": "sum", "args": ["s"], "params": {}}],
    "output": "y",
}
REQUEST = {"kind": "run", "program": PROGRAM, "observe": "all"}
SCALAR = {"shape": [], "dtype": "float64", "values": [5.0]}
COMPLETE = {"values": {"s": FLOAT, "y": SCALAR}, "requires_grad": {"s": True, "y": True}, "grads": {"a": FLOAT},
            "leaf_data": {"a": FLOAT}, "seconds": 0.1}


def test_a_complete_run_is_accepted():
    assert validate_reply("run", COMPLETE, REQUEST) == COMPLETE


@pytest.mark.parametrize(("reply", "message"), [
    ({}, "reply: missing field 'values'"),
    ({**COMPLETE, "values": {"s": FLOAT}}, "reply.values: nothing reported for y"),
    ({**COMPLETE, "requires_grad": {}}, "reply.requires_grad: nothing reported for s, y"),
    ({**COMPLETE, "leaf_data": {}}, "reply.leaf_data: nothing reported for a"),
])
def test_a_run_without_an_error_must_report_every_node_and_float_leaf(reply, message):
    with pytest.raises(SchemaError) as raised:
        validate_reply("run", reply, REQUEST)
    assert str(raised.value) == message


def test_a_run_that_failed_may_report_only_part():
    reply = {"error": ERROR, "values": {"s": FLOAT}, "seconds": 0.1}
    assert validate_reply("run", reply, REQUEST) == reply


def test_only_the_output_is_owed_when_only_the_output_was_asked_for():
    reply = {**COMPLETE, "values": {"y": SCALAR}, "requires_grad": {"y": True}}
    assert validate_reply("run", reply, {**REQUEST, "observe": "output"}) == reply


def test_a_probe_without_an_error_reports_every_fact():
    with pytest.raises(SchemaError) as raised:
        validate_reply("memory_release", {"alive_before": 2, "grad_x": None, "x": FLOAT, "w": FLOAT})
    assert str(raised.value) == "reply: missing field 'alive_after'"


def test_an_int64_tensor_holds_only_integers():
    int64 = {"shape": [2], "dtype": "int64", "values": [float("nan"), 1e300]}
    with pytest.raises(SchemaError) as raised:
        validate_reply("memory_release", {"error": ERROR, "x": int64})
    assert str(raised.value) == "reply.x: int64 values that are not integers"


def test_every_reply_may_carry_torch_count_of_graph_nodes():
    validate_hello({"kind": "ready", "has_class": True, "violations": [], "graph_nodes": 0})
    validate_reply("trace_calls", {"graph_nodes": 4})
    with pytest.raises(SchemaError):
        validate_reply("trace_calls", {"graph_nodes": "many"})
