'''Mutant engines: the reference engine with one catalogued bug each.

A mutant is an exact textual patch of ``reference/engine.py``, applied when it
is first needed. Every patch asserts that the text it replaces is still there,
so a change to the reference breaks loudly here instead of silently producing a
mutant without its bug. The patched source is trusted code: the grader loads it
in its own process to replay failing graphs, and ``grade spec audit`` writes it
out as a submission file.
'''

from __future__ import annotations

import functools
import threading
import types
from dataclasses import dataclass
from importlib import resources
from typing import Final

from harness.diagnosis.catalogue import BUGS

__all__ = ["Mutant", "MUTANTS", "MutantError", "mutant_source", "load_mutant", "reference_source"]


class MutantError(RuntimeError):
    """A patch no longer applies: the reference engine changed under the catalogue."""


@dataclass(frozen=True)
class Mutant:
    bug: str
    patches: tuple[tuple[str, str], ...]
    """(old, new): ``old`` must occur exactly once in the reference source."""
    ops: frozenset[str] | None = None
    """The ops whose rules the patch changes; None when it changes the engine itself. A graph
    without these ops runs exactly as on the reference, so its replay can be skipped."""
    variants: tuple[tuple[tuple[str, str], ...], ...] = ()
    """Other ways to write the same bug (patches like ``patches``): replays try each, and a
    candidate matches the bug when one of them reproduces it. The audit grades ``patches``."""
    shows_on: str = "any"
    """Which graphs the bug can change at all (others run exactly as on the reference):
    ``any``; ``reuse`` (a name used twice, or two passes); ``shared`` (an intermediate used
    twice); ``passes``; ``upstream``; ``constants`` (a leaf that needs no gradient);
    ``broadcasting``; ``deep`` (deeper than the recursion limit allows); ``never`` (only
    probes show it: memory, no_grad, integrity)."""


# ---- texts of the reference that several mutants replace --------------------------------

_WALK: Final = """\
            grads: dict[int, torch.Tensor] = {id(root): grad}
            for item in reversed(_topological_order(root)):
"""

_ACCUMULATE: Final = """\
                        grads[key] = grads[key] + pg if key in grads else pg
"""

_LEAF: Final = """\
                        item.grad = g.clone() if item.grad is None else item.grad + g
"""

_WHOLE_WALK: Final = """\
            grads: dict[int, torch.Tensor] = {id(root): grad}
            for item in reversed(_topological_order(root)):
                g = grads.pop(id(item), None)
                if isinstance(item, Tensor):
                    if g is not None:
                        # Leaf: accumulate across backward passes, as PyTorch does. Clone so two
                        # leaves never share one tensor that later in-place updates would alias.
                        item.grad = g.clone() if item.grad is None else item.grad + g
                    continue
                node = item
                if g is not None:
                    for target, pg in zip(node.inputs, node.backward(g, node.saved_tensors())):
                        if pg is None or target is None:
                            continue
                        key = id(target)
                        # Out of place: the same tensor may have been handed to several inputs.
                        grads[key] = grads[key] + pg if key in grads else pg
                node.release()
"""

_RELEASE_ALL: Final = """\
            for item in _topological_order(root):
                if isinstance(item, _Node):
                    item.release()
"""

_HELPERS_ANCHOR: Final = """\
def _inputs(item: _Node | Tensor) -> tuple[_Node | Tensor | None, ...]:
    return item.inputs if isinstance(item, _Node) else ()
"""

_RECORD_CONDITION: Final = (
    "        if _grad_enabled and (parents[0].requires_grad or (len(parents) > 1 and parents[1].requires_grad)):\n"
)


def _matmul_left(*ways: tuple[str, str]) -> tuple:
    """Mutant fields for a wrong gradient of A in A @ B: (with both operands needing one, with only A)."""
    patches = [(("lambda g, s: (g @ s[1].T, s[0].T @ g), (a, b))", f"lambda g, s: ({both}, s[0].T @ g), (a, b))  # BUG"),
                ("lambda g, s: (g @ s[0].T, None), (b,))", f"lambda g, s: ({alone}, None), (b,))  # BUG"))
               for both, alone in ways]
    return patches[0], frozenset({"matmul"}), tuple(patches[1:])


def _matmul_right(*ways: tuple[str, str]) -> tuple:
    """Mutant fields for a wrong gradient of B in A @ B: (with both operands needing one, with only B)."""
    patches = [(("lambda g, s: (g @ s[1].T, s[0].T @ g), (a, b))", f"lambda g, s: (g @ s[1].T, {both}), (a, b))  # BUG"),
                ("lambda g, s: (None, s[0].T @ g), (a,))", f"lambda g, s: (None, {alone}), (a,))  # BUG"))
               for both, alone in ways]
    return patches[0], frozenset({"matmul"}), tuple(patches[1:])


def _after_helpers(code: str) -> tuple[str, str]:
    """A patch that adds ``code`` after the engine's last graph helper."""
    return _HELPERS_ANCHOR, _HELPERS_ANCHOR + "\n\n" + code


MUTANTS: Final[dict[str, Mutant]] = {m.bug: m for m in (
    # ---- accumulation ----
    # Which contribution survives depends on the order the walk meets the consumers in:
    # the variant keeps the first, as an engine walking the consumers the other way round.
    Mutant("overwrite", ((_ACCUMULATE, "                        grads[key] = pg  # BUG: replaces earlier contributions\n"),),
           variants=(((_ACCUMULATE, "                        grads.setdefault(key, pg)  # BUG: drops later contributions\n"),),),
           shows_on="reuse"),
    # An engine whose own rules make contiguous gradients would never meet an expanded view:
    # .contiguous() copies only those, so the aliasing itself is kept.
    Mutant("aliased_grads", (
        (_ACCUMULATE, """\
                        if key in grads:
                            grads[key] += pg  # BUG: in place, into a tensor other inputs may hold too
                        else:
                            grads[key] = pg.contiguous()  # (the same tensor, unless it was an expanded view)
"""),
        (_LEAF, "                        item.grad = g.contiguous() if item.grad is None else item.grad.add_(g)  # BUG: shared\n"),
    ),
        # Which tensors end up shared depends on the order the walk meets the inputs in: the
        # variant walks them right to left, as an engine that pushes inputs on a stack does.
        variants=((
            (_ACCUMULATE, """\
                        if key in grads:
                            grads[key] += pg  # BUG: in place, into a tensor other inputs may hold too
                        else:
                            grads[key] = pg.contiguous()  # (the same tensor, unless it was an expanded view)
"""),
            (_LEAF, "                        item.grad = g.contiguous() if item.grad is None else item.grad.add_(g)  # BUG: shared\n"),
            ("    stack: list[tuple[_Node | Tensor, Iterator[_Node | Tensor | None]]] = [(root, iter(_inputs(root)))]\n",
             "    stack: list[tuple[_Node | Tensor, Iterator[_Node | Tensor | None]]] = [(root, reversed(_inputs(root)))]\n"),
            ("                stack.append((child, iter(_inputs(child))))\n",
             "                stack.append((child, reversed(_inputs(child))))\n"),
        ),),
        shows_on="reuse"),
    Mutant("passes_reset", ((_LEAF, "                        item.grad = g.clone()  # BUG: forgets earlier backward() calls\n"),),
           shows_on="passes"),
    Mutant("embedding_overwrite", ((
        "            return (torch.zeros(table_shape, dtype=g.dtype).index_add_(0, idx.reshape(-1), flat),)\n",
        """\
            table = torch.zeros(table_shape, dtype=g.dtype)
            table[idx.reshape(-1)] = flat  # BUG: a repeated id keeps one row, not the sum
            return (table,)
"""),), ops=frozenset({"index"})),
    # ---- order ----
    Mutant("discovery_order", (
        (_WALK, _WALK.replace("reversed(_topological_order(root)):", "_discovery_order(root):  # BUG: not topological")),
        _after_helpers('''\
def _discovery_order(root: _Node | Tensor) -> list[_Node | Tensor]:
    """Nodes in the order a depth-first search from the output first reaches them; leaves last."""
    nodes: list[_Node | Tensor] = []
    leaves: list[_Node | Tensor] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        (leaves if isinstance(item, Tensor) else nodes).append(item)
        stack.extend(child for child in _inputs(item) if child is not None)
    return nodes + leaves
'''),
    ), shows_on="shared"),
    Mutant("breadth_first", (
        (_WALK, _WALK.replace("reversed(_topological_order(root)):", "_breadth_first(root):  # BUG: not topological")),
        _after_helpers('''\
def _breadth_first(root: _Node | Tensor) -> list[_Node | Tensor]:
    """Nodes in breadth-first order from the output, each once; leaves last."""
    nodes: list[_Node | Tensor] = []
    leaves: list[_Node | Tensor] = []
    seen = {id(root)}
    queue = [root]
    for item in queue:  # appended to while walked: a queue
        (leaves if isinstance(item, Tensor) else nodes).append(item)
        for child in _inputs(item):
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
    return nodes + leaves
'''),
    ), shows_on="shared"),
    Mutant("running_totals", ((_WHOLE_WALK, """\
            totals: dict[int, torch.Tensor] = {}
            queue = [(root, grad)]
            for item, g in queue:  # appended to while walked: a queue of contributions
                if isinstance(item, Tensor):
                    item.grad = g.clone() if item.grad is None else item.grad + g
                    continue
                key = id(item)
                totals[key] = totals[key] + g if key in totals else g
                # BUG: the running total goes on again with every contribution, not once when complete
                for target, pg in zip(item.inputs, item.backward(totals[key], item.saved_tensors())):
                    if pg is not None and target is not None:
                        queue.append((target, pg))
""" + _RELEASE_ALL),), shows_on="shared"),
    Mutant("path_recursion", (
        (_WHOLE_WALK, "            _propagate(root, grad)\n" + _RELEASE_ALL),
        _after_helpers('''\
def _propagate(item: _Node | Tensor, g: torch.Tensor) -> None:
    """Hand a contribution down every path to the leaves: right sums, one visit per path (the bug)."""
    if isinstance(item, Tensor):
        item.grad = g.clone() if item.grad is None else item.grad + g
        return
    for target, pg in zip(item.inputs, item.backward(g, item.saved_tensors())):
        if pg is not None and target is not None:
            _propagate(target, pg)  # BUG: once per path, not once per node
'''),
    ), shows_on="deep"),
    Mutant("recursive_topo", (("""\
    order: list[_Node | Tensor] = []
    visited = {id(root)}
    stack: list[tuple[_Node | Tensor, Iterator[_Node | Tensor | None]]] = [(root, iter(_inputs(root)))]
    while stack:
        item, inputs = stack[-1]
        for child in inputs:
            if child is not None and id(child) not in visited:
                visited.add(id(child))
                stack.append((child, iter(_inputs(child))))
                break
        else:
            stack.pop()
            order.append(item)
    return order
""", """\
    order: list[_Node | Tensor] = []
    visited = {id(root)}

    def visit(item: _Node | Tensor) -> None:
        for child in _inputs(item):
            if child is not None and id(child) not in visited:
                visited.add(id(child))
                visit(child)  # BUG: one Python frame per node along the deepest path
        order.append(item)

    visit(root)
    return order
"""),), shows_on="deep"),
    # ---- op rules ----
    Mutant("matmul_left_flipped", *_matmul_left(("s[1].T @ g", "s[0].T @ g"),  # B^T G instead of G B^T
                                                ("g @ s[1]", "g @ s[0]"),  # the transpose forgotten
                                                ("s[1] @ g.T", "s[0] @ g.T"))),  # the gradient's transpose
    Mutant("matmul_right_flipped", *_matmul_right(("g @ s[0].T", "g @ s[0].T"),  # G A^T instead of A^T G
                                                  ("s[0] @ g", "s[0] @ g"),  # the transpose forgotten
                                                  ("g.T @ s[0]", "g.T @ s[0]"))),  # the gradient's transpose
    Mutant("mul_wrong_operand", (
        ("rule, saved = (lambda g, s: (g * s[1], g * s[0])), (a, b)",
         "rule, saved = (lambda g, s: (g * s[0], g * s[1])), (a, b)  # BUG: each times itself"),
        ("rule, saved = (lambda g, s: (g * s[0], None)), (b,)", "rule, saved = (lambda g, s: (g * s[0], None)), (a,)  # BUG"),
        ("rule, saved = (lambda g, s: (None, g * s[0])), (a,)", "rule, saved = (lambda g, s: (None, g * s[0])), (b,)  # BUG"),
    ), ops=frozenset({"mul"})),
    Mutant("sum_not_expanded", (
        ('return self._record(self.data.sum(), "sum", (self,), lambda g, _: (g.expand(shape),))',
         'return self._record(self.data.sum(), "sum", (self,), lambda g, _: (g,))  # BUG: not spread over shape'),
    ), ops=frozenset({"sum"})),
    Mutant("relu_mask_from_grad", (
        ('return self._record(out, "relu", (self,), lambda g, s: (g * s[0].sign(),), (out,))',
         'return self._record(out, "relu", (self,), lambda g, s: (g * (g > 0),), (out,))  # BUG: mask of g'),
    ), ops=frozenset({"relu"})),
    Mutant("relu_grad_at_zero", (
        ('return self._record(out, "relu", (self,), lambda g, s: (g * s[0].sign(),), (out,))',
         'return self._record(out, "relu", (self,), lambda g, s: (g * (s[0] >= 0),), (self.data,))  # BUG: >= 0'),
    ), ops=frozenset({"relu"})),
    Mutant("relu_in_place", (
        # Through .data, as an engine without version counters would: the reference's check of
        # saved tensors would otherwise turn the silent corruption into an error.
        ("        out = self.data.clamp(min=0)\n", "        out = self.data.data.clamp_(min=0)  # BUG: in place, into the input\n"),
    ), ops=frozenset({"relu"})),
    Mutant("cross_entropy_unshifted", (
        ("        shifted = z - z.max(dim=1, keepdim=True).values\n",
         "        shifted = z  # BUG: exp() of the raw logits\n"),
    ), ops=frozenset({"cross_entropy"})),
    Mutant("mean_unscaled", (
        ("            return (d * (g / p.shape[0]),)\n", "            return (d * g,)  # BUG: not divided by the batch size\n"),
    ), ops=frozenset({"cross_entropy"})),
    # ---- requires_grad and gradient types ----
    Mutant("requires_grad_ignored", ((_RECORD_CONDITION, "        if _grad_enabled:  # BUG: whatever the inputs\n"),),
           shows_on="constants"),
    Mutant("grad_has_history", ((
        "        self.data = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)\n",
        """\
        self.data = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
        if requires_grad and self.data.is_floating_point():
            self.data.requires_grad_()  # BUG: torch records its own graph too
"""),), shows_on="never"),
    # ---- broadcasting and the upstream gradient ----
    Mutant("broadcast_not_reduced", ((
        "    return lambda g, s: tuple(d if d is None else _unbroadcast(d, shape) for d, shape in zip(rule(g, s), shapes))\n",
        "    return rule  # BUG: gradients keep the broadcast shape\n"),
    ), shows_on="broadcasting"),
    Mutant("broadcast_wrong_axes", (
        ("    grad = grad.sum(dim=tuple(range(extra))) if extra > 0 else grad\n",
         "    grad = grad.sum(dim=tuple(range(-extra, 0))) if extra > 0 else grad  # BUG: trailing axes\n"),
        ("    return grad.reshape(shape)\n", "    return grad\n"),
    ), shows_on="broadcasting"),
    Mutant("upstream_ignored", ((_WALK, _WALK.replace("{id(root): grad}", "{id(root): torch.ones_like(self.data)}  # BUG")),),
           shows_on="upstream"),
    # ---- memory and no_grad ----
    Mutant("graph_kept_alive", (("                node.release()\n",
                                  "                # BUG: the node keeps its inputs and saved tensors\n"),),
           shows_on="never"),
    Mutant("no_grad_records", ((_RECORD_CONDITION, _RECORD_CONDITION.replace("_grad_enabled and ", "")
                                .replace(":\n", ":  # BUG: recording is never switched off\n")),), shows_on="never"),
    Mutant("no_grad_not_restored", (("""\
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous
""", """\
    previous, _grad_enabled = _grad_enabled, False
    yield  # BUG: an exception in the block skips the line below
    _grad_enabled = previous
"""),), shows_on="never"),
    Mutant("no_grad_not_nested", (("""    finally:
        _grad_enabled = previous
""", """    finally:
        _grad_enabled = True  # BUG: switched on, whatever it was before the block
"""),), shows_on="never"),
)}


def reference_source() -> str:
    """The text of the reference engine every mutant is made from."""
    return resources.files("reference").joinpath("engine.py").read_text(encoding="utf-8")


@functools.cache
def mutant_source(bug_id: str, variant: int = 0) -> str:
    """The reference engine with ``bug_id``'s patches (or its ``variant``-th other way) applied.

    Raises MutantError when a patch no longer applies.
    """
    mutant = MUTANTS[bug_id]
    patches = mutant.patches if variant == 0 else mutant.variants[variant - 1]
    source = reference_source()
    for old, new in patches:
        found = source.count(old)
        if found != 1:
            raise MutantError(f"mutant {bug_id}: the text to patch occurs {found} times in reference/engine.py, "
                              f"expected once: {old.strip().splitlines()[0]!r}")
        source = source.replace(old, new)
    name = next(b.name for b in BUGS if b.id == bug_id)
    return f"# Mutant {bug_id}: the reference engine with one bug: {name}.\n{source}"


_lock = threading.Lock()
_loaded: dict[tuple[str, int], types.ModuleType] = {}


def load_mutant(bug_id: str, variant: int = 0) -> types.ModuleType:
    """The mutant engine as a module in this process (trusted code, loaded once)."""
    with _lock:
        key = (bug_id, variant)
        if key not in _loaded:
            name = f"{bug_id}_{variant}" if variant else bug_id
            module = types.ModuleType(f"harness.diagnosis.mutant_{name}")
            module.__file__ = f"<mutant {name}>"
            exec(compile(mutant_source(bug_id, variant), module.__file__, "exec"), module.__dict__)  # noqa: S102
            _loaded[key] = module
        return _loaded[key]
