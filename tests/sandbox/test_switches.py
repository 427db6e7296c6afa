"""What takes a part of the guard away, and the counts that see it afterwards, read against torch itself.

Installing the watches changes torch for the whole process, so they are installed in workers
(``test_integrity_corpus.py``, ``test_worker_guards.py``); here the tables are checked against
torch's own modules, and torch's counts against what they must count.
"""

from __future__ import annotations

import sys

import torch

import harness.sandbox.worker.evaluator  # noqa: F401  -- what the template imports before any worker starts
from harness.sandbox.worker import switches
from harness.sandbox.worker.counters import GraphTasks, graph_nodes

_HARMLESS = {
    "torch._C._push_on_torch_function_stack": "pushing a mode over the guard still hands every call down to it",
    "torch._C._EnableTorchFunction": "switches modes on",
    "torch._C._disabled_torch_function_impl": "switches off subclasses' handlers only: modes still see the call",
    "torch._C._autograd._saved_tensors_hooks_enable": "switches the hooks on",
    "torch._C._maybe_call_torch_function_for_op_packet": "hands an op's call to the modes, the guard among them",
}
"""Calls that touch the mode stack or the saved-tensor hooks without taking the guard away."""


def _touching_the_guard() -> set[str]:
    """Every call of torch's that changes the torch-function mode stack or state or the saved-tensor hooks, by name."""
    found = set()
    for module_name in ("torch._C", "torch._C._autograd"):
        module = sys.modules[module_name]
        for name in dir(module):
            lowered = name.lower()
            changes = not any(reader in lowered for reader in ("_get", "_is_", "_has", "_len", "_peek", "_top"))
            if changes and (("torch_function" in lowered and name != "_has_torch_function") or "saved_tensors" in lowered
                            or name.endswith(("DisableTorchFunction", "EnableTorchFunction"))
                            or "dual_level" in lowered and "enter" in lowered):
                found.add(f"{module_name}.{name}")
    return found - {"torch._C._autograd._make_saved_tensor"}


def test_every_call_that_takes_a_part_of_the_guard_away_is_watched():
    watched = {f"{s.module}.{s.name}" for s in switches.SWITCHES}
    missing = _touching_the_guard() - watched - set(_HARMLESS)
    assert missing == set(), f"torch has a new way to switch the guard off: watch {sorted(missing)} in SWITCHES"
    assert watched <= _touching_the_guard() | {"torch._C.DisableTorchFunction"}


def test_every_module_of_torch_that_holds_a_switch_is_an_alias():
    originals = {id(getattr(sys.modules[s.module], s.name)): f"{s.module}.{s.name}" for s in switches.SWITCHES}
    holders = set()
    for name, module in list(sys.modules.items()):
        if (name == "torch" or name.startswith("torch.")) and isinstance(getattr(module, "__dict__", None), dict):
            if any(id(value) in originals for value in list(vars(module).values())):
                holders.add(name)
    assert holders and holders <= set(switches.ALIASES), sorted(holders - set(switches.ALIASES))


def test_torch_counts_every_node_it_records_and_nothing_else():
    before = graph_nodes()
    x = torch.ones(3)
    (x * 2 + 1).sum()
    with torch.no_grad():
        (torch.ones(2, requires_grad=True) * 2).sum()
    assert graph_nodes() == before  # plain tensors, or no_grad: nothing recorded
    leaf = torch.ones(3, requires_grad=True)
    y = (leaf * leaf + 1).sum()  # mul, add, sum: three nodes (the leaf's gradient store takes no number)
    assert graph_nodes() == before + 3 and y.grad_fn is not None


def test_the_backward_pass_count_sees_every_engine():
    tasks = GraphTasks(type(torch._C._ImperativeEngine()))
    assert tasks.since_last() == 0
    leaf = torch.ones(2, requires_grad=True)
    (leaf * leaf).sum().backward()
    torch.autograd.grad((leaf * 3).sum(), leaf)
    assert tasks.since_last() == 2  # its own probe pass is left out
    assert tasks.since_last() == 0
    assert tasks.owns(tasks.leaf) and tasks.owns(tasks.root) and not tasks.owns(leaf)
