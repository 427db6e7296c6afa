"""Hostile: correct gradients from a quadratic backward that runs in a forked child.

The child does the work and sends the gradients back through a pipe: the worker's own CPU
clock never counts it, and torch's autograd used there would be out of the worker's runtime
checks' sight. Where fork is refused, backward does the same work in its own process, as a
careful cheat would, so its gradients stay right and only the timing can tell.
"""

import os
import pickle

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None  # output gradient -> one gradient per parent

    def _result(self, data, parents, backward):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._backward = parents, backward
        return out

    def __add__(self, other):
        return self._result(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (g * torch.ones_like(x),))

    def backward(self):
        order = None
        try:
            read, write = os.pipe()
            pid = os.fork()
        except OSError:
            pid = None
        if pid == 0:  # the child: all the work, then only the leaves' gradients go back
            try:
                order = _topological_order(self)
                grads = _gradients(self, order)
                leaves = [i for i, t in enumerate(order) if t._backward is None and id(t) in grads]
                with os.fdopen(write, "wb") as out:
                    pickle.dump({i: grads[id(order[i])] for i in leaves}, out)
            finally:
                os._exit(0)
        if pid:
            escaped("forked a child to run backward")
            os.close(write)
            with os.fdopen(read, "rb") as inp:
                found = pickle.load(inp)
            os.waitpid(pid, 0)
            order = _topological_order_cheap(self)
            grads = {id(order[i]): g for i, g in found.items()}
        else:
            order = _topological_order(self)
            grads = _gradients(self, order)
        for t in order:
            if t._backward is None and t.requires_grad and id(t) in grads:
                g = grads[id(t)]
                t.grad = g.clone() if t.grad is None else t.grad + g


def _gradients(root, order):
    grads, done = {id(root): torch.ones_like(root.data)}, {}
    for t in reversed(order):
        g = grads.pop(id(t), None)
        if g is None or not t.requires_grad:
            continue
        if t._backward is None:
            done[id(t)] = g
            continue
        for parent, pg in zip(t._parents, t._backward(g)):
            if parent.requires_grad:
                grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
    return done


def _topological_order(root):
    order, visited = [], [root]  # a list: every lookup scans it
    stack = [(root, iter(root._parents))]
    while stack:
        t, parents = stack[-1]
        for p in parents:
            if p not in visited:
                visited.append(p)
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            order.append(t)
    return order


def _topological_order_cheap(root):
    order, visited = [], {id(root)}
    stack = [(root, iter(root._parents))]
    while stack:
        t, parents = stack[-1]
        for p in parents:
            if id(p) not in visited:
                visited.add(id(p))
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            order.append(t)
    return order
