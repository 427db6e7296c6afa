"""The bug catalogue: classic mistakes in a hand-written autograd engine.

Each entry names one mistake, the concept behind it, what goes wrong (two
sentences), and a hint that points at the concept without giving the fix.
Every entry has a mutant in ``mutants.py``: the reference engine with exactly
that mistake. The grader replays failing graphs through the mutants to say which
bug a submission has, and ``grade spec audit`` proves every entry is caught.

Plain data: the renderers read it without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["Bug", "BUGS", "bug", "INTEGRITY"]

INTEGRITY: Final = "integrity"
"""The pseudo check id of a signature read from the report's integrity violations."""


@dataclass(frozen=True)
class Bug:
    id: str
    name: str
    """Short, for headings and "likely caused by: <name>"."""
    concept: str
    level: str
    """The level whose checks must catch it (``grade spec audit`` runs the levels up to it)."""
    explanation: str
    """Two sentences: what the engine does wrong, and how it shows."""
    hint: str
    """Where to look and which idea to apply, without the fix itself."""
    signatures: tuple[tuple[str, str], ...] = ()
    """(check id, reason) for the checks that fail with no graph to replay (probes and timings): a failure of
    that check with that ``CheckResult.reason`` is this bug. For ``INTEGRITY`` the second item is a regular
    expression that matches one of the report's integrity violations instead."""
    exponential: bool = False
    """Its backward walks every path of the graph: replays are skipped on graphs with many."""


BUGS: Final[tuple[Bug, ...]] = (
    # ---- accumulation -------------------------------------------------------------------
    Bug("overwrite", "gradient overwritten instead of accumulated", "accumulation", "core",
        "When a tensor feeds several operations, each contribution replaces the previous one instead of being "
        "added to it. Only the last contribution survives, so anything used twice (x + x, x * x, x @ x, a "
        "diamond) gets too small a gradient.",
        "Look at the line that stores a gradient for a tensor that may already have one: a tensor used n "
        "times receives n contributions, and all of them count."),
    Bug("aliased_grads", "aliased gradient buffers added in place", "accumulation", "core",
        "One gradient tensor is handed to several inputs (addition passes the same tensor to both operands) and "
        "later contributions are added into it in place. Every holder of that tensor sees the addition, so a "
        "tensor can receive gradient that belongs to another.",
        "Follow which gradient tensors are shared between inputs, and what an in-place += does to every name "
        "that refers to the same tensor object."),
    Bug("passes_reset", "leaf gradients reset by every backward()", "accumulation", "followups",
        "Each backward() call replaces a leaf's .grad instead of adding to it. PyTorch accumulates across "
        "backward calls (that is how gradient accumulation over mini-batches works), so two passes give the "
        "gradient of one.",
        "Think about what .grad holds after two forward passes and two backward() calls in PyTorch, and who is "
        "supposed to reset it."),
    Bug("embedding_overwrite", "repeated embedding ids overwritten", "accumulation", "extensions",
        "The lookup's backward writes each row's gradient into the table's gradient by assignment. When an id "
        "occurs several times in the batch, only one of its rows survives instead of their sum.",
        "A lookup is a gather; ask what the backward of a gather is when the same row was gathered more than "
        "once."),
    # ---- order ----------------------------------------------------------------------------
    Bug("discovery_order", "nodes processed in discovery order", "order", "core",
        "Backward runs each node's rule as soon as a depth-first search reaches it from the output, not after "
        "all of the node's consumers have run. A node reached again through another path has already passed "
        "on an incomplete gradient, and the late contributions are lost.",
        "A node may pass its gradient on only when that gradient is complete: ask which nodes must have run "
        "before it, and which order guarantees that."),
    Bug("breadth_first", "breadth-first order instead of topological order", "order", "core",
        "Backward visits the graph breadth-first from the output, once per node. Breadth-first order is not a "
        "topological order: a node reached by a short path and by a long one runs before the long path has "
        "delivered its contribution.",
        "Breadth-first visits nodes by distance from the output; find a graph where a node's consumers are at "
        "different distances and trace when the node runs."),
    Bug("running_totals", "running totals re-propagated", "order", "core",
        "Each time a node receives a contribution it passes its running total on again, instead of waiting "
        "until its gradient is complete. Earlier contributions are counted once more for every later one, so "
        "reused intermediates get too large a gradient and the work grows exponentially with reuse.",
        "Trace x1 = x0 + x0; x2 = x1 + x1 by hand: how many times does x1 pass something on, and what?",
        exponential=True),
    Bug("path_recursion", "every path walked recursively", "linearity", "core",
        "Backward recursively hands each contribution down every path to the leaves, without a topological "
        "order. The gradients are right, but the work is the number of paths through the graph (2^40 for 40 "
        "stacked diamonds), and a long chain exceeds the recursion limit.",
        "Count how many times a node in the middle of stacked diamonds is visited; each node should be visited "
        "once, after all its consumers.",
        signatures=(("core.order", "every_path"), ("followups.deep_graph", "recursion"),
                    ("followups.deep_graph", "process_died")),
        exponential=True),
    Bug("recursive_topo", "recursive topological sort", "order", "followups",
        "The topological sort calls itself for each input, one Python frame per node along the deepest path. A "
        "chain of 100,000 nodes exceeds the recursion limit, and raising the limit only moves the crash to the "
        "C stack.",
        "Depth of recursion grows with the depth of the graph; think of a way to walk a graph whose depth does "
        "not use the call stack.",
        signatures=(("followups.deep_graph", "recursion"), ("followups.deep_graph", "process_died"))),
    # ---- op rules -------------------------------------------------------------------------
    Bug("matmul_left_flipped", "matmul backward: left operand's gradient transposed wrong", "matmul", "core",
        "For C = A @ B the gradient of A is computed with the transpose on the wrong side or the factors in the "
        "wrong order. Shapes only fit for square matrices, where the values are still wrong unless the "
        "matrices commute.",
        "Write out the shapes: G is (n, p), A is (n, m), B is (m, p); the gradient of A must be (n, m) and use "
        "G and B."),
    Bug("matmul_right_flipped", "matmul backward: right operand's gradient transposed wrong", "matmul", "core",
        "For C = A @ B the gradient of B is computed with the transpose on the wrong side or the factors in the "
        "wrong order. Shapes only fit for square matrices, where the values are still wrong unless the "
        "matrices commute.",
        "Write out the shapes: G is (n, p), A is (n, m), B is (m, p); the gradient of B must be (m, p) and use "
        "A and G."),
    Bug("mul_wrong_operand", "mul backward: wrong operand", "ops", "core",
        "In a * b each operand's gradient is multiplied by the operand itself instead of by the other one. The "
        "product rule says the gradient of a is the upstream gradient times b, and of b times a.",
        "Differentiate a * b with respect to a, then with respect to b: which factor is left over each time?"),
    Bug("sum_not_expanded", "sum backward: gradient not expanded", "shapes", "core",
        "sum() hands its one-element upstream gradient back unchanged instead of spreading it over the input's "
        "shape. A matrix that is summed directly gets a 0-d gradient instead of one of its own shape.",
        "Every element of the input contributed once to the sum: what shape must the input's gradient have, "
        "and what does each element receive?"),
    Bug("relu_mask_from_grad", "relu backward: mask taken from the upstream gradient", "routing", "core",
        "relu's backward lets the gradient through where the upstream gradient is positive instead of where "
        "the input was positive. Negative inputs then pass gradient, and positive inputs lose negative "
        "gradient.",
        "The mask of relu's derivative depends on the forward pass: which tensor decides whether an element "
        "was active?"),
    Bug("relu_grad_at_zero", "relu backward: gradient 1 at zero", "routing", "core",
        "relu's backward lets the gradient through where the input is >= 0 instead of > 0. PyTorch (and the "
        "contract) gives relu a gradient of 0 at exactly 0, so inputs that are exactly zero get a gradient "
        "they should not.",
        "Look at which side of zero the mask puts an input of exactly 0.0; integer inputs and cancellations "
        "(x - x) produce exact zeros."),
    Bug("cross_entropy_unshifted", "cross-entropy without the max shift", "numerics", "followups",
        "Softmax and log-sum-exp exponentiate the raw logits, and exp() overflows to inf beyond about 709 in "
        "float64. For logits of magnitude 1e4 the loss becomes inf or nan although the true loss is finite.",
        "log-sum-exp is unchanged when the same constant is subtracted from every logit of a row; pick a "
        "constant that keeps exp() finite."),
    Bug("mean_unscaled", "batch mean's gradient scaled as a sum", "ops", "followups",
        "The forward pass averages the loss over the batch, but the backward pass does not divide by the batch "
        "size. The gradient is N times too large, as if the loss were a sum.",
        "The loss is a mean over N rows: what factor does that put in front of every row's gradient?"),
    Bug("relu_in_place", "relu writes into its input", "side_effects", "core",
        "relu clamps its input's storage in place instead of building a new tensor. The input (a leaf the user "
        "still holds, or a value another rule saved for backward) silently becomes its relu.",
        "Check which ops return a new tensor and which write into the one they were given; a forward pass "
        "must leave its inputs as they were.",
        signatures=(("core.inputs_unchanged", "input_changed"),)),
    # ---- requires_grad and gradient types ------------------------------------------------
    Bug("requires_grad_ignored", "requires_grad not propagated", "requires_grad", "core",
        "Every result requires grad and records its inputs, whatever its inputs are. A result built only from "
        "tensors that need no gradient should not require grad (and torch would refuse backward on it).",
        "Decide a result's requires_grad when it is created, from its inputs."),
    Bug("grad_has_history", "gradients carry torch autograd history", "shapes", "core",
        "The engine tells torch to record its own graph (requires_grad on the torch tensors), so the gradients "
        "it returns carry torch's autograd history. Gradients must be plain torch tensors computed by the "
        "engine's own rules, and torch's autograd is not allowed.",
        "The torch tensors are only storage: look for requires_grad being set on a torch tensor rather than on "
        "your own Tensor.",
        signatures=((INTEGRITY, r"torch autograd history|requires_grad_\(\)|torch tensors that require grad"),)),
    # ---- follow-ups: broadcasting and the upstream gradient ------------------------------
    Bug("broadcast_not_reduced", "broadcast gradient not reduced", "broadcasting", "followups",
        "When + or * stretches an operand (a bias row, a column, a scalar tensor), its gradient keeps the "
        "stretched shape instead of being summed back to the operand's own shape. The gradient has the wrong "
        "shape and misses the sum over the copies.",
        "Broadcasting copies an operand along some axes; the backward of a copy is a sum over those axes."),
    Bug("broadcast_wrong_axes", "broadcast gradient reduced over the wrong axes", "broadcasting", "followups",
        "The gradient of a broadcast operand is summed over the trailing axes instead of the leading axes that "
        "broadcasting added. A bias row (3,) added to a (4, 3) batch gets a (4,) gradient, and for square "
        "batches the right shape with the wrong values.",
        "Broadcasting aligns shapes at the right and adds missing axes at the left: those are the axes to sum "
        "over."),
    Bug("upstream_ignored", "upstream gradient ignored", "upstream", "followups",
        "backward(grad) seeds the output's gradient with ones whatever gradient is passed in. Every gradient is "
        "then the gradient of out.sum() instead of the vector-Jacobian product with the given tensor.",
        "Look at what backward does with its argument: it is the output's gradient."),
    # ---- follow-ups: memory and no_grad -------------------------------------------------
    Bug("graph_kept_alive", "graph kept alive after backward", "memory", "followups",
        "After backward() every node still holds its inputs and the tensors its rule saved. As long as the "
        "output lives, the whole graph and its intermediate values cannot be freed.",
        "Once a node has passed its gradient on, ask what it still needs to keep.",
        signatures=(("followups.memory_release", "graph_alive"),)),
    Bug("no_grad_records", "no_grad() that still records", "memory", "followups",
        "Results computed inside no_grad() still require grad and keep references to their inputs. Evaluation "
        "code under no_grad() then builds a graph nobody will use and keeps its tensors alive.",
        "Results are created in one place; that place should know whether recording is switched on.",
        signatures=(("followups.no_grad", "no_grad_records"), ("followups.no_grad", "no_grad_keeps_inputs"))),
    Bug("no_grad_not_restored", "no_grad() not restored after an exception", "memory", "followups",
        "no_grad() switches recording off on entry and back on after its block, but not when the block raises. "
        "After one exception inside no_grad(), nothing records any more and gradients silently stop.",
        "What runs when the body of a context manager raises? Look at how the previous mode is restored.",
        signatures=(("followups.no_grad", "no_grad_not_restored_after_exception"),)),
    Bug("no_grad_not_nested", "no_grad() switches recording on when it ends", "memory", "followups",
        "no_grad() turns recording off on entry and on again when its block ends, instead of back to what it "
        "found. A no_grad() block inside another one then ends the outer block's mode early: what follows it "
        "records a graph again.",
        "What mode was in force when the block began? That is the one to go back to.",
        signatures=(("followups.no_grad", "no_grad_nested"),)),
)

_BY_ID: Final = {b.id: b for b in BUGS}


def bug(bug_id: str) -> Bug:
    """The catalogued bug with this id (KeyError when there is none)."""
    return _BY_ID[bug_id]
