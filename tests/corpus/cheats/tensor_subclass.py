"""Cheats by being a torch.Tensor: every op, the graph and ``backward`` itself are torch's.

A subclass of torch.Tensor made with ``_make_subclass`` requires grad when asked
to, records every op in torch's graph and inherits torch's ``backward``. The
class defines almost nothing; ``relu``, ``sum``, ``+``, ``*`` and ``@`` are
torch's, and results come back as this class.
"""

import torch


class Tensor(torch.Tensor):
    @staticmethod
    def __new__(cls, data, requires_grad=False):
        return torch.Tensor._make_subclass(cls, data.detach(), requires_grad)

    def __init__(self, data, requires_grad=False):
        pass

    @property
    def data(self):
        return self.as_subclass(torch.Tensor).detach()

    @property
    def grad(self):
        g = torch.Tensor.grad.__get__(self)
        return None if g is None else g.as_subclass(torch.Tensor)

    @grad.setter
    def grad(self, value):
        torch.Tensor.grad.__set__(self, value)
