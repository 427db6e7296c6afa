# My autograd engine for the interview.
#
# The idea (as I understand it):
#   * Every Tensor stores its data (a torch tensor) and, if it was produced by an
#     operation, the tensors it was produced FROM (its "parents") plus a little
#     function that knows how to push the gradient from the output back into
#     those parents (the chain rule for that one op).
#   * backward() first finds an order of all the tensors in the graph such that
#     every tensor comes AFTER all the tensors that were used to compute it
#     (a topological order). Then it walks that order BACKWARDS, so that when we
#     process a tensor, every tensor that used it has already sent its gradient
#     contribution. That is what makes accumulation (x used twice) correct.
#   * I do NOT use torch's autograd anywhere. torch is only used as an array library.

import contextlib

import torch


# ---------------------------------------------------------------------------
# no_grad support
# ---------------------------------------------------------------------------
# A simple module-level switch. When it is False, new tensors are created
# without parents and with requires_grad=False, so nothing is recorded.
_GRAD_ON = True


@contextlib.contextmanager
def no_grad():
    global _GRAD_ON
    # remember what it was before, so nested "with no_grad()" blocks work
    old_value = _GRAD_ON
    _GRAD_ON = False
    try:
        yield
    finally:
        # put it back even if the body raised an exception
        _GRAD_ON = old_value


# ---------------------------------------------------------------------------
# helper for broadcasting
# ---------------------------------------------------------------------------
def unbroadcast(grad, target_shape):
    """If an operand was broadcast in the forward pass, its gradient has the
    (bigger) broadcast shape. Every copy of the operand contributed, so we have
    to SUM the gradient back down to the operand's real shape."""
    # Step 1: broadcasting can add new leading dimensions -> sum them away
    number_of_extra_dims = grad.dim() - len(target_shape)
    for _ in range(number_of_extra_dims):
        grad = grad.sum(dim=0)
    # Step 2: dimensions that had size 1 in the operand but were stretched
    # -> sum along them, but keep the dimension (size 1)
    for dim_index in range(len(target_shape)):
        if target_shape[dim_index] == 1 and grad.shape[dim_index] != 1:
            grad = grad.sum(dim=dim_index, keepdim=True)
    return grad


def accumulate(tensor, new_grad):
    """Add new_grad into tensor.grad (creating it the first time).
    I make a fresh tensor every time instead of doing += in place, because
    in-place += would also change any other tensor that happens to share the
    same torch tensor object."""
    if tensor.grad is None:
        tensor.grad = new_grad.clone()
    else:
        tensor.grad = tensor.grad + new_grad


class Tensor:
    def __init__(self, data, requires_grad=False):
        # the actual numbers
        self.data = data
        # do we need a gradient for this tensor?
        self.requires_grad = requires_grad
        # the gradient, filled in by backward()
        self.grad = None
        # the tensors this one was computed from (empty for leaves)
        self._parents = []
        # function that sends self.grad back to the parents (None for leaves)
        self._backward = None

    def __repr__(self):
        return "Tensor(" + str(self.data) + ", requires_grad=" + str(self.requires_grad) + ")"

    # -----------------------------------------------------------------------
    # small helpers
    # -----------------------------------------------------------------------
    def _wrap(self, other):
        # allow plain Python numbers like 2 * a or a + 1
        if isinstance(other, Tensor):
            return other
        return Tensor(torch.tensor(other, dtype=self.data.dtype))

    def _new(self, data, parents):
        # create the output tensor of an operation
        out = Tensor(data)
        # the output needs a gradient if ANY parent needs one (and grad is on)
        needs_grad = False
        for parent in parents:
            if parent.requires_grad:
                needs_grad = True
        if _GRAD_ON and needs_grad:
            out.requires_grad = True
            out._parents = list(parents)
        return out

    # -----------------------------------------------------------------------
    # core operations
    # -----------------------------------------------------------------------
    def __add__(self, other):
        other = self._wrap(other)
        out = self._new(self.data + other.data, [self, other])

        def _backward():
            # d(a+b)/da = 1 and d(a+b)/db = 1, so both just get the output grad
            # (summed back down if they were broadcast)
            if self.requires_grad:
                accumulate(self, unbroadcast(out.grad, self.data.shape))
            if other.requires_grad:
                accumulate(other, unbroadcast(out.grad, other.data.shape))

        if out.requires_grad:
            out._backward = _backward
        return out

    def __radd__(self, other):
        # number + tensor
        return self + other

    def __mul__(self, other):
        other = self._wrap(other)
        out = self._new(self.data * other.data, [self, other])

        def _backward():
            # d(a*b)/da = b and d(a*b)/db = a
            if self.requires_grad:
                accumulate(self, unbroadcast(out.grad * other.data, self.data.shape))
            if other.requires_grad:
                accumulate(other, unbroadcast(out.grad * self.data, other.data.shape))

        if out.requires_grad:
            out._backward = _backward
        return out

    def __rmul__(self, other):
        # number * tensor
        return self * other

    def __matmul__(self, other):
        # C = A @ B with A (n, m), B (m, p), C (n, p)
        out = self._new(self.data @ other.data, [self, other])

        def _backward():
            # dA = dC @ B^T  -> (n, p) @ (p, m) = (n, m)   correct shape for A
            # dB = A^T @ dC  -> (m, n) @ (n, p) = (m, p)   correct shape for B
            if self.requires_grad:
                accumulate(self, out.grad @ other.data.T)
            if other.requires_grad:
                accumulate(other, self.data.T @ out.grad)

        if out.requires_grad:
            out._backward = _backward
        return out

    def relu(self):
        out = self._new(torch.clamp(self.data, min=0.0), [self])

        def _backward():
            # gradient passes only where the input was strictly positive
            # (same convention as PyTorch: no gradient at exactly 0)
            if self.requires_grad:
                mask = (self.data > 0).to(out.grad.dtype)
                accumulate(self, out.grad * mask)

        if out.requires_grad:
            out._backward = _backward
        return out

    def sum(self):
        out = self._new(self.data.sum(), [self])

        def _backward():
            # every element contributed with weight 1, so every element gets
            # the (scalar) output gradient
            if self.requires_grad:
                accumulate(self, out.grad * torch.ones_like(self.data))

        if out.requires_grad:
            out._backward = _backward
        return out

    # -----------------------------------------------------------------------
    # backward
    # -----------------------------------------------------------------------
    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("this tensor does not require grad, nothing to do")

        # the starting gradient: d(self)/d(self) = 1 for a scalar,
        # or whatever the caller gave us for a non-scalar output
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("please pass grad= for a tensor with more than one element")
            grad = torch.ones_like(self.data)
        else:
            grad = grad.to(self.data.dtype)

        # ---- Step 1: topological order WITHOUT recursion --------------------
        # (recursion would crash on a chain of 100k operations)
        # I use an explicit stack. Each entry is (tensor, already_expanded).
        # When a tensor is popped the first time I push it again marked as
        # expanded and then push its parents; when it comes off the stack the
        # second time, all its parents are finished, so it goes into the order.
        order = []
        visited = set()
        stack = [(self, False)]
        while len(stack) > 0:
            tensor, expanded = stack.pop()
            if expanded:
                order.append(tensor)
                continue
            if tensor in visited:
                continue
            visited.add(tensor)
            stack.append((tensor, True))
            for parent in tensor._parents:
                if parent.requires_grad and parent not in visited:
                    stack.append((parent, False))

        # ---- Step 2: walk the order backwards -------------------------------
        # the intermediate tensors are brand-new for this graph, but leaves may
        # already hold a gradient from an earlier backward -> we ADD to it.
        accumulate(self, grad)
        for tensor in reversed(order):
            if tensor._backward is not None:
                tensor._backward()

        # ---- Step 3: free the graph -----------------------------------------
        # drop the references to parents and closures, so intermediate tensors
        # (and the torch tensors the closures captured) can be garbage collected
        for tensor in order:
            tensor._parents = []
            tensor._backward = None

    # -----------------------------------------------------------------------
    # extensions
    # -----------------------------------------------------------------------
    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        # a - b = a + (-b)
        return self + (-self._wrap(other))

    def __rsub__(self, other):
        # number - tensor, e.g. 1 - a  (careful: NOT a - 1)
        return self._wrap(other) + (-self)

    def __truediv__(self, other):
        other = self._wrap(other)
        out = self._new(self.data / other.data, [self, other])

        def _backward():
            # d(a/b)/da = 1/b ; d(a/b)/db = -a/b^2
            if self.requires_grad:
                accumulate(self, unbroadcast(out.grad / other.data, self.data.shape))
            if other.requires_grad:
                local = -self.data / (other.data * other.data)
                accumulate(other, unbroadcast(out.grad * local, other.data.shape))

        if out.requires_grad:
            out._backward = _backward
        return out

    def __rtruediv__(self, other):
        # number / tensor, e.g. 2 / a  (careful: NOT a / 2)
        return self._wrap(other) / self

    def __pow__(self, exponent):
        # exponent is a plain Python number
        out = self._new(self.data ** exponent, [self])

        def _backward():
            # d(x^p)/dx = p * x^(p-1)
            if self.requires_grad:
                accumulate(self, out.grad * exponent * self.data ** (exponent - 1))

        if out.requires_grad:
            out._backward = _backward
        return out

    def exp(self):
        result = torch.exp(self.data)
        out = self._new(result, [self])

        def _backward():
            # d(e^x)/dx = e^x, which is the output itself
            if self.requires_grad:
                accumulate(self, out.grad * result)

        if out.requires_grad:
            out._backward = _backward
        return out

    def log(self):
        out = self._new(torch.log(self.data), [self])

        def _backward():
            # d(log x)/dx = 1/x
            if self.requires_grad:
                accumulate(self, out.grad / self.data)

        if out.requires_grad:
            out._backward = _backward
        return out

    def tanh(self):
        result = torch.tanh(self.data)
        out = self._new(result, [self])

        def _backward():
            # d(tanh x)/dx = 1 - tanh(x)^2   (uses the OUTPUT)
            if self.requires_grad:
                accumulate(self, out.grad * (1.0 - result * result))

        if out.requires_grad:
            out._backward = _backward
        return out

    def sigmoid(self):
        result = torch.sigmoid(self.data)
        out = self._new(result, [self])

        def _backward():
            # d(sigmoid x)/dx = s * (1 - s)   with s the OUTPUT
            if self.requires_grad:
                accumulate(self, out.grad * result * (1.0 - result))

        if out.requires_grad:
            out._backward = _backward
        return out

    def mean(self):
        count = self.data.numel()
        out = self._new(self.data.mean(), [self])

        def _backward():
            # every element has weight 1/count
            if self.requires_grad:
                accumulate(self, out.grad * torch.ones_like(self.data) / count)

        if out.requires_grad:
            out._backward = _backward
        return out

    @property
    def T(self):
        out = self._new(self.data.T, [self])

        def _backward():
            # transposing is its own inverse
            if self.requires_grad:
                accumulate(self, out.grad.T)

        if out.requires_grad:
            out._backward = _backward
        return out

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        original_shape = self.data.shape
        out = self._new(self.data.reshape(shape), [self])

        def _backward():
            # just put the gradient back into the original shape
            if self.requires_grad:
                accumulate(self, out.grad.reshape(original_shape))

        if out.requires_grad:
            out._backward = _backward
        return out

    def maximum(self, other):
        other = self._wrap(other)
        out = self._new(torch.maximum(self.data, other.data), [self, other])

        def _backward():
            # the winner gets the gradient; on a tie I split it 50/50
            # (like PyTorch does), never give the full gradient to both
            a_wins = (self.data > other.data).to(out.grad.dtype)
            tie = (self.data == other.data).to(out.grad.dtype)
            a_share = a_wins + 0.5 * tie
            b_share = 1.0 - a_share
            if self.requires_grad:
                accumulate(self, unbroadcast(out.grad * a_share, self.data.shape))
            if other.requires_grad:
                accumulate(other, unbroadcast(out.grad * b_share, other.data.shape))

        if out.requires_grad:
            out._backward = _backward
        return out

    def cross_entropy(self, target):
        # logits (N, C), target (N,) of class indices
        logits = self.data
        N = logits.shape[0]
        # numerically stable log-softmax: subtract the row max first,
        # otherwise exp(10000) overflows to inf
        row_max = logits.max(dim=1, keepdim=True).values
        shifted = logits - row_max
        log_sum_exp = torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))
        log_probs = shifted - log_sum_exp
        rows = torch.arange(N)
        loss_value = -log_probs[rows, target].mean()
        out = self._new(loss_value, [self])

        def _backward():
            # d(loss)/d(logits) = (softmax - onehot) / N
            if self.requires_grad:
                probs = torch.exp(log_probs)
                onehot = torch.zeros_like(probs)
                onehot[rows, target] = 1.0
                accumulate(self, out.grad * (probs - onehot) / N)

        if out.requires_grad:
            out._backward = _backward
        return out
