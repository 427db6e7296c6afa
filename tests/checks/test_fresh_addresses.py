"""The experiment on state left over runs a failing graph first in fresh workers: forks of one process allocate
alike, so without ballast each fresh run puts the graph's objects at the same addresses, and an engine whose
order comes from a set of nodes walks them in the same order every time, by luck right or wrong."""

from __future__ import annotations

import torch

from harness.program import Leaf, Program, Step
from harness.sandbox.launch import Sandbox

# The sum's value carries the address of the result of ``+`` (exact in float64: below 2 ** 53).
ADDRESS_ENGINE = '''
import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None

    def __add__(self, other):
        return Tensor(self.data + other.data)

    def sum(self):
        return Tensor(self.data.sum() * 0 + float(id(self) >> 4))

    def backward(self, grad=None):
        pass
'''

PROGRAM = Program((Leaf("x", torch.tensor([1.0, 2.0], dtype=torch.float64)),),
                  (Step("h", "add", ("x", "x")), Step("y", "sum", ("h",))), "y")


def _address(box: Sandbox, path, ballast: int) -> float:
    worker = box.spawn(path)
    try:
        reply = worker.request({"kind": "run", "program": PROGRAM.to_wire(), "observe": "all", "guard": True,
                                **({"ballast": ballast} if ballast else {})}, 20.0)
    finally:
        worker.kill()
    return reply["values"]["y"]["values"][0]


def test_ballast_moves_the_graph_where_plain_fresh_workers_repeat_it(launcher, tmp_path):
    path = tmp_path / "address_engine.py"
    path.write_text(ADDRESS_ENGINE)
    with launcher.sandbox() as box:
        plain = {_address(box, path, 0) for _ in range(2)}
        moved = {_address(box, path, ballast) for ballast in (1_021, 5_003)}
    assert len(plain) == 1, "two fresh workers no longer put the graph at one address: the ballast may be moot"
    assert not moved & plain and len(moved) == 2
