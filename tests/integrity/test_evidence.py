"""What a worker's reply adds to the verdict: only evidence, type-checked, capped and made printable."""

from harness.integrity.scan import ReviewEntry
from harness.integrity.evidence import RECORDED, from_reply
from harness.variants import allowed_violation

_TRACKED = {"shape": [2], "dtype": "float64", "values": [1.0, 2.0], "autograd": True}
_PLAIN = {"shape": [2], "dtype": "float64", "values": [1.0, 2.0]}


def test_tensors_marked_with_autograd_history_are_violations_wherever_they_are():
    reply = {"grads": {"x": _TRACKED, "w": _PLAIN}, "values": {"h": _TRACKED}, "leaf_data": {"x": _TRACKED},
             "grad_x": _TRACKED, "z_value": _PLAIN}
    violations, review = from_reply(reply)
    assert violations == [
        "x.grad carries torch autograd history (requires_grad or grad_fn)",
        "the value of h carries torch autograd history (requires_grad or grad_fn)",
        "leaf_data.x carries torch autograd history (requires_grad or grad_fn)",
        "grad_x carries torch autograd history (requires_grad or grad_fn)",
    ]
    assert review == []


def test_reported_findings_are_kept_and_review_entries_checked():
    reply = {"violations": ["torch's autograd engine ran a backward pass (line 12)", 7, None],
             "review": [{"line": 3, "construct": "a thread", "why": "started a thread"},
                        {"line": True, "construct": "gc.freeze()", "why": "froze objects"},
                        {"line": -1, "construct": "x", "why": "y"},
                        {"line": 4, "construct": 5, "why": "not text"}, "not a dict"]}
    violations, review = from_reply(reply)
    assert violations == ["torch's autograd engine ran a backward pass (line 12)"]
    assert review == [ReviewEntry(3, "a thread", "started a thread"), ReviewEntry(None, "gc.freeze()", "froze objects"),
                      ReviewEntry(None, "x", "y")]


def test_silence_and_garbage_prove_nothing():
    assert from_reply({}) == ([], [])
    assert from_reply({"violations": "all clear", "review": {"line": 1}, "grads": [1, 2]}) == ([], [])


def test_worker_text_is_capped_and_terminal_escapes_are_made_visible():
    violations, review = from_reply({"violations": ["\x1b[2Jclean" + "x" * 400],
                                     "review": [{"line": 1, "construct": "a\nb", "why": "c\rd"}]})
    assert violations[0].startswith("\\x1b[2Jclean") and len(violations[0]) == 300 and violations[0].endswith("...")
    assert review == [ReviewEntry(1, "a\\nb", "c\\rd")]


def test_torch_count_of_graph_nodes_above_zero_is_a_violation():
    assert from_reply({"graph_nodes": 3})[0] == [RECORDED]
    for said in (0, True, "3", -2, None, 2.5):  # nothing recorded, or not a count: no evidence
        assert from_reply({"graph_nodes": said})[0] == []
    assert allowed_violation(f"at run time: {RECORDED}", "function")  # the variant's own Functions record nodes
    assert not allowed_violation(f"at run time: {RECORDED}", "tensor")
