"""The house's layering, read from the imports of every module under harness/ with ``ast``.

Every import counts: at module level, inside functions, and modules named by a string
(``importlib.import_module("harness...")``, the command line's lazy subcommands, the list of
modules the grader preloads). Three rules:

- no import cycle between units (a subpackage, or a top-level module of harness/);
- no import from a lower stage to a higher one, in the order of ``STAGES`` below;
- no module over ``MAX_LINES`` lines, but for the ones listed in ``LONG_MODULES`` (a list
  that may only shrink: an entry whose module got short enough fails until it is removed).

Run ``python tests/test_layers.py`` for the figures (cycles, upward imports, largest modules).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STAGES: list[tuple[str, tuple[str, ...]]] = [
    # Data and vocabulary: what every stage may import; it imports no stage. The op table, graph
    # programs and their comparison, the concepts, the interview's terms, the result model
    # with the escaping of the candidate's text it carries, and the terminal text is wrapped to.
    ("vocabulary and data", ("harness", "harness.errors", "harness.vocabulary", "harness.ops", "harness.program",
                             "harness.compare", "harness.lazy_modules", "harness.collector", "harness.concepts", "harness.agreements",
                             "harness.notebooks", "harness.report", "harness.report.model", "harness.report.safety",
                             "harness.options", "harness.terminal", "harness.graph_shapes")),
    # What the source alone decides, before anything runs: reading the file, the static scan.
    ("integrity (static)", ("harness.preflight", "harness.stubs", "harness.integrity.*")),
    # Running the submission: the grader's side, the worker and its tripwires, the task's variants
    # (the worker reads which formulas a variant allows).
    ("sandbox", ("harness.sandbox.*", "harness.variants")),
    ("checks", ("harness.checks.*",)),
    ("specs", ("harness.specs.*",)),
    ("diagnosis", ("harness.diagnosis.*",)),
    ("scoring", ("harness.report.rubric", "harness.report.score")),
    # grade.py composes the stages above into a Report: the plan, and the grader's own process made safe first.
    ("composing", ("harness.grade", "harness.plan", "harness.protection")),
    # Renderers read the result model; nothing in the pipeline imports them.
    ("renderers", ("harness.report.*",)),
    ("sessions", ("harness.batch.*", "harness.practice", "harness.watch")),
    ("command line", ("harness.cli.*",)),
]

MAX_LINES = 500
LONG_MODULES: dict[str, str] = {
}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the harness modules it imports (anywhere in its body, or names by a string)."""

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [s for s in subs if s in mods]
                if len(targets) < len(subs):  # a name from the module itself, not only submodules
                    targets.append(base)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods:
                targets = [node.value]
            for target in targets:
                if target.split(".")[0] == "harness" and (found := known(target)) and found != name:
                    edges[name].add(found)
    return edges


def unit(name: str) -> str:
    return ".".join(name.split(".")[:2])


def stage(name: str) -> int:
    best, depth = None, -1
    for rank, (_, members) in enumerate(STAGES):
        for member in members:
            if member == name and len(name) > depth:
                best, depth = rank, len(name) + 1  # an exact entry beats any package prefix
            elif member.endswith(".*") and (name + ".").startswith(member[:-1]) and len(member) - 2 > depth:
                best, depth = rank, len(member) - 2
    if best is None:
        raise AssertionError(f"{name} has no stage: add it to STAGES in tests/test_layers.py")
    return best


def cycles(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            component.append(v)
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def unit_cycles(mods: dict[str, Path], edges: dict[str, set[str]]) -> list[list[str]]:
    between: dict[str, set[str]] = defaultdict(set)
    for a, targets in edges.items():
        between[unit(a)] |= {unit(b) for b in targets if unit(b) != unit(a)}
    return cycles({unit(m) for m in mods}, between)


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} ({STAGES[stage(a)][0]}) imports {b} ({STAGES[stage(b)][0]})"
                  for a, targets in edges.items() for b in targets if stage(b) > stage(a))


def sizes(mods: dict[str, Path]) -> dict[str, int]:
    return {name: len(path.read_text().splitlines()) for name, path in mods.items()}


def test_no_import_cycle_between_units():
    mods = modules()
    assert unit_cycles(mods, imports(mods)) == []


def test_no_module_imports_a_higher_stage():
    mods = modules()
    for name in mods:
        stage(name)  # every module has a stage
    assert upward(imports(mods)) == []


TORCH_FREE = ("harness.vocabulary", "harness.concepts", "harness.report", "harness.practice", "harness.ops",
              "harness.program", "harness.compare", "harness.specs.loader", "harness.specs.cases",
              "harness.specs.format", "harness.specs.expressions", "harness.specs.yaml_nodes", "harness.specs.text")
"""Read without torch: the words, the result model, the scoring and every renderer (the command line
shows a preflight verdict in milliseconds while the worker starts importing torch). The op table, graph
programs, comparisons and spec cases compute with torch, but name it through ``harness.lazy_modules``:
torch is imported when a graph first runs, not when they are read (``specs.as_checks``, which turns
cases into checks, is grading and may import the checks)."""

TORCH_AT_IMPORT: dict[str, str] = {
    "harness.sandbox": "the worker runs the submission on torch (the grader's side of it is standard library only)",
    "harness.checks": "every check draws graphs, runs torch's oracle or judges tensors",
    "harness.diagnosis.matching": "replays the catalogue's mutant rules on torch tensors; imported only to diagnose",
    "harness.diagnosis.symptoms": "measures factors and sizes of gradients on torch tensors; imported only to diagnose",
    "harness.diagnosis.rule_replay": "mutates op rules and replays backward on torch tensors; imported only to diagnose",
    "harness.diagnosis.whole_rules": "the wrong rules a whole op's backward is written with, on torch tensors; imported "
                                     "only to diagnose (by rule_replay)",
}
"""The only modules (or packages) that import torch when they are imported, and why. Anywhere else torch is
imported inside the function that grades, or named lazily."""


def _is_torch_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch" for a in node.names)
    return isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch"


def imports_torch(path: Path) -> bool:
    return any(_is_torch_import(node) for node in ast.walk(ast.parse(path.read_text())))


def imports_torch_when_imported(path: Path) -> bool:
    """An import of torch that runs when the module is imported: anywhere but inside a function."""
    todo = list(ast.parse(path.read_text()).body)
    while todo:
        node = todo.pop()
        if _is_torch_import(node):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def test_the_words_the_model_and_the_renderers_import_no_torch():
    """Not even through another module, at module level or inside a function."""
    mods = modules()
    edges = imports(mods)
    offenders = []
    for name in mods:
        if not any(name == root or name.startswith(root + ".") for root in TORCH_FREE):
            continue
        seen, todo = {name}, [name]
        while todo:
            for target in edges.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        offenders += [f"{name} -> {m}" for m in sorted(seen) if imports_torch(mods[m])]
    assert offenders == []


def test_only_the_sandbox_the_checks_and_the_diagnosis_import_torch_when_imported():
    def allowed(name: str) -> str | None:
        return next((entry for entry in TORCH_AT_IMPORT if name == entry or name.startswith(entry + ".")), None)

    importing = {name for name, path in modules().items() if imports_torch_when_imported(path)}
    assert sorted(name for name in importing if allowed(name) is None) == []
    assert sorted(set(TORCH_AT_IMPORT) - {allowed(name) for name in importing}) == [], \
        "imports torch no more: remove from TORCH_AT_IMPORT"


RENDERING_PATH = ("harness.report.render", "harness.report.html", "harness.report.tables", "harness.report.files",
                  "harness.report.formats", "harness.batch", "harness.batch.runner", "harness.batch.grading",
                  "harness.practice", "harness.cli", "harness.cli.group", "harness.cli.batch", "harness.cli.spec",
                  "harness.ops", "harness.program", "harness.compare", "harness.specs", "harness.specs.text")


def test_the_renderers_and_the_command_line_leave_torch_unimported():
    """Run, not read: importing the rendering path, reading the op table and the commands that do not grade."""
    code = f"""
import sys
import {", ".join(RENDERING_PATH)}
from harness.ops import OPS
from harness.program import DTYPES
from harness.cli.group import main
assert [spec.render([f"x{{i}}" for i in range(len(spec.slots))]) for spec in OPS.values()]
assert "float64" in DTYPES and list(DTYPES) == ["float64", "float32", "int64"]
for args in (["--help"], ["spec", "--help"], ["batch", "--help"], ["explain", "accumulation"]):
    try:
        main(args, standalone_mode=False)
    except SystemExit:
        pass
print(sorted(m for m in sys.modules if m.split(".")[0] == "torch"))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_modules_stay_short():
    counted = sizes(modules())
    too_long = sorted(f"{name}: {n} lines" for name, n in counted.items() if n > MAX_LINES and name not in LONG_MODULES)
    assert too_long == [], f"over {MAX_LINES} lines: split the module (or, with a reason, list it in LONG_MODULES)"
    short_now = sorted(name for name in LONG_MODULES if counted.get(name, 0) <= MAX_LINES)
    assert short_now == [], "no longer over the limit (or gone): remove from LONG_MODULES"


def test_the_reader_sees_every_kind_of_import():
    """The rules above are only as good as the reader: it must see lazy and string imports."""
    edges = imports(modules())
    assert "harness.cli.batch" in edges["harness.cli.group"]       # the lazy subcommands, by string
    assert "harness.checks.run" in edges["harness.grade"]          # an import inside a function
    assert "harness.sandbox.channel" in edges["harness.sandbox.worker.evaluator"]


if __name__ == "__main__":
    mods = modules()
    edges = imports(mods)
    print("cycles between units:", unit_cycles(mods, edges) or "none")
    print("cycles between modules:", cycles(set(mods), edges) or "none")
    up = upward(edges) if len(sys.argv) < 2 else []
    print(f"upward imports: {len(up)}", *up, sep="\n  ")
    counted = sizes(mods)
    print("modules over", MAX_LINES, "lines:",
          ", ".join(f"{n} {m}" for m, n in sorted(counted.items(), key=lambda kv: -kv[1]) if n > MAX_LINES))
