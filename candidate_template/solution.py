"""Your autograd engine: fill in the methods of ``Tensor`` below.

A ``Tensor`` wraps a ``torch.Tensor`` and remembers how it was computed, so
that ``backward()`` can fill in the gradient of a one-element output with
respect to every tensor that requires one. Torch tensors are only storage here:
every gradient must come from your own rules. Calling torch's autograd
(``torch.autograd``, ``torch.Tensor.backward``, ``requires_grad_()`` on the
data) is an integrity violation, not a shortcut.

Check your work at any time:

    grade solution.py                 # every level, human-readable report
    grade solution.py --level core    # only the interview itself
    grade solution.py --watch         # grade again every time you save

Semantics follow PyTorch; the grader compares every value and gradient with
torch's own autograd in float64. The core level is the interview. The
follow-ups and extensions at the bottom of this file are optional: a member you
do not define is reported as "not attempted", never as an error.
"""

from __future__ import annotations

import torch


class Tensor:
    """A torch tensor plus the record of how it was computed."""

    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        """Wrap ``data``.

        ``.data`` holds the values, ``.requires_grad`` says whether backward must
        produce a gradient for this tensor, and ``.grad`` stays ``None`` until a
        backward pass fills it in. You will want to remember more here (what the
        tensor was computed from, how to pass a gradient back to those inputs).
        """
        self.data = data
        self.requires_grad = requires_grad
        self.grad: torch.Tensor | None = None

    # ---- core: the interview ----------------------------------------------
    # Rules every check enforces:
    # - a result requires grad exactly when at least one of its inputs does;
    # - a tensor that does not require grad keeps ``grad is None`` after backward;
    # - every gradient is a plain torch tensor with its own tensor's shape;
    # - a tensor used several times (also twice by one op: ``a * a``, ``x @ x``)
    #   receives the sum of all its contributions;
    # - a node passes its gradient on only once that gradient is complete
    #   (reverse topological order), so backward is linear in the graph's size.

    def __add__(self, other: Tensor) -> Tensor:
        """``self + other``, elementwise, operands of the same shape."""
        raise NotImplementedError("not implemented: __add__")

    def __mul__(self, other: Tensor) -> Tensor:
        """``self * other``, elementwise, operands of the same shape."""
        raise NotImplementedError("not implemented: __mul__")

    def __matmul__(self, other: Tensor) -> Tensor:
        """``self @ other`` for 2-D operands: ``(n, m) @ (m, p) -> (n, p)``."""
        raise NotImplementedError("not implemented: __matmul__")

    def relu(self) -> Tensor:
        """``max(x, 0)`` elementwise; like PyTorch, no gradient flows where ``x <= 0``."""
        raise NotImplementedError("not implemented: relu")

    def sum(self) -> Tensor:
        """The sum of all elements, as a one-element (0-d) result."""
        raise NotImplementedError("not implemented: sum")

    def backward(self, grad: torch.Tensor | None = None) -> None:
        """Fill in ``.grad`` of every tensor this one was computed from that requires grad.

        Core: called without ``grad`` on a one-element output, whose own gradient is 1.
        Follow-up (optional): accept ``grad``, a torch tensor of this tensor's
        shape, as the upstream gradient of a non-scalar output.
        Follow-up (optional): a second backward after a second forward pass adds
        to the leaves' existing ``.grad``, as in PyTorch.
        """
        raise NotImplementedError("not implemented: backward")

    # ---- follow-ups (optional) ---------------------------------------------
    # Broadcasting: let ``+`` and ``*`` take broadcast-compatible shapes (a bias
    # row, a column, a scalar tensor). Each operand's gradient must then be
    # summed back to that operand's own shape.
    #
    # Deep graphs: backward over a chain of 100,000+ nodes must not hit Python's
    # recursion limit, and its time must stay linear in the graph's size.
    #
    # Memory release: after backward(), the output should no longer keep the
    # graph's intermediate tensors alive.
    #
    # def cross_entropy(self, target: torch.Tensor) -> Tensor:
    #     """Fused softmax + negative log-likelihood of logits ``(N, C)`` against an
    #     int64 ``target`` of shape ``(N,)``, averaged over the batch. Must stay finite
    #     for logits of magnitude 1e4; its gradient is ``(softmax - onehot) / N``."""

    # ---- extensions (optional; method names are torch's) -----------------------
    # def __neg__(self) -> Tensor: ...                  # -a
    # def __sub__(self, other: Tensor) -> Tensor: ...   # a - b
    # def __truediv__(self, other: Tensor) -> Tensor: ...  # a / b
    # def __pow__(self, p: float) -> Tensor: ...        # a ** p, p a Python number
    # def exp(self) -> Tensor: ...
    # def log(self) -> Tensor: ...
    # def tanh(self) -> Tensor: ...
    # def sigmoid(self) -> Tensor: ...
    # def mean(self) -> Tensor: ...                     # mean of all elements
    # @property
    # def T(self) -> Tensor: ...                        # transpose of a 2-D tensor
    # def reshape(self, shape: tuple[int, ...]) -> Tensor: ...
    # def maximum(self, other: Tensor) -> Tensor: ...   # elementwise max; the gradient goes to the winner
    # def max_pool2d(self, k: int) -> Tensor: ...       # (N, C, H, W), non-overlapping k x k windows
    # def avg_pool2d(self, k: int) -> Tensor: ...
    # def conv2d(self, weight: Tensor) -> Tensor: ...   # weight (O, C, kh, kw); no padding, stride 1
    # def __getitem__(self, ids: torch.Tensor) -> Tensor: ...  # W[ids], int64 ids: an embedding lookup
    # def batch_norm(self, eps: float = 1e-5) -> Tensor: ...   # over axis 0, no affine parameters
    # Python numbers as operands (2 * a, a + 1, 1 - a): __radd__, __rmul__, __rsub__, __rtruediv__,
    # and numbers accepted by the binary operators above.


# ---- follow-up (optional): no_grad ------------------------------------------
# A module-level context manager. Inside ``with no_grad():`` results do not
# require grad and keep no reference to their inputs (nothing to backward through,
# nothing kept alive).
#
# import contextlib
#
# @contextlib.contextmanager
# def no_grad():
#     ...
