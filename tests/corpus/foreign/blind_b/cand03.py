# autograd, written procedurally: free functions build nodes, one function
# computes the vector-Jacobian product for a node by switching on its op name.
import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = "leaf"
        self.args = ()
        self.saved = None

    def __add__(self, other):
        return add(self, wrap(other, self))

    def __radd__(self, other):
        return add(wrap(other, self), self)

    def __mul__(self, other):
        return mul(self, wrap(other, self))

    def __rmul__(self, other):
        return mul(wrap(other, self), self)

    def __matmul__(self, other):
        pass  # TODO matmul

    def __neg__(self):
        return neg(self)

    def __sub__(self, other):
        return sub(self, wrap(other, self))

    def __rsub__(self, other):
        return sub(self, wrap(other, self))

    def __truediv__(self, other):
        return div(self, wrap(other, self))

    def __rtruediv__(self, other):
        return div(wrap(other, self), self)

    def __pow__(self, p):
        return power(self, p)

    def relu(self):
        return relu(self)

    def sum(self):
        return total(self)

    def mean(self):
        return mean(self)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def backward(self, grad=None):
        run_backward(self, grad)


# ---------------------------------------------------------------- node creation

def wrap(x, like):
    if isinstance(x, Tensor):
        return x
    return Tensor(torch.tensor(x, dtype=like.data.dtype))


def node(op, data, args, saved=None):
    t = Tensor(data)
    for a in args:
        if a.requires_grad:
            t.requires_grad = True
    if t.requires_grad:
        t.op = op
        t.args = args
        t.saved = saved
    return t


def add(a, b):
    return node("add", a.data + b.data, (a, b))


def sub(a, b):
    return node("sub", a.data - b.data, (a, b))


def mul(a, b):
    return node("mul", a.data * b.data, (a, b))


def div(a, b):
    return node("div", a.data / b.data, (a, b))


def neg(a):
    return node("neg", -a.data, (a,))


def power(a, p):
    return node("pow", a.data ** p, (a,), p)


def relu(a):
    return node("relu", torch.clamp(a.data, min=0.0), (a,))


def total(a):
    return node("sum", a.data.sum(), (a,))


def mean(a):
    return node("mean", a.data.mean(), (a,))


def exp(a):
    return node("exp", torch.exp(a.data), (a,))


def log(a):
    return node("log", torch.log(a.data), (a,))


# ---------------------------------------------------------------- backward

def vjp(n, g):
    """Gradients for n.args given the gradient g of n."""
    op = n.op
    if op == "add":
        return [g, g]
    elif op == "sub":
        return [g, -g]
    elif op == "mul":
        a, b = n.args
        return [g * b.data, g * a.data]
    elif op == "div":
        a, b = n.args
        return [g / b.data, -g * a.data / (b.data * b.data)]
    elif op == "neg":
        return [-g]
    elif op == "pow":
        (a,) = n.args
        p = n.saved
        return [g * p * a.data ** (p - 1)]
    elif op == "relu":
        (a,) = n.args
        return [g * (a.data > 0)]
    elif op == "sum":
        (a,) = n.args
        return [g * torch.ones_like(a.data)]
    elif op == "mean":
        (a,) = n.args
        return [g * torch.ones_like(a.data) / a.data.numel()]
    elif op == "exp":
        return [g * n.data]
    elif op == "log":
        (a,) = n.args
        return [g / a.data]
    else:
        raise RuntimeError("no vjp for op " + op)


def toposort(root):
    order = []
    visited = set()
    stack = [(root, False)]
    while stack:
        n, ready = stack.pop()
        if ready:
            order.append(n)
            continue
        if id(n) in visited:
            continue
        visited.add(id(n))
        stack.append((n, True))
        for a in n.args:
            if a.requires_grad and id(a) not in visited:
                stack.append((a, False))
    return order


def run_backward(root, grad):
    if grad is None:
        grad = torch.ones_like(root.data)
    grads = {id(root): grad}
    for n in reversed(toposort(root)):
        g = grads.pop(id(n))
        if n.op == "leaf":
            if n.grad is None:
                n.grad = g.clone()
            else:
                n.grad = n.grad + g
            continue
        for a, ga in zip(n.args, vjp(n, g)):
            if not a.requires_grad:
                continue
            if id(a) in grads:
                grads[id(a)] = grads[id(a)] + ga
            else:
                grads[id(a)] = ga
