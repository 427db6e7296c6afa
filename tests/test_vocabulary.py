"""The vocabulary is the one place its words are defined; the modules that spell them agree with it."""

import ast
from pathlib import Path

from harness.vocabulary import FAILING, FEATURES, OUTCOMES

ROOT = Path(__file__).resolve().parent.parent


def test_failing_outcomes_are_outcomes():
    assert set(FAILING) < set(OUTCOMES)
    assert "not_attempted" not in FAILING and "skipped" not in FAILING


def test_the_worker_reports_exactly_the_features_the_vocabulary_names():
    # Read from the worker's source: running a worker here would cost a sandbox for one dict.
    tree = ast.parse((ROOT / "harness" / "sandbox" / "worker" / "evaluator.py").read_text())
    hello = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "do_hello")
    keys = {k.value for n in ast.walk(hello) if isinstance(n, ast.Dict)
            for k in n.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    keys |= {n.slice.value for n in ast.walk(hello) if isinstance(n, ast.Subscript)
             and isinstance(n.value, ast.Name) and n.value.id == "features" and isinstance(n.slice, ast.Constant)}
    facts = {fact for fact, _ in FEATURES.values()}
    assert keys - {"has_class", "members", "features"} == facts


def test_no_module_spells_its_own_failing_outcomes():
    spelled = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.Set, ast.List)) and len(node.elts) == len(FAILING) and \
                    {getattr(e, "value", None) for e in node.elts} == set(FAILING):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [s for s in spelled if not s.startswith("harness/vocabulary.py:")] == []
    assert len(spelled) == 1
