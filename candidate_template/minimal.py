"""Implement the core of a PyTorch-style reverse-mode autograd engine.

``Tensor`` wraps a ``torch.Tensor``. After ``y.backward()`` on a one-element
result ``y``, every tensor ``y`` was computed from that requires grad holds its
gradient in ``.grad``. Torch tensors are only storage: the gradients must come
from your code, never from torch's autograd.
"""

import torch


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None

    def __add__(self, other):
        raise NotImplementedError

    def __mul__(self, other):
        raise NotImplementedError

    def __matmul__(self, other):
        raise NotImplementedError

    def relu(self):
        raise NotImplementedError

    def sum(self):
        raise NotImplementedError

    def backward(self):
        raise NotImplementedError
