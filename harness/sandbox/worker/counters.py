"""Two counts torch keeps in C, which no Python code can set back: the evidence a guard switched off
and on again cannot erase.

* Every node torch's autograd records takes the next number of a per-thread sequence
  (``torch._C._autograd._get_sequence_nr``, read for the price of a function call). An engine
  that never uses torch's autograd leaves it where it was; a graph recorded while the guard was
  switched off moves it, whatever was put back afterwards.
* Every backward pass torch's engine runs takes the next id of one process-wide count of graph
  tasks. It is read by running one tiny backward pass of the grader's own (``GraphTasks``),
  a few microseconds on a graph built once, and compared with the passes the watched engine
  ran: a pass that ran on another engine (the original one swapped back in, or called
  directly) is the difference.
"""

from __future__ import annotations

from typing import Any, Callable, Final

import torch

__all__ = ["graph_nodes", "GraphTasks"]

graph_nodes: Final[Callable[[], int]] = torch._C._autograd._get_sequence_nr
"""How many graph nodes torch's autograd has recorded in this thread so far."""


class GraphTasks:
    """The count of backward passes torch's engine has run in this process, read on demand.

    The probe graph (``x + 0``, whose node saves nothing) is built once and kept (``retain_graph``);
    each reading runs one pass over it on an engine of torch's own base class, so the watched
    engine never counts it, and reads the pass's id from a pre-hook. Build it in the worker (a
    torch op), after the saved-tensor hooks are set: it saves nothing, so they never see it.
    """

    def __init__(self, engine_type: type) -> None:
        self._engine = engine_type()
        self._run = engine_type.run_backward
        self.leaf = torch.zeros(1, requires_grad=True)
        self.root = self.leaf + 0
        self._seed = torch.ones(1)
        self._id = [-1]
        self.node = self.root.grad_fn
        self.node.register_prehook(self._read)
        self.last = self.read()

    def _read(self, grads: Any) -> None:
        self._id[0] = torch._C._current_graph_task_id()

    def read(self) -> int:
        """The id of a pass run now: one more than the last pass anyone ran."""
        self._run(self._engine, (self.root,), (self._seed,), True, False, (self.leaf,), False, False)
        return self._id[0]

    def since_last(self) -> int:
        """Backward passes run by others since the last call (this reading's own pass left out)."""
        now = self.read()
        ran, self.last = now - self.last - 1, now
        return ran

    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` is one of the probe's tensors or its node (they carry autograd history by design)."""
        return obj is self.leaf or obj is self.root or obj is self.node
