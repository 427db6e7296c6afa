"""The sandbox's zone: a submission sees the grader's worker modules and nothing else of the grader.

The zone is derived from the modules' imports (``harness.sandbox.zone``); these tests derive it a
second way (a parser), check that it holds every module of the trusted and worker folders and
none of the grader's secrets, that the worker's patch tripwire watches each of its modules, and
that a submission searching the sandbox for the grader's files (open, system calls, a torch
storage, the C library) finds none of them. ``tests/test_installed.py`` runs the same search
against a regular (wheel) install.
"""

from __future__ import annotations

import ast
import os
import sys
import textwrap
import types
from pathlib import Path

import pytest

import harness
from harness.sandbox.launch import Limits, Sandbox, bubblewrap_missing
from harness.sandbox.zone import ENTRY, zone_files, zone_modules
from searching import SECRETS, grader_files_found, said, searcher

ROOT = Path(harness.__file__).resolve().parent.parent


def _closure_by_parsing(entry: str) -> set[str]:
    """The same closure, read with ``ast``: imports anywhere in a module, relative imports refused."""
    found: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        path = ROOT.joinpath(*name.split("."))
        source = path / "__init__.py" if (path / "__init__.py").is_file() else path.with_suffix(".py")
        if name in found or not source.is_file():
            continue
        found.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{source}: a relative import, which the zone's reading does not follow"
                if node.module.split(".")[0] == "harness":
                    todo += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names if alias.name.split(".")[0] == "harness"]
    return found


def test_the_zone_is_the_import_closure_of_the_template():
    assert set(zone_modules(ROOT)) == _closure_by_parsing(ENTRY)


def test_every_module_of_the_trusted_and_worker_folders_is_in_the_zone():
    zone = set(zone_modules(ROOT))
    for folder in ("trusted", "worker"):
        for source in (ROOT / "harness" / "sandbox" / folder).glob("*.py"):
            name = f"harness.sandbox.{folder}.{source.stem}".removesuffix(".__init__")
            assert name in zone, f"{source} runs in the sandbox's folders but nothing there imports it"


def test_the_zone_holds_no_secret_of_the_grader():
    zone = set(zone_modules(ROOT))
    for stage in ("diagnosis", "checks", "specs", "report", "batch", "cli", "grade", "plan", "practice", "watch",
                  "integrity.scan", "integrity.scanner", "sandbox.launch"):
        assert not {n for n in zone if n == f"harness.{stage}" or n.startswith(f"harness.{stage}.")}, stage
    bound = {str(f.relative_to(ROOT)) for f in zone_files(ROOT)}
    assert not bound & set(SECRETS)
    assert all(f.startswith("harness/") and f.endswith((".py", ".pyc")) for f in bound), bound


def _functions_of(name: str) -> list[str]:
    module = __import__(name, fromlist=["_"])
    return [key for key, value in vars(module).items()
            if isinstance(value, (types.FunctionType, type)) and getattr(value, "__module__", None) == name]


WATCHED = [name for name in zone_modules(ROOT) if name != ENTRY and _functions_of(name)]
"""Every zone module with something to replace, but the template's: it runs as ``__main__`` and no worker
runs its code."""


@pytest.fixture(scope="module")
def sandbox():
    if bubblewrap_missing():
        pytest.fail(f"the zone's tests need bubblewrap: {bubblewrap_missing()}")
    with Sandbox.launch(Limits(import_seconds=30.0)) as box:
        yield box


def _run_integrity(sandbox, path: Path) -> list[str]:
    from harness.checks.context import CandidateError, Context, Shared
    from harness.program import Leaf, Program, Step
    import torch

    graph = Program((Leaf("x", torch.tensor([1.0, -2.0], dtype=torch.float64)),),
                    (Step("y", "sum", ("x",)),), "y")
    shared = Shared(deadline=float("inf"))
    ctx = Context(sandbox, path, "Tensor", path.stem, shared)
    try:
        ctx.worker()
        ctx.run(graph, timeout=10.0)
    except CandidateError:
        pass
    finally:
        ctx.retire()
    return shared.violations


@pytest.mark.parametrize("module", WATCHED)
def test_replacing_anything_of_a_zone_module_in_the_worker_is_a_violation(sandbox, tmp_path, module):
    name = _functions_of(module)[0]
    path = tmp_path / "patcher.py"
    path.write_text(textwrap.dedent(f'''
        import sys
        import torch

        sys.modules[{module!r}].{name} = lambda *args, **kwargs: None


        class Tensor:
            def __init__(self, data, requires_grad=False):
                self.data, self.requires_grad, self.grad = data, requires_grad, None

            def sum(self):
                out = Tensor(self.data.sum(), self.requires_grad)
                out._of = self
                return out

            def backward(self):
                self._of.grad = torch.ones_like(self._of.data)
        '''))
    violations = _run_integrity(sandbox, path)
    assert any(f"{module}.{name} was replaced" in v for v in violations), violations


def _grader_copies() -> list[Path]:
    """Every copy of the grader this Python can see: this one, and any that a site-packages' ``.pth`` file or
    editable install points to (another checkout installed in the same environment)."""
    import site

    from harness.sandbox.view import _installed_elsewhere

    copies = {ROOT}
    for folder in site.getsitepackages() + [site.getusersitepackages()]:
        for target in _installed_elsewhere(folder):
            top = Path(target).resolve()
            top = top.parent if top.name in ("harness", "reference", "candidate_template") else top
            if (top / "reference" / "engine.py").is_file():
                copies.add(top)
    return sorted(copies)


def test_a_submission_searching_the_sandbox_finds_no_grader_file(sandbox, tmp_path):
    targets = [str(copy / secret) for copy in _grader_copies() for secret in SECRETS] + [str(ROOT / "specs" / "core")]
    worker = sandbox.spawn(searcher(tmp_path, targets))
    worker.kill()
    report = said(worker.output()["stdout"])
    zone = {str(f.relative_to(ROOT)) for f in zone_files(ROOT)}
    assert report["roots"] >= 4 and "harness/sandbox/worker/evaluator.py" in report["grader"], report
    assert grader_files_found(report, zone) == []


def test_the_search_would_find_the_files_where_they_are_readable(tmp_path):
    """The searcher's own proof: run without a sandbox, it reads the model answer and lists the mutants."""
    import subprocess

    targets = [str(ROOT / "reference" / "engine.py")]
    done = subprocess.run([sys.executable, str(searcher(tmp_path, targets))], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    report = said(done.stdout)
    assert {path[len(str(ROOT)) + 1:] for path in report["found"]} >= set(SECRETS), report["found"]
    assert {route for _, route in report["read"]} == {"open", "syscall", "torch_storage", "libc"}
