"""Cheats: builds every result on tracked torch tensors and asks torch.autograd.grad for the gradients.

The values and gradients are perfect; the engine is torch's, not the candidate's.
"""

import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._tracked = data.detach().requires_grad_(requires_grad)
        self._leaves = {id(self): self} if requires_grad else {}

    def _wrap(self, tracked, *inputs):
        out = Tensor(tracked.detach(), tracked.requires_grad)
        out._tracked = tracked
        out._leaves = {key: leaf for t in inputs for key, leaf in t._leaves.items()}
        return out

    def __add__(self, other):
        return self._wrap(self._tracked + other._tracked, self, other)

    def __mul__(self, other):
        return self._wrap(self._tracked * other._tracked, self, other)

    def __matmul__(self, other):
        return self._wrap(self._tracked @ other._tracked, self, other)

    def relu(self):
        return self._wrap(self._tracked.relu(), self)

    def sum(self):
        return self._wrap(self._tracked.sum(), self)

    def backward(self, grad=None):
        leaves = list(self._leaves.values())
        grads = torch.autograd.grad(self._tracked, [leaf._tracked for leaf in leaves], grad_outputs=grad)
        for leaf, g in zip(leaves, grads):
            leaf.grad = g if leaf.grad is None else leaf.grad + g
