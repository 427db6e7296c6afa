"""The child side of the sandbox: runs candidate code and reports what it observed.

This module is the only one that ever touches a submission. It imports the
candidate's file, then answers requests from the grader one at a time: run a
graph program, or run a small probe (no_grad, a deep chain, memory release).
It returns raw facts (values and gradients as plain numbers, exceptions,
flags) and never judges them: every verdict is computed in the parent, where
candidate code cannot reach.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import inspect
import os
import socket
import sys
import time
import weakref
from typing import Any, Callable

import torch

from harness.collector import collector_paused
from harness.sandbox.worker.audit import install as install_audit_hook
from harness.sandbox.worker.autograd_guard import read_frames_with
from harness.sandbox.worker.tripwires import Tripwires
from harness.sandbox.worker import processes
from harness.sandbox.channel import TRUSTED_LIMITS, recv_message, send_message
from harness.sandbox.worker.counters import graph_nodes
from harness.sandbox.worker.formulas import foreign_formulas
from harness.sandbox.worker.saved import kept_storages, storage_key
from harness.variants import FOREIGN_FORMULA
from harness.graph_shapes import wire_steps
from harness.ops import OPS
from harness.program import decode_tensor, encode_tensor
from harness.sandbox.worker.measures import (ballast, count_alive, counting_python_calls, reachable,
                                              reachable_of_shape, weak)
from harness.sandbox.worker.observation import (SUBMISSION_FILE, changed_since, copy_of, data_of, error_facts,
                                                has_member, observe_tensor, requires_grad_of)


class Evaluator:
    """Answers the grader's requests against one imported submission."""

    def __init__(self, module: Any, class_name: str, tripwires: Tripwires | None = None) -> None:
        self.module = module
        self.cls = getattr(module, class_name, None)
        self.class_name = class_name
        # integrity: serve() installs the tripwires before the submission is imported.
        if tripwires is None:
            tripwires = Tripwires(getattr(module, "__file__", None) or "")
            tripwires.install()
        self.tripwires = tripwires
        self.guard = tripwires.guard

    def guarded(self, active: bool = True):
        # Timing probes switch the guard off where its per-call cost would distort them;
        # every other request runs guarded, so a cheat is still seen.
        return self.tripwires.guarded(active)

    # ---- request dispatch ----

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        kind = request.get("kind")
        handler = getattr(self, f"do_{kind}", None)
        if "variant" in request:  # --variant function: every node a torch op records is a formula not the submission's
            self.guard.formulas = request.get("variant") == "function"
        if handler is None:
            return {"error": error_facts("request", ValueError(f"unknown request {kind!r}"))}
        reply = handler(request)
        self.tripwires.after_request()  # integrity: re-check every tripwire after each request
        return self.tripwires.report(reply)

    def do_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        """Which members and features the submission has: decides what is 'not attempted'."""
        cls = self.cls
        if cls is None:
            return {"has_class": False}
        members = sorted({spec.member for spec in OPS.values()} | {"backward", "__radd__", "__rmul__",
                                                                   "__rsub__", "__rtruediv__"})
        present = [m for m in members if has_member(cls, m)]
        if request.get("probe") is False:
            return {"has_class": True, "members": present}
        features: dict[str, Any] = {"no_grad": callable(getattr(self.module, "no_grad", None))}
        try:
            features["backward_takes_grad"] = len(inspect.signature(cls.backward).parameters) >= 2
        except (TypeError, ValueError, AttributeError):
            features["backward_takes_grad"] = False
        features["broadcast_forward"] = self._forward_works(lambda: (self._leaf([[1.0, 2.0], [3.0, 4.0]])
                                                                     + self._leaf([1.0, 2.0])))
        features["number_forward"] = self._forward_works(lambda: (self._leaf([1.0, 2.0]) + 1,
                                                                  2 * self._leaf([1.0, 2.0])))
        # Per op, with the number on the right (the left side needs the reflected member, a member of its own).
        for name in NUMBER_OPS:
            features[f"number_forward:{name}"] = self._forward_works(
                lambda name=name: OPS[name].apply_candidate([self._leaf([1.0, 2.0]), 2.0], {}))
        return {"has_class": True, "members": present, "features": features}

    def _leaf(self, values: Any) -> Any:
        return self.cls(torch.tensor(values, dtype=torch.float64), requires_grad=True)

    def _forward_works(self, build: Callable[[], Any]) -> bool:
        try:
            with self.guarded():
                build()
            return True
        except Exception:
            return False

    def do_run(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run a graph program: forward, backward (once or twice), then report everything seen."""
        wire = request["program"]
        steps = wire_steps(wire)  # written out, or a timing graph's description (graph_shapes)
        # Objects allocated first, alive until the reply, move every address the graph's objects get: an
        # engine whose order comes from a set of nodes (hashed by address) then walks it in another order.
        _ballast = ballast(int(request.get("ballast", 0)))
        guard = bool(request.get("guard", True))
        observe_all = request.get("observe", "all") == "all"
        leaves: dict[str, Any] = {}
        raw = {w["name"] for w in wire["leaves"] if not decode_tensor(w).is_floating_point()}
        for w in wire["leaves"]:
            value = decode_tensor(w)
            if value.is_floating_point():
                leaves[w["name"]] = self.cls(value, requires_grad=bool(w["requires_grad"]))
            else:
                leaves[w["name"]] = value
        results: dict[str, Any] = {}
        reply: dict[str, Any] = {}
        # A timed run's thousands of steps each pay nothing for the guard it does not use.
        step_guard = self.guarded if guard else contextlib.nullcontext
        started = time.perf_counter()
        # On small graphs each step's operands are compared before and after it runs: an op that writes
        # into its input is seen at the op that did it, not where the changed value is read later.
        watch = observe_all and len(wire["steps"]) <= WATCHED_STEPS
        try:
            for _ in range(int(wire.get("passes", 1))):
                results = dict(leaves)
                for step in steps:
                    operands = [results[a] if isinstance(a, str) else a for a in step["args"]]
                    params = {k: tuple(v) if isinstance(v, list) else v for k, v in step["params"].items()}
                    try:
                        with step_guard():
                            before = [copy_of(o) for o in operands] if watch else ()
                            result = OPS[step["op"]].apply_candidate(operands, params)
                            if result is None or isinstance(result, (int, float, bool)) or (
                                    isinstance(result, torch.Tensor) and not isinstance(result, self.cls)):
                                raise NotATensor(_what(result), self.cls.__name__)
                            results[step["name"]] = result
                            for slot, (operand, copy) in enumerate(zip(operands, before)):
                                if copy is not None and changed_since(operand, copy):
                                    reply.setdefault("mutated", []).append({"step": step["name"], "slot": slot})
                    except Exception as exc:
                        raise _Failed(f"forward: {step['name']}", exc) from exc
                self.tripwires.check_held()  # integrity: tracked tensors held between forward and backward
                if request.get("variant") == "function":  # integrity: only the submission's own formulas
                    self._check_formulas()
                if not wire.get("backward", True):
                    continue  # nothing requires grad: torch would refuse backward too
                out = results[wire["output"]]
                upstream = None if wire.get("upstream") is None else decode_tensor(wire["upstream"])
                t0 = time.perf_counter()
                try:
                    with self.guarded(guard):
                        out.backward() if upstream is None else out.backward(upstream)
                except Exception as exc:
                    raise _Failed("backward", exc) from exc
                reply["backward_seconds"] = time.perf_counter() - t0
        except _Failed as failed:
            described = {s["name"]: f"{s['name']} = " + OPS[s["op"]].render(
                [a if isinstance(a, str) else repr(a) for a in s["args"]],
                {k: tuple(v) if isinstance(v, list) else v for k, v in s["params"].items()}) for s in steps}
            if failed.where.startswith("forward: "):  # the step that raised is the node
                reply["error"] = error_facts(failed.where, failed.exc)
                reply["error"]["node"] = described.get(failed.where.removeprefix("forward: "), "")
            else:  # backward: the traceback's frames say which node's rule raised
                nodes = {id(results[name]): text for name, text in described.items() if name in results}
                reply["error"] = error_facts(failed.where, failed.exc, nodes,
                                             [results[name] for name in described if name in results])
        reply["seconds"] = time.perf_counter() - started
        names = [s["name"] for s in steps] if observe_all else [wire["output"]]
        # Reading .grad or .data runs candidate code too (a property), so it is guarded as well.
        try:
            with self.guarded(guard):
                reply["values"] = {n: data_of(results[n]) for n in names if n in results}
                reply["requires_grad"] = {n: requires_grad_of(results[n]) for n in names if n in results}
                reply["grads"] = {}
                reply["leaf_data"] = {}
                for name, leaf in leaves.items():
                    if name in raw:  # class targets and ids: plain torch tensors, never the candidate's
                        continue
                    reply["grads"][name] = observe_tensor(getattr(leaf, "grad", None))
                    reply["leaf_data"][name] = data_of(leaf)
        except Exception as exc:
            reply.setdefault("error", error_facts("reading results", exc))
        return reply

    def do_trace_calls(self, request: dict[str, Any]) -> dict[str, Any]:
        """Record from now on which of the submission's functions run (replies carry them as "ran")."""
        self.tripwires.trace_calls()
        return {}

    def _check_formulas(self) -> None:
        for name in foreign_formulas(getattr(self.module, "__name__", ""), self.tripwires.owns)[:5]:
            self.tripwires.flag(f"{FOREIGN_FORMULA} ({name})")

    def do_run_many(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run several programs, each on fresh leaves, in one request: one reply per program, in order."""
        common = {"guard": request.get("guard", True), "observe": request.get("observe", "all"),
                  "variant": request.get("variant", "tensor")}
        return {"results": [self.do_run({**common, "program": wire}) for wire in request["programs"]]}

    def do_timed_run(self, request: dict[str, Any]) -> dict[str, Any]:
        """``do_run`` with the cyclic garbage collector paused, for runs the grader times from outside.

        A full collection scans every object in the process (torch's own included), so
        it costs about the same whatever the graph's size: a run that happens to include
        one would make a linear engine look super-linear.
        """
        with collector_paused(), self.tripwires.untraced():
            return self.do_run(request)

    def do_deep_chain(self, request: dict[str, Any]) -> dict[str, Any]:
        """Backward through a chain of n additions; x.grad should be n + 1."""
        n = int(request["n"])
        # Run unguarded, as the timing runs are: under the guard (and the audit hook that sees the
        # frame it reads at every torch call) the chain's backward took three to six times as long,
        # the largest share of a grade at every level. What the guard alone would see is a formula
        # borrowed from torch, and a chain of additions has none to borrow; torch's autograd used
        # here still moves the counts in C that every request's end compares.
        # The chain's hundreds of thousands of objects are not garbage until it is dropped: collections
        # meanwhile find nothing to free, and cost a third of the forward pass.
        with collector_paused():
            try:
                x = self.cls(torch.tensor(1.0, dtype=torch.float64), requires_grad=True)
                y = x
                for _ in range(n):
                    y = y + x
            except Exception as exc:
                return {"error": error_facts("forward", exc)}
            t0 = time.perf_counter()
            try:
                with self.guarded(False):
                    y.backward()
            except BaseException as exc:  # RecursionError is the point of this probe
                return {"error": error_facts("backward", exc)}
            return {"grad": observe_tensor(x.grad), "backward_seconds": time.perf_counter() - t0}

    def do_memory_release(self, request: dict[str, Any]) -> dict[str, Any]:
        """Do the graph's intermediate tensors die after backward while the output lives?

        Measured on the candidate's own objects, not on what ``.data`` returns (a property
        may hand out a fresh copy every time): an intermediate is alive after backward if
        its ``Tensor`` object or its ``.data`` is still alive, or if a torch tensor of its
        shape (``x @ w`` is 4x5, no leaf or gradient is) is still reachable from the
        output or the leaves.
        """
        torch.manual_seed(0)
        try:
            with self.guarded():
                x = self.cls(torch.randn(4, 3, dtype=torch.float64), requires_grad=True)
                w = self.cls(torch.randn(3, 5, dtype=torch.float64), requires_grad=True)
                h = (x @ w).relu()
                k = h * h
                y = k.sum()
            probes = [weak(h), weak(k), weakref.ref(h.data), weakref.ref(k.data)]
            del h, k
            gc.collect()
            alive_before = count_alive(probes) or min(2, reachable_of_shape([y, x, w], (4, 5)))
            with self.guarded():
                y.backward()
            gc.collect()
            alive_after = max(count_alive(probes), min(2, reachable_of_shape([y, x, w], (4, 5))))
        except Exception as exc:
            return {"error": error_facts("memory_release", exc)}
        return {"alive_before": alive_before, "alive_after": alive_after, "grad_x": observe_tensor(x.grad),
                "x": encode_tensor(x.data), "w": encode_tensor(w.data)}

    def do_no_grad(self, request: dict[str, Any]) -> dict[str, Any]:
        """Inside no_grad(): results do not require grad and hold no reference to their inputs.

        "No reference" is measured on the candidate's own objects: neither the ``Tensor``
        ``h`` nor any torch tensor it holds is reachable from ``z``, and once dropped,
        ``h`` (and its ``.data``) is freed.
        """
        no_grad = getattr(self.module, "no_grad", None)
        facts: dict[str, Any] = {}
        try:
            with self.guarded():
                x = self.cls(torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64), requires_grad=True)
                with no_grad():
                    h = x * x
                    z = (h + x).relu()
                facts["h_requires_grad"] = requires_grad_of(h)
                facts["z_requires_grad"] = requires_grad_of(z)
                facts["z_value"] = data_of(z)
            held = reachable([h], stop={id(x)})
            shape = tuple(getattr(h.data, "shape", ()))  # h's own storage, not a constant it shares with others
            own = {i for i, obj in held.items() if obj is h or (isinstance(obj, torch.Tensor)
                                                                 and tuple(obj.shape) == shape and shape != ())}
            reached = own & set(reachable([z]))
            del held
            probes = [weak(h), weakref.ref(h.data)]
            del h
            gc.collect()
            facts["intermediate_freed"] = not reached and count_alive(probes) == 0
            with self.guarded():
                after = (x * x).sum()
            facts["after_requires_grad"] = requires_grad_of(after)
            with self.guarded():
                with no_grad():
                    with no_grad():
                        pass
                    inner = x * x  # still inside the outer block
            facts["nested_requires_grad"] = requires_grad_of(inner)
            del inner
            try:
                with self.guarded():
                    with no_grad():
                        raise KeyError("inside")
            except KeyError:
                pass
            with self.guarded():
                again = (x * x).sum()
            facts["after_exception_requires_grad"] = requires_grad_of(again)
        except Exception as exc:
            facts["error"] = error_facts("no_grad", exc)
        return facts

    def do_saved_tensors(self, request: dict[str, Any]) -> dict[str, Any]:
        """Per program: the storages its forward graph keeps alive (leaves and the output's own excluded).

        Then the classic hazard: ``y = (x * w).sum()``, w changed in place, then backward.
        """
        cases = []
        for wire in request.get("programs", [])[:32]:
            cases.append(self._kept(wire))
        return {"cases": cases, "in_place": self._in_place()}

    def _kept(self, wire: dict[str, Any]) -> dict[str, Any]:
        leaves: dict[str, Any] = {}
        results: dict[str, Any] = {}
        try:
            with self.guarded():
                for w in wire["leaves"]:
                    value = decode_tensor(w)
                    leaves[w["name"]] = self.cls(value, requires_grad=bool(w["requires_grad"])) \
                        if value.is_floating_point() else value
                results.update(leaves)
                for step in wire["steps"]:
                    operands = [results[a] if isinstance(a, str) else a for a in step["args"]]
                    params = {k: tuple(v) if isinstance(v, list) else v for k, v in step["params"].items()}
                    results[step["name"]] = OPS[step["op"]].apply_candidate(operands, params)
                data = {name: getattr(obj, "data", obj) for name, obj in results.items()}
                out = results[wire["output"]]
                names: dict[Any, str] = {}
                for step in wire["steps"]:
                    value = data[step["name"]]
                    key = storage_key(value) if isinstance(value, torch.Tensor) else None
                    if key is not None:
                        names.setdefault(key, step["name"])
                skip = {storage_key(v) for name, v in data.items()
                        if isinstance(v, torch.Tensor) and (name in leaves or name == wire["output"])}
                found, truncated = kept_storages(out, {id(obj) for obj in leaves.values()}, skip)
                kept = [{"node": names.get(key, ""), "bytes": key[1], "dtype": str(t.dtype).removeprefix("torch."),
                         "shape": list(t.shape)} for key, t in list(found.items())[:200]]
        except Exception as exc:
            return {"error": error_facts("saved tensors", exc)}
        return {"kept": kept, "truncated": truncated}

    def _in_place(self) -> dict[str, Any]:
        x0 = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], dtype=torch.float64)
        w0 = torch.tensor([[2.0, 1.0, -1.0], [0.5, -3.0, 4.0]], dtype=torch.float64)
        facts: dict[str, Any] = {"w_before": encode_tensor(w0)}
        try:
            with self.guarded():
                x = self.cls(x0.clone(), requires_grad=True)
                w = self.cls(w0.clone(), requires_grad=True)
                y = (x * w).sum()
                w.data.add_(1.0)  # an optimizer step, say, between forward and backward
                facts["w_after"] = data_of(w)
                y.backward()
                facts["grad_x"] = observe_tensor(getattr(x, "grad", None))
        except Exception as exc:
            facts["error"] = error_facts("backward after an in-place change", exc)
        return facts

    def do_backward_cost(self, request: dict[str, Any]) -> dict[str, Any]:
        """Torch calls, result elements and Python calls during backward of each graph sent.

        The grader sends one drawn graph at growing input sizes: an engine's backward
        makes the same calls whatever the size; one that re-evaluates the forward pass
        per input element (finite differences, complex step) does not.
        """
        facts: dict[str, Any] = {"sizes": [], "calls": [], "elements": [], "py_calls": [], "complex": False}
        for wire in request.get("programs", [])[:8]:
            try:
                leaves = {w["name"]: self.cls(decode_tensor(w), requires_grad=bool(w["requires_grad"]))
                          for w in wire["leaves"]}
                results = dict(leaves)
                with self.guarded():
                    for step in wire["steps"]:
                        operands = [results[a] if isinstance(a, str) else a for a in step["args"]]
                        results[step["name"]] = OPS[step["op"]].apply_candidate(operands, {})
                    out = results[wire["output"]]
                    with self.guard.count(), counting_python_calls(self.tripwires.files) as python:
                        out.backward()
            except Exception as exc:
                return {"error": error_facts("backward_cost", exc)}
            facts["sizes"].append(int(decode_tensor(wire["leaves"][0]).shape[0]))
            facts["calls"].append(self.guard.calls)
            facts["elements"].append(self.guard.elements)
            facts["py_calls"].append(python.calls)
            facts["complex"] = facts["complex"] or self.guard.complex
        return facts


class _Failed(Exception):
    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__(where)
        self.where, self.exc = where, exc



NUMBER_OPS = ("add", "mul", "sub", "div")
"""Ops whose operands may be Python numbers, each probed on its own in the hello."""

WATCHED_STEPS = 64
"""Graphs up to this many steps have each step's operands compared before and after it runs."""


class NotATensor(TypeError):
    """An op of the candidate's returned something that is not one of its tensors (a missing ``return``)."""

    def __init__(self, returned: str, class_name: str) -> None:
        super().__init__(f"it returned {returned}, not a {class_name}")
        self.returned = returned


def _what(value: Any) -> str:
    return "None" if value is None else f"a plain {type(value).__name__}"


# ---- process entry ----------------------------------------------------------------


def load_submission(path: str, module_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def serve(sock: socket.socket, path: str, class_name: str, probe: bool = True) -> None:
    """Import the submission, say hello (``probe``: with the features only its ops can show), then answer
    requests until the parent hangs up."""
    SUBMISSION_FILE[:] = [path]
    module_name = os.path.splitext(os.path.basename(path))[0] or "submission"
    if not module_name.isidentifier() or module_name in sys.modules:
        module_name = "submission"
    # integrity: every tripwire is set before the submission's first line runs, and the import is guarded.
    tripwires = Tripwires(path)
    tripwires.install()
    read_frames_with(install_audit_hook(path, tripwires.note,
                                        also=processes.handler(tripwires.note, tripwires.candidate_line)))
    # The import may rebind any name of this module or of the tripwires': what runs after it is
    # taken now, so a replaced function is found by the snapshot instead of running in its place.
    report, after_request, make_evaluator = tripwires.report, tripwires.after_request, Evaluator
    send, receive, facts_of = send_message, recv_message, error_facts
    # integrity: torch's count of recorded nodes, read here in C and sent with every reply for the grader
    # to judge; the count and its start live in this frame, out of the tripwires' reach (and of their fate).
    nodes = graph_nodes
    start = nodes()
    try:
        with tripwires.guarded():
            module = load_submission(path, module_name)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import are the candidate's too
        send(sock, {**report({"kind": "import_error", "error": facts_of("import", exc)}), "graph_nodes": nodes() - start})
        return
    evaluator = make_evaluator(module, class_name, tripwires)
    hello = {"kind": "ready", **evaluator.do_hello({"probe": probe})}
    after_request()  # integrity: what the import left behind
    send(sock, {**report(hello), "graph_nodes": nodes() - start})
    while True:
        request = receive(sock, **TRUSTED_LIMITS)
        if request is None:
            return
        try:
            reply = evaluator.handle(request)
        except BaseException as exc:
            reply = report({"error": facts_of(str(request.get("kind")), exc)})
        send(sock, {**reply, "graph_nodes": nodes() - start} if isinstance(reply, dict) else reply)
