"""What each symptom says: the words of a root cause named by a wrong rule or an observed fact.

``{b}`` stands for the operand's name, ``{detail}`` for a measured quantity; ``concept`` places a
symptom under an interview concept (None: the op's own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["Symptom", "SYMPTOMS"]


@dataclass(frozen=True)
class Symptom:
    id: str
    says: str
    """What is wrong, with ``{b}`` for the operand's name and ``{detail}`` for a measured quantity."""
    hint: str
    concept: str | None = None
    """The concept it belongs to; None: the op's own."""


SYMPTOMS: Final[dict[str, Symptom]] = {s.id: s for s in [
    Symptom("forward_unbiased", "normalizes with the unbiased variance (divided by N - 1) in the forward pass",
            "batch normalization divides by the batch size N: torch.var's default (unbiased, N - 1) is not it; "
            "pass unbiased=False (or correction=0)"),
    Symptom("forward_overflow", "computes exp(x) / (1 + exp(x)), which is inf / inf = nan for large x",
            "exp overflows past x of about 709: write sigmoid so that exp only sees values <= 0 "
            "(1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below), or use torch.sigmoid", concept="numerics"),
    Symptom("wrong_value", "computes the wrong value in the forward pass{detail}",
            "check the forward formula of this op against its definition: every gradient after it is judged on "
            "this value"),
    Symptom("raises", "raises {detail} in the forward pass on operands it must accept",
            "run the reproduction below: the op fails before any gradient is computed"),
    Symptom("raises_without_grad", "the backward rule raises {detail} when {b} does not require grad (its .grad is None)",
            "a tensor that does not require grad keeps .grad None: the rule must skip it (or never add to its None)",
            concept="requires_grad"),
    Symptom("requires_grad_flag", "a result's requires_grad is not True exactly when one of its inputs requires grad",
            "set requires_grad on every result from its inputs (any of them requiring grad), and record the graph "
            "only then", concept="requires_grad"),
    Symptom("grad_not_none", "a leaf that does not require grad receives a gradient",
            "skip inputs that do not require grad in backward: their .grad stays None", concept="requires_grad"),
    Symptom("first_path", "a value used twice passes on only the first gradient that reaches it",
            "walk the graph in reverse topological order, so a node passes its gradient on once, after every "
            "consumer has added to it", concept="order"),
    Symptom("all_zero", "every leaf's gradient is zero: the gradients backward computes never reach the leaves",
            "follow one gradient from the output to a leaf: the rule's result must be added into the leaf's .grad "
            "(not replaced by zeros, not dropped at the leaves)", concept="accumulation"),
    Symptom("sign", "the gradient of {b} has the wrong sign: it is the negative of the right one",
            "a flipped sign in this op's backward rule: check which operand carries the minus"),
    Symptom("missing", "{b} gets no gradient from this op",
            "this op's backward rule never adds a gradient to {b}: return (or accumulate) one for every input that "
            "requires grad"),
    Symptom("doubled", "the gradient of {b} is counted twice (2x the right one)",
            "this op's backward adds {b}'s gradient twice, or its rule runs twice: accumulate each contribution "
            "exactly once"),
    Symptom("scaled", "the gradient of {b} is off by a constant factor of {detail}",
            "a constant in this op's backward rule is wrong (a missing or extra 1/n, 2, p ...)"),
    Symptom("per_element", "the gradient of {b} is off by a factor of {detail}",
            "an average divides by the number of elements it averages: its gradient does too"),
    Symptom("missing_factor", "the gradient of {b} misses the factor {detail} of the derivative",
            "write the derivative out as a product and check that the rule multiplies by every factor"),
    Symptom("transposed", "the gradient of {b} is transposed",
            "the shapes of a gradient and its input agree, but the rule hands back the transpose: write the rule "
            "out with index names to see which side the transpose belongs on"),
    Symptom("upstream", "the gradient of {b} ignores the upstream gradient (it is the local derivative alone)",
            "multiply the local derivative by the gradient that flows in from the output (the chain rule)"),
    Symptom("at_input", "the derivative for {b} is evaluated at the input where it must be at the output",
            "this rule is written in terms of the output (like tanh' = 1 - y**2): use the op's result, not its "
            "input"),
    Symptom("at_output", "the derivative for {b} is evaluated at the output where it must be at the input",
            "this rule is written in terms of the input (like log' = 1/x): use the op's input, not its result"),
    Symptom("unreduced", "the gradient of {b} is not summed back to {b}'s shape after broadcasting",
            "a broadcast operand's gradient must be summed over every axis broadcasting stretched",
            concept="broadcasting"),
    Symptom("wrong_axis", "the gradient of {b} is summed over the wrong axis ({detail}) after broadcasting",
            "sum over the axes broadcasting stretched (the leading extra ones, and those where {b} has size 1), "
            "and keep the rest", concept="broadcasting"),
    Symptom("wrong_shape", "the gradient of {b} has the shape of the op's result, not {b}'s own",
            "a gradient has the shape of the tensor it belongs to: expand (sum), reshape back (reshape), or sum "
            "over the axes the op stretched", concept="shapes"),
    Symptom("exponent", "the gradient of {b} uses the wrong power of {b}: {detail}",
            "d(x ** p)/dx = p * x ** (p - 1): check the exponent in the rule"),
    Symptom("tied_all", "at a tie, every tied element of {b} receives the full gradient",
            "a tie's gradient goes to one of the tied elements (torch: the first) or is split evenly; never the "
            "whole of it to each", concept="routing"),
    Symptom("wrong_rule", "the gradient of {b} is wrong, in no simple relation to the right one{detail}",
            "work this op's derivative out again for {b} and compare it with the rule in your backward"),
    Symptom("overwritten", "the gradient this op sends to {b} replaces what {b} already had instead of adding to it",
            "accumulate (+=) into an input's gradient: a value used twice gets both contributions",
            concept="accumulation"),
    Symptom("dtype", "the gradient of {b} has dtype {detail}, not its tensor's",
            "build gradients with the dtype of the data (torch.zeros_like(x), ones_like ...)", concept="grad_types"),
    Symptom("stats_constant", "the gradient of {b} treats the batch mean and variance as constants (it is g / std)",
            "the mean and the variance depend on every element of the batch: differentiate through them, "
            "(g - mean(g) - xhat * mean(g * xhat)) / std over the batch axis"),
    Symptom("no_onehot", "the gradient of {b} leaves out the one-hot term: it is softmax / N",
            "the gradient of the loss with respect to the logits is (softmax - onehot(target)) / N"),
    Symptom("output_over_input", "the gradient of {b} is written as p * y / x from the output, so it is nan "
            "where the input is 0", "p * x ** (p - 1) is finite at x = 0 where p * y / x divides 0 by 0: compute the "
            "derivative from the input, not by dividing the output by it"),
    Symptom("sign_mask", "the gradient of {b} is multiplied by sign(x) instead of the mask x > 0, so a negative "
            "input passes -g back", "relu lets the gradient through where its input was positive and blocks it "
            "elsewhere: multiply by (x > 0), which is 0 for a negative x, not -1"),
    Symptom("other_mask", "the gradient of {b} is routed with the other operand's mask: {b} gets the gradient where "
            "the other operand wins", "each operand of maximum gets the gradient where it is the larger one: "
            "the two masks are complements (a >= b for a, a < b for b)", concept="routing"),
    Symptom("other_guard", "whether {b} gets a gradient is decided by the other operand's requires_grad: a "
            "constant {b} gets one, a {b} that requires grad gets none when the other operand is a constant",
            "each operand's branch of the rule must test its own requires_grad: look for a condition copied from "
            "the other operand's branch", concept="requires_grad"),
    Symptom("output_as_derivative", "the gradient of {b} is the upstream gradient times the op's result, not times "
            "its derivative", "the chain rule multiplies by the derivative: relu's is the mask (x > 0), 0 or 1, so "
            "multiplying by the result scales each gradient by its own value"),
    Symptom("scaled_in_place_first", "the gradient of {b} is computed from an upstream gradient the other operand's "
            "line already multiplied in place (g *= ...), so it is g * a * b",
            "an in-place *= on the upstream gradient changes it for every later use (the other operand's gradient, "
            "a sibling that shares it): build a new tensor (g * b) instead", concept="side_effects"),
    Symptom("unflipped_kernel", "the gradient of {b} convolves the upstream gradient with the kernel not rotated "
            "by 180 degrees", "conv2d computes a cross-correlation: its input's gradient is the full convolution of "
            "g with the kernel flipped along both spatial axes (w.flip(2, 3)), which is conv_transpose2d(g, w)"),
    Symptom("window_transposed", "the gradient of {b} goes to the window's maximum with its row and column swapped",
            "a flat index i into a k x k window is row i // k and column i % k: check how the position of the "
            "maximum is decoded", concept="routing"),
    Symptom("window_layout_kept", "the gradient of {b} is built window by window and reshaped back without undoing "
            "the permute that cut the windows out, so each window's values land in the wrong pixels",
            "cutting (N, C, H, W) into windows takes reshape(N, C, H/k, k, W/k, k) and a permute of the two middle "
            "axes: the gradient needs the same permute again before its reshape to (N, C, H, W)", concept="routing"),
    Symptom("avg_window_layout_kept", "the gradient of {b} is built window by window and reshaped back without "
            "undoing the permute that cut the windows out, so each window's share lands in the wrong pixels",
            "cutting (N, C, H, W) into windows takes reshape(N, C, H/k, k, W/k, k) and a permute of the two middle "
            "axes: the gradient needs the same permute again before its reshape to (N, C, H, W)"),
    Symptom("reshaped_not_transposed", "the gradient of {b} is reshaped to {b}'s shape instead of transposed back: "
            "the shape fits, the elements land in the wrong places", "a reshape keeps the elements in memory order, "
            "a transpose swaps rows and columns: .T's backward is g.T, which is never g.reshape(shape) unless the "
            "gradient is uniform"),
    Symptom("tiled", "the gradient of {b} is tiled over the input (repeat) instead of spread over each window",
            "each output value's gradient belongs to its own k x k window: repeat_interleave along both spatial "
            "axes (or index the windows), not repeat, which copies the whole map side by side"),
    Symptom("unreduced_raises", "the gradient of {b} keeps the broadcast shape, and adding it into {b}'s gradient "
            "raises", "sum a broadcast operand's gradient back to its own shape before adding it",
            concept="broadcasting"),
    Symptom("state_left_over", "results depend on what ran before: a graph this engine gets right as the first "
            "one a fresh process runs comes out wrong after others (state left over from earlier graphs or "
            "backward passes)", "look for state that outlives one backward() call (a module-level table, a visited "
            "set, a tape, entries keyed by id() of tensors that are gone: Python reuses ids) and clear it, or keep "
            "it local to backward", concept="accumulation"),
    Symptom("read_only", "a gradient is added in place into an array that is a read-only view (an expand or a "
            "broadcast_to of another)",
            "copy a gradient before storing it, or add out of place (g = g + d): a view from expand or broadcast_to "
            "may not be written into", concept="accumulation"),
    Symptom("once", "a tensor used as both of its operands gets only one of its two gradients",
            "an op that uses one tensor twice (x * x, x + x, x @ x) hands it two contributions: key what the rule "
            "returns by operand position, not by the tensor, and add both", concept="accumulation"),
    Symptom("no_keepdim", "the gradient of {b} is summed over the broadcast axes without keepdim, so it loses "
            "{b}'s axes of size 1",
            "sum the stretched axes with keepdim=True (or reshape the sum to {b}'s shape), so a (1, m) bias gets a "
            "(1, m) gradient", concept="broadcasting"),
    Symptom("in_place", "writes into {b}: its values change when the op runs",
            "never change an operand's .data: compute the result into a new tensor (x.clamp(min=0), not "
            "x[x < 0] = 0), since the graph still needs the input as it was", concept="side_effects"),
    Symptom("swapped", "computes {detail}: its operands are swapped",
            "a number on the left reaches your class's reflected method (`__rsub__`, `__rtruediv__`, `__rpow__`) as "
            "(self, other) with self the tensor on the right: compute other - self, not self - other"),
    Symptom("value_dtype", "returns a {detail} result for float64 operands",
            "keep the dtype you are given (torch does): wrap results with the operands' dtype, not a fixed float32",
            concept="conventions"),
    Symptom("not_a_tensor", "returns {detail} instead of a tensor of the engine's class",
            "every op builds its result as your Tensor class and returns it: look for a missing `return`"),
    Symptom("float32", "gradients come back as float32 for float64 tensors{detail}",
            "a gradient has its tensor's dtype: seed backward with torch.ones_like(output) and build buffers with "
            "zeros_like/ones_like, not torch.ones(shape) or torch.zeros(shape), which are float32",
            concept="grad_types"),
]}
