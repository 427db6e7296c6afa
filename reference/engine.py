"""A small reverse-mode autograd engine over torch tensors: the model answer.

Torch tensors are only storage here; every gradient comes from the rules below.
Each op builds its result with ``_record``, handing over the function that
turns the result's gradient into its inputs' gradients and the few tensors
that function reads. Reading an op and its derivative together, top to bottom,
is the point of this file.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Callable, Iterator, Sequence

import torch

__all__ = ["Tensor", "no_grad", "is_grad_enabled"]

_grad_enabled = True


def is_grad_enabled() -> bool:
    return _grad_enabled


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Inside this block results record nothing: no parents, no saved tensors."""
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous


BackwardFn = Callable[[torch.Tensor, Sequence[torch.Tensor]], Sequence["torch.Tensor | None"]]


class _Node:
    """How a result was made: where its inputs came from, its backward rule and what that rule reads."""

    __slots__ = ("op", "inputs", "backward", "saved", "versions", "released")

    def __init__(self, op: str, parents: Sequence[Tensor], backward: BackwardFn, saved: tuple[torch.Tensor, ...]):
        self.op = op
        # The graph links to the inputs' nodes, not to the input tensors: an intermediate's
        # values are freed as soon as the user drops it, unless a rule saved them. Leaves are
        # kept themselves (their .grad is filled in); inputs that need no gradient are None.
        self.inputs = tuple(_input_of(p) for p in parents)
        self.backward = backward
        self.saved = saved
        # Torch bumps a tensor's _version on every in-place write; a changed
        # version means the rule would read values the forward never saw.
        self.versions = tuple(t._version for t in saved) if saved else ()
        self.released = False

    def saved_tensors(self) -> Sequence[torch.Tensor]:
        if self.released:
            raise RuntimeError(
                f"backward through the graph a second time: the {self.op} node's saved tensors were "
                "released by the first backward(); run the forward pass again"
            )
        for i, (t, version) in enumerate(zip(self.saved, self.versions)):
            if t._version != version:
                raise RuntimeError(
                    f"a tensor saved by {self.op} (saved tensor {i}) was modified in place after the "
                    "forward pass; its gradient would be wrong. Use an out-of-place op instead"
                )
        return self.saved

    def release(self) -> None:
        # Dropping inputs and saved tensors is what lets the intermediates be freed
        # while the output is still alive.
        self.inputs = ()
        self.saved = ()
        self.released = True


def _input_of(t: Tensor) -> _Node | Tensor | None:
    if t._node is not None:
        return t._node
    return t if t.requires_grad else None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _broadcast(rule: BackwardFn, a: torch.Tensor, b: torch.Tensor) -> BackwardFn:
    """``rule`` for operands that broadcasting may have stretched: each gradient is summed back to its own shape."""
    if a.shape == b.shape:
        return rule  # the common case pays nothing
    shapes = (a.shape, b.shape)
    return lambda g, s: tuple(d if d is None else _unbroadcast(d, shape) for d, shape in zip(rule(g, s), shapes))


def _unbroadcast(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a gradient back to ``shape``: the backward of an implicit copy is a sum."""
    if grad.shape == shape:
        return grad
    extra = grad.dim() - len(shape)
    grad = grad.sum(dim=tuple(range(extra))) if extra > 0 else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(dim=stretched, keepdim=True)
    return grad.reshape(shape)


class Tensor:
    """A torch tensor plus the record of how it was computed."""

    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
        self.requires_grad = requires_grad
        self.grad: torch.Tensor | None = None
        self._node: _Node | None = None

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({self.data!r}{grad})"

    @property
    def shape(self) -> torch.Size:
        return self.data.shape

    # ---- plumbing ----

    @staticmethod
    def _record(data: torch.Tensor, op: str, parents: Sequence[Tensor], backward: BackwardFn,
                saved: Sequence[torch.Tensor] = ()) -> Tensor:
        out = Tensor(data)
        if _grad_enabled and (parents[0].requires_grad or (len(parents) > 1 and parents[1].requires_grad)):
            out.requires_grad = True
            out._node = _Node(op, parents, backward, tuple(saved))
        return out

    # ---- core ops: forward and backward side by side ----

    def __add__(self, other: Tensor | float) -> Tensor:
        if _is_number(other):
            # A Python number is a constant: the gradient passes straight to self.
            return self._record(self.data + other, "add", (self,), lambda g, _: (g,))
        if not isinstance(other, Tensor):
            return NotImplemented
        a, b = self.data, other.data
        # d(a + b) = da + db: the gradient passes through unchanged, nothing is saved.
        return self._record(a + b, "add", (self, other), _broadcast(lambda g, _: (g, g), a, b))

    def __mul__(self, other: Tensor | float) -> Tensor:
        if _is_number(other):
            # Scaling by a constant needs neither operand, only the constant.
            return self._record(self.data * other, "mul", (self,), lambda g, _: (g * other,))
        if not isinstance(other, Tensor):
            return NotImplemented
        a, b = self.data, other.data
        need_a, need_b = self.requires_grad, other.requires_grad
        # Each operand's gradient reads the *other* operand: keep only what a rule will read.
        if need_a and need_b:
            rule, saved = (lambda g, s: (g * s[1], g * s[0])), (a, b)
        elif need_a:
            rule, saved = (lambda g, s: (g * s[0], None)), (b,)
        else:
            rule, saved = (lambda g, s: (None, g * s[0])), (a,)
        return self._record(a * b, "mul", (self, other), _broadcast(rule, a, b), saved)

    def __matmul__(self, other: Tensor) -> Tensor:
        if not isinstance(other, Tensor):
            return NotImplemented
        a, b = self.data, other.data
        need_a, need_b = self.requires_grad, other.requires_grad
        # C = A B: dA = G B^T reads only B and dB = A^T G reads only A; a product nobody
        # needs (the input batch's gradient) is neither kept for nor computed.
        if need_a and need_b:
            return self._record(a @ b, "matmul", (self, other), lambda g, s: (g @ s[1].T, s[0].T @ g), (a, b))
        if need_a:
            return self._record(a @ b, "matmul", (self, other), lambda g, s: (g @ s[0].T, None), (b,))
        return self._record(a @ b, "matmul", (self, other), lambda g, s: (None, s[0].T @ g), (a,))

    def relu(self) -> Tensor:
        out = self.data.clamp(min=0)
        # The gradient flows where x > 0 (PyTorch passes none at exactly 0). The output is x
        # there and 0 elsewhere, so its sign is that 0/1 mask, already in the right dtype.
        return self._record(out, "relu", (self,), lambda g, s: (g * s[0].sign(),), (out,))

    def sum(self) -> Tensor:
        shape = self.data.shape
        # Every element contributed once, so each receives the output's gradient.
        return self._record(self.data.sum(), "sum", (self,), lambda g, _: (g.expand(shape),))

    # ---- derived ops, built from the primitives above ----

    def __radd__(self, other: float) -> Tensor:
        return self + other

    def __rmul__(self, other: float) -> Tensor:
        return self * other

    def __neg__(self) -> Tensor:
        return self * -1.0

    def __sub__(self, other: Tensor | float) -> Tensor:
        if _is_number(other):
            return self + (-other)
        return self + (-other) if isinstance(other, Tensor) else NotImplemented

    def __rsub__(self, other: float) -> Tensor:
        return (-self) + other

    def __truediv__(self, other: Tensor | float) -> Tensor:
        if _is_number(other):
            return self * (1.0 / other)
        return self * other ** -1 if isinstance(other, Tensor) else NotImplemented

    def __rtruediv__(self, other: float) -> Tensor:
        return self ** -1 * other

    def mean(self) -> Tensor:
        return self.sum() * (1.0 / self.data.numel())

    # ---- extension ops with rules of their own ----

    def __pow__(self, p: float) -> Tensor:
        if not isinstance(p, (int, float)):
            return NotImplemented
        x = self.data
        if p == 0:
            # x ** 0 is constant; the general rule would give 0 * 0 ** -1 = nan at x == 0.
            return self._record(torch.ones_like(x), "pow", (self,), lambda g, _: (torch.zeros_like(g),))
        return self._record(x ** p, "pow", (self,), lambda g, s: (g * p * s[0] ** (p - 1),), (x,))

    def exp(self) -> Tensor:
        out = self.data.exp()
        # The derivative of exp is exp itself: keep the output, not the input.
        return self._record(out, "exp", (self,), lambda g, s: (g * s[0],), (out,))

    def log(self) -> Tensor:
        x = self.data
        return self._record(x.log(), "log", (self,), lambda g, s: (g / s[0],), (x,))

    def tanh(self) -> Tensor:
        out = self.data.tanh()
        # tanh' = 1 - tanh^2 is a function of the output alone.
        return self._record(out, "tanh", (self,), lambda g, s: (g * (1 - s[0] * s[0]),), (out,))

    def sigmoid(self) -> Tensor:
        out = self.data.sigmoid()
        return self._record(out, "sigmoid", (self,), lambda g, s: (g * s[0] * (1 - s[0]),), (out,))

    @property
    def T(self) -> Tensor:
        # Moving values around needs no values back: the inverse move is another transpose.
        return self._record(self.data.T, "transpose", (self,), lambda g, _: (g.T,))

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        original = self.data.shape
        return self._record(self.data.reshape(target), "reshape", (self,), lambda g, _: (g.reshape(original),))

    def maximum(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        # The winner takes the whole gradient; a tie splits it, as PyTorch does.
        wins = (a > b).to(a.dtype) + 0.5 * (a == b).to(a.dtype)

        def backward(g: torch.Tensor, s: Sequence[torch.Tensor]) -> tuple:
            (w,) = s
            return (g * w, g * (1 - w))

        return self._record(torch.maximum(a, b), "maximum", (self, other), _broadcast(backward, a, b), (wins,))

    def max_pool2d(self, k: int) -> Tensor:
        n, c, h, w = self.data.shape
        windows = _windows(self.data, k)
        out, where = windows.max(dim=-1)  # first maximum in a window, like torch

        def backward(g: torch.Tensor, s: Sequence[torch.Tensor]) -> tuple:
            (idx,) = s
            routed = torch.zeros(*idx.shape, k * k, dtype=g.dtype).scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
            return (_unwindows(routed, (n, c, h, w), k),)

        # Routing needs only which element won each window.
        return self._record(out, "max_pool2d", (self,), backward, (where,))

    def avg_pool2d(self, k: int) -> Tensor:
        shape = self.data.shape
        out = _windows(self.data, k).mean(dim=-1)

        def backward(g: torch.Tensor, _: Sequence[torch.Tensor]) -> tuple:
            spread = (g / (k * k)).unsqueeze(-1).expand(*g.shape, k * k)
            return (_unwindows(spread, shape, k),)

        return self._record(out, "avg_pool2d", (self,), backward)

    def conv2d(self, weight: Tensor) -> Tensor:
        x, w = self.data, weight.data
        n, _, h, wd = x.shape
        o, _, kh, kw = w.shape
        ho, wo = h - kh + 1, wd - kw + 1
        cols = torch.nn.functional.unfold(x, (kh, kw))  # (N, C*kh*kw, L): a convolution is a matmul
        out = (w.reshape(o, -1) @ cols).reshape(n, o, ho, wo)

        need_x, need_w = self.requires_grad, weight.requires_grad

        def backward(g: torch.Tensor, s: Sequence[torch.Tensor]) -> tuple:
            x_s, w_s = s
            g_cols = g.reshape(n, o, ho * wo)
            dx = dw = None
            if need_w:
                # The kernel correlates the input with the upstream gradient over every position...
                cols_s = torch.nn.functional.unfold(x_s, (kh, kw))
                dw = (g_cols @ cols_s.transpose(1, 2)).sum(0).reshape(w_s.shape)
            if need_x:
                # ...and the input gradient folds the kernel back over the positions it touched.
                dx = torch.nn.functional.fold(w_s.reshape(o, -1).T @ g_cols, (h, wd), (kh, kw))
            return (dx, dw)

        return self._record(out, "conv2d", (self, weight), backward, (x, w))

    def __getitem__(self, ids: torch.Tensor) -> Tensor:
        table_shape = self.data.shape

        def backward(g: torch.Tensor, s: Sequence[torch.Tensor]) -> tuple:
            (idx,) = s
            # A gather's backward is a scatter-add: repeated ids sum their rows.
            flat = g.reshape(-1, *table_shape[1:])
            return (torch.zeros(table_shape, dtype=g.dtype).index_add_(0, idx.reshape(-1), flat),)

        return self._record(self.data[ids], "index", (self,), backward, (ids,))

    def batch_norm(self, eps: float = 1e-5) -> Tensor:
        x = self.data
        mean = x.mean(dim=0)
        invstd = (x.var(dim=0, unbiased=False) + eps).rsqrt()
        xhat = (x - mean) * invstd

        def backward(g: torch.Tensor, s: Sequence[torch.Tensor]) -> tuple:
            xh, inv = s
            # The batch statistics depend on every sample, hence the two batch-wide sums.
            return (inv * (g - g.mean(dim=0) - xh * (g * xh).mean(dim=0)),)

        return self._record(xhat, "batch_norm", (self,), backward, (xhat, invstd))

    def cross_entropy(self, target: torch.Tensor) -> Tensor:
        z = self.data
        n = z.shape[0]
        # Subtracting the row maximum keeps exp() finite for logits of any size.
        shifted = z - z.max(dim=1, keepdim=True).values
        logsumexp = shifted.exp().sum(dim=1).log()
        rows = torch.arange(n)
        loss = (logsumexp - shifted[rows, target]).mean()
        probs = (shifted - logsumexp.unsqueeze(1)).exp()

        def backward(g: torch.Tensor, s: Sequence[torch.Tensor]) -> tuple:
            p, t = s
            d = p.clone()
            d[torch.arange(p.shape[0]), t] -= 1
            return (d * (g / p.shape[0]),)

        return self._record(loss, "cross_entropy", (self,), backward, (probs, target))

    # ---- backward ----

    def backward(self, grad: torch.Tensor | None = None) -> None:
        """Fill ``.grad`` of every leaf that requires grad and reaches this tensor."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError(
                    f"backward() without a gradient needs a one-element output, got shape {tuple(self.data.shape)}"
                )
            grad = torch.ones_like(self.data)
        elif tuple(grad.shape) != tuple(self.data.shape):
            raise RuntimeError(f"gradient of shape {tuple(grad.shape)} for an output of shape {tuple(self.data.shape)}")

        root = _input_of(self)
        with _collector_paused():
            grads: dict[int, torch.Tensor] = {id(root): grad}
            for item in reversed(_topological_order(root)):
                g = grads.pop(id(item), None)
                if isinstance(item, Tensor):
                    if g is not None:
                        # Leaf: accumulate across backward passes, as PyTorch does. Clone so two
                        # leaves never share one tensor that later in-place updates would alias.
                        item.grad = g.clone() if item.grad is None else item.grad + g
                    continue
                node = item
                if g is not None:
                    for target, pg in zip(node.inputs, node.backward(g, node.saved_tensors())):
                        if pg is None or target is None:
                            continue
                        key = id(target)
                        # Out of place: the same tensor may have been handed to several inputs.
                        grads[key] = grads[key] + pg if key in grads else pg
                node.release()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Backward makes and drops many small acyclic objects (stack entries, grads): left on,
    the cycle collector would rescan the whole live graph again and again, finding nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _topological_order(root: _Node | Tensor) -> list[_Node | Tensor]:
    """Post-order DFS without recursion: inputs always come before their results.

    The graph's vertices are nodes and the leaves that require grad. Keyed by ``id``
    so each is visited once however many paths reach it, which is what makes
    backward linear in the size of the graph.
    """
    if isinstance(root, _Node) and root.released:
        root.saved_tensors()  # raises the "second backward" error
    order: list[_Node | Tensor] = []
    visited = {id(root)}
    stack: list[tuple[_Node | Tensor, Iterator[_Node | Tensor | None]]] = [(root, iter(_inputs(root)))]
    while stack:
        item, inputs = stack[-1]
        for child in inputs:
            if child is not None and id(child) not in visited:
                visited.add(id(child))
                stack.append((child, iter(_inputs(child))))
                break
        else:
            stack.pop()
            order.append(item)
    return order


def _inputs(item: _Node | Tensor) -> tuple[_Node | Tensor | None, ...]:
    return item.inputs if isinstance(item, _Node) else ()


def _windows(x: torch.Tensor, k: int) -> torch.Tensor:
    """(N, C, H, W) -> (N, C, H/k, W/k, k*k): one row per pooling window."""
    n, c, h, w = x.shape
    return x.reshape(n, c, h // k, k, w // k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, h // k, w // k, k * k)


def _unwindows(windows: torch.Tensor, shape: Sequence[int], k: int) -> torch.Tensor:
    n, c, h, w = shape
    return windows.reshape(n, c, h // k, w // k, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, h, w)

