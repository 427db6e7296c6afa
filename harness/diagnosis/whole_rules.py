"""Wrong rules candidates write for a whole op's backward, not one factor of it: each computes the gradient such a
rule gives, for the replay (``rule_replay``) to hold against what the engine did.

Each takes the step's operands, its result ``y``, the upstream gradient ``g``, the op's parameters and the
operand's slot. It raises ``Unchanged`` where the mistake gives the right gradient at this step (so the replay
hands on the right one there) and ``ValueError`` where it cannot apply at all.
"""

from __future__ import annotations

from typing import Any, Callable, Final

import torch
import torch.nn.functional as F

__all__ = ["Unchanged", "WHOLE_RULE_KINDS", "WHOLE_RULES"]


class Unchanged(Exception):
    """The mutated rule gives the right gradient at this step (nothing broadcast, a symmetric gradient ...)."""


def _stats_constant(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                    slot: int = 0) -> torch.Tensor:
    """batch_norm's gradient with the batch mean and variance taken as constants: g / std."""
    x = operands[0]
    return g / torch.sqrt(x.var(dim=0, unbiased=False, keepdim=True) + params.get("eps", 1e-5))


def _no_onehot(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
               slot: int = 0) -> torch.Tensor:
    """cross_entropy's gradient without the one-hot term: softmax / N."""
    logits = operands[0]
    return g * torch.softmax(logits, dim=1) / logits.shape[0]


def _tiled(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
           slot: int = 0) -> torch.Tensor:
    """avg_pool2d's gradient spread with ``repeat`` (the whole map tiled k x k times) instead of
    ``repeat_interleave`` (each value over its own window)."""
    x, k = operands[0], int(params.get("k", 2))
    tiled = (g / (k * k)).repeat(1, 1, k, k)
    if tiled.shape[-2:] != x.shape[-2:]:
        raise ValueError("the windows do not cover the input")
    if g.shape[-2:] == (1, 1):
        raise Unchanged("one window: tiling and spreading agree")
    return tiled


def _output_over_input(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                       slot: int = 0) -> torch.Tensor:
    """pow's derivative p * x ** (p - 1) written from the saved output as p * y / x: nan (or inf) where x is 0."""
    x, p = operands[0], params.get("p")
    if not bool((x == 0).any()):
        raise Unchanged("no zero in the input: p * y / x is right")
    return g * p * y / x


def _sign_mask(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
               slot: int = 0) -> torch.Tensor:
    """relu's gradient multiplied by sign(x) instead of the mask x > 0: a negative input passes -g back."""
    x = operands[0]
    if not bool((x < 0).any()):
        raise Unchanged("no negative input: sign(x) and the mask agree")
    return g * x.sign()


def _other_mask(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                slot: int = 0) -> torch.Tensor:
    """maximum's gradient for one operand routed with the other operand's mask (a copied line): each operand
    gets the gradient where the other one wins."""
    a, b = operands[0], operands[1]
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise ValueError("a number operand")
    wins = (a >= b) if slot == 1 else (b > a)
    return g * wins.to(g.dtype)


def _output_as_derivative(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                          slot: int = 0) -> torch.Tensor:
    """The upstream gradient multiplied by the op's result instead of its derivative (relu: g * y for g * (x > 0))."""
    if not isinstance(operands[0], torch.Tensor):
        raise ValueError("a number operand")
    return g * y


def _scaled_in_place_first(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                           slot: int = 0) -> torch.Tensor:
    """a * b's gradient for one operand computed from an upstream gradient the other operand's line already
    multiplied in place (``grad_a = g; grad_a *= b``, then ``grad_b = g * a``): g * a * b."""
    a, b = operands[0], operands[1]
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise ValueError("a number operand")
    if torch.equal(operands[slot], torch.ones_like(operands[slot])):
        raise Unchanged("the operand is all ones")
    return g * a * b


def _unflipped_kernel(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                      slot: int = 0) -> torch.Tensor:
    """conv2d's input gradient as a full convolution of g with the kernel not rotated by 180 degrees (a
    cross-correlation's input gradient needs the rotated one)."""
    w = operands[1]
    if slot != 0 or w.dim() != 4:
        raise ValueError("the input's gradient only")
    flipped = w.flip(2, 3)
    if torch.equal(flipped, w):
        raise Unchanged("a kernel symmetric under rotation")
    return F.conv_transpose2d(g, flipped)


def _window_transposed(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                       slot: int = 0) -> torch.Tensor:
    """max_pool2d's gradient sent to the window's maximum with its row and column swapped (a flat index
    decoded as (i % k, i // k) instead of (i // k, i % k))."""
    x, k = operands[0], int(params.get("k", 2))
    n, c, h, w = x.shape
    if h % k or w % k:
        raise ValueError("windows that do not tile the input")
    windows = x.unfold(2, k, k).unfold(3, k, k).reshape(n, c, h // k, w // k, k * k)
    index = windows.argmax(dim=-1)  # the first maximum, as torch routes ties
    swapped = (index % k) * k + index // k
    if torch.equal(swapped, index):
        raise Unchanged("every maximum is on its window's diagonal")
    routed = torch.zeros_like(windows).scatter(-1, swapped.unsqueeze(-1), g.unsqueeze(-1))
    return routed.reshape(n, c, h // k, w // k, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, h, w)


def _window_layout_kept(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                        slot: int = 0) -> torch.Tensor:
    """A pooling gradient built window by window, (N, C, H/k, W/k, k, k), and reshaped straight to the input's
    shape without the inverse of the permute that cut the windows out: each window's values land in the wrong
    pixels."""
    x, k = operands[0], int(params.get("k", 2))
    n, c, h, w = x.shape
    if h % k or w % k:
        raise ValueError("windows that do not tile the input")
    windows = x.reshape(n, c, h // k, k, w // k, k).permute(0, 1, 2, 4, 3, 5)  # (N, C, H/k, W/k, k, k)
    if params.get("mode") == "avg":
        routed = (g / (k * k))[..., None, None].expand(windows.shape)
    else:
        flat = windows.reshape(n, c, h // k, w // k, k * k)
        routed = torch.zeros_like(flat).scatter(-1, flat.argmax(dim=-1, keepdim=True), g.unsqueeze(-1))
        routed = routed.reshape(windows.shape)
    wrong = routed.reshape(n, c, h, w)
    if torch.equal(wrong, routed.permute(0, 1, 2, 4, 3, 5).reshape(n, c, h, w)):
        raise Unchanged("one window across: the layouts agree")
    return wrong


def _reshaped_not_transposed(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                             slot: int = 0) -> torch.Tensor:
    """``.T``'s gradient reshaped to the input's shape instead of transposed back: the shape fits, so nothing
    raises, but the elements land in the wrong places. On a square input a reshape changes nothing, which is the
    gradient passed through untransposed, a rule of its own ("transposed"): this one applies only where the two
    differ, so an engine that forgot the transpose is never told it reshaped."""
    x = operands[0]
    if x.dim() != 2 or x.shape[0] == x.shape[1]:
        raise ValueError("a square input: a reshape is no transpose at all")
    wrong = g.reshape(x.shape)
    if torch.equal(wrong, g.T):
        raise Unchanged("a uniform upstream gradient: reshaping and transposing agree")
    return wrong


def _avg_window_layout_kept(operands: list, y: torch.Tensor, g: torch.Tensor, params: dict[str, Any],
                            slot: int = 0) -> torch.Tensor:
    return _window_layout_kept(operands, y, g, {**params, "mode": "avg"}, slot)


WHOLE_RULE_KINDS: Final[dict[str, Callable[..., torch.Tensor]]] = {
    "stats_constant": _stats_constant,
    "no_onehot": _no_onehot,
    "tiled": _tiled,
    "output_over_input": _output_over_input,
    "sign_mask": _sign_mask,
    "other_mask": _other_mask,
    "output_as_derivative": _output_as_derivative,
    "scaled_in_place_first": _scaled_in_place_first,
    "unflipped_kernel": _unflipped_kernel,
    "window_transposed": _window_transposed,
    "window_layout_kept": _window_layout_kept,
    "avg_window_layout_kept": _avg_window_layout_kept,
    "reshaped_not_transposed": _reshaped_not_transposed,
}
"""Wrong rules candidates write for a whole op's backward (not one factor of it): each computes the wrong gradient."""
WHOLE_RULES: Final[dict[str, tuple[str, ...]]] = {"batch_norm": ("stats_constant",), "cross_entropy": ("no_onehot",),
                                                   "avg_pool2d": ("tiled", "avg_window_layout_kept"),
                                                   "pow": ("output_over_input",),
                                                   "relu": ("sign_mask", "output_as_derivative"),
                                                   "tanh": ("output_as_derivative",),
                                                   "maximum": ("other_mask",), "mul": ("scaled_in_place_first",),
                                                   "conv2d": ("unflipped_kernel",),
                                                   "max_pool2d": ("window_transposed", "window_layout_kept"),
                                                   "transpose": ("reshaped_not_transposed",)}
