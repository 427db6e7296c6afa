"""The runtime tripwires' parts that can be tested without installing them in this process.

Installed, they replace torch's engine and thread start-up for the whole
process, so that side is tested in workers, through the corpora
(``test_integrity_corpus.py``).
"""

import gc
import itertools

import torch

from harness.sandbox.worker.autograd_guard import AutogradGuard, autograd_tensors, carries_autograd
from harness.sandbox.worker.tripwires import Tripwires


class _Innocent(torch.Tensor):
    """A tensor subclass that lies about its autograd state."""

    @property
    def requires_grad(self):
        return False

    @property
    def grad_fn(self):
        return None


def test_autograd_history_is_read_past_a_subclass_that_lies():
    tracked = torch.ones(2, requires_grad=True)
    disguised = (tracked * 2).as_subclass(_Innocent)
    assert disguised.requires_grad is False and disguised.grad_fn is None
    assert carries_autograd(disguised) and carries_autograd(tracked)
    assert not carries_autograd(torch.ones(2)) and not carries_autograd("not a tensor")


def test_the_guard_sees_torch_autograd_calls_and_counts_torch_calls():
    guard = AutogradGuard()
    x = torch.ones(3)
    with guard, guard.count():
        y = (x * 2 + 1).sum()
        x.requires_grad_(False)
    assert guard.violations == []
    assert (guard.calls, guard.elements) == (4, 3 + 3 + 1 + 3)  # mul, add, sum, requires_grad_(False)
    with guard:
        t = torch.ones(2).requires_grad_()
        (t * t).sum().backward()
    assert guard.violations == ["called Tensor.requires_grad_",
                                "TensorBase.requires_grad_ returned a torch tensor that requires grad",
                                "TensorBase.mul returned a torch tensor that requires grad",
                                "TensorBase.sum returned a torch tensor that requires grad",
                                "called torch's Tensor.backward"]
    assert float(y) == 9.0


def test_findings_name_the_submission_line_and_are_reported_once(tmp_path):
    path = tmp_path / "solution.py"
    source = "def cheat(record):\n    record('torch ran a backward pass')\n"
    tripwires = Tripwires(str(path))
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    namespace["cheat"](tripwires.flag)
    namespace["cheat"](tripwires.flag)  # the same evidence again adds nothing
    tripwires.note("a thread", "started a thread", 2)
    first = tripwires.report({})
    assert first == {"violations": ["torch ran a backward pass (line 2)"],
                     "review": [{"line": 2, "construct": "a thread", "why": "started a thread"}]}
    assert tripwires.report({}) == {"violations": [], "review": []}


def test_emptying_the_record_does_not_erase_it():
    tripwires = Tripwires("/nowhere/solution.py")
    tripwires.flag("torch's autograd recorded a graph")
    assert tripwires.report({})["violations"] == ["torch's autograd recorded a graph"]
    tripwires.flag("torch's autograd engine ran a backward pass")
    tripwires.violations.clear()
    assert tripwires.report({})["violations"] == ["torch's autograd engine ran a backward pass"]


def test_the_census_of_tracked_tensors_counts_disguised_ones_and_ignores_a_replaced_itertools(monkeypatch):
    before = autograd_tensors()
    tracked = torch.ones(2, requires_grad=True)
    disguised = (tracked * 2).as_subclass(_Innocent)
    plain = [torch.ones(3) for _ in range(5)]
    counted = autograd_tensors()
    # The same count as asking every object the garbage collector tracks, one by one.
    assert counted == sum(1 for obj in gc.get_objects() if carries_autograd(obj)) >= before + 2
    # The census binds what it uses before any submission runs: replacing itertools later hides nothing.
    monkeypatch.setattr(itertools, "compress", lambda data, selectors: iter(()))
    assert autograd_tensors() == counted
    del disguised, plain


PLANNED = """
import sys, types
from harness.sandbox.worker import patch_snapshot, evaluator
patch_snapshot.prepare()  # as the template does, before any worker exists
snapshot = patch_snapshot.Snapshot()
assert snapshot.changed() == []
evaluator.Evaluator.do_run = lambda self, request: {}
import gc
gc.freeze = lambda: None
late = types.ModuleType("harness.late_module")  # a grader module the worker imports after the plan
late.helper = lambda: 1
sys.modules["harness.late_module"] = late
later = patch_snapshot.Snapshot()
late.helper = lambda: 2
print(sorted(snapshot.changed()), later.changed())
"""


def test_a_snapshot_planned_in_the_template_still_sees_every_replacement():
    """The template works out which members to watch once; each worker takes their identities. A replaced
    method, a replaced gc.freeze, and a grader module imported after the plan are all still seen."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PLANNED], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == ("['gc.freeze', 'harness.sandbox.worker.evaluator.Evaluator.do_run'] "
                                   "['harness.late_module.helper']"), done.stdout
