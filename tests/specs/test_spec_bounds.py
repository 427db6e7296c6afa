"""Spec loading is bounded: the grader reads spec files in its own process, so a case that asks for a
huge tensor is refused, with its position, before anything is allocated.

Each case is loaded in a child process whose address space is capped at 3 GiB: were a bound
missing, the child fails with a memory error (or a different message) instead of taking the
machine's memory, and the test fails.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.specs.format import MAX_ELEMENTS, MAX_FILE_BYTES

CASE = """\
- id: core.bounds.case
  title: "a case asking for much"
  level: {level}
  concepts: [ops]
  inputs:
{inputs}
  output: "{output}"
"""

HUGE = {
    "input": ("core", "    a: {shape: [60000, 60000]}", "a.sum()", "6:16", "input 'a' would hold 3,600,000,000"),
    "many sizes": ("core", "    a: {shape: [100, 100, 100, 100, 100]}", "a.sum()", "6:16",
                   "input 'a' would hold 100,000,000"),
    "broadcast": ("followups", "    a: {shape: [1000, 1]}\n    b: {shape: [1, 10000]}", "(a + b).sum()", "8:15",
                  "`a + b` would hold 10,000,000 elements"),
    "matmul": ("core", "    a: {shape: [5000, 1]}\n    b: {shape: [1, 5000]}", "(a @ b).sum()", "8:15",
               "`a @ b` would hold 25,000,000 elements"),
    "conv2d": ("extensions", "    x: {shape: [1, 1, 1000, 1000]}\n    w: {shape: [64, 1, 1, 1]}", "x.conv2d(w).sum()",
               "8:14", "`x.conv2d(w)` would hold 64,000,000 elements"),
}


def _load_capped(path: Path, *command: str) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run([sys.executable, "-m", "harness.cli", *command, str(path)], capture_output=True, text=True,
                          timeout=120, preexec_fn=cap, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.parametrize("name", sorted(HUGE))
def test_a_case_asking_for_a_huge_tensor_is_refused_with_its_position(tmp_path, name):
    level, inputs, output, where, says = HUGE[name]
    path = tmp_path / "huge.yaml"
    path.write_text(CASE.format(level=level, inputs=inputs, output=output))
    done = _load_capped(path, "spec", "check")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"{path}:{where}: {says}"), done.stdout + done.stderr
    assert f"at most {MAX_ELEMENTS:,}" in done.stdout


def test_grading_with_a_huge_case_is_a_usage_error_before_any_grading(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    level, inputs, output, where, says = HUGE["input"]
    (specs / "huge.yaml").write_text(CASE.format(level=level, inputs=inputs, output=output))
    engine = tmp_path / "engine.py"
    engine.write_text("import torch\n\nclass Tensor:\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "harness.cli", str(engine), "--specs", str(specs), "--level", "core"],
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {specs / 'huge.yaml'}:{where}: {says} elements or more; a spec tensor " \
                                  f"holds at most {MAX_ELEMENTS:,}"


def test_a_case_just_under_the_bound_loads(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(CASE.format(level="core", inputs="    a: {shape: [1000, 1000]}", output="(a * a).sum()"))
    done = _load_capped(path, "spec", "check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_spec_file_is_read_under_a_size_cap_and_only_when_regular(tmp_path):
    from harness.specs.loader import parse_file

    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    parsed = parse_file(big)
    assert [str(e) for e in parsed.errors] == [f"{big}:1:1: cannot read the file: larger than 1024 KiB, the most a "
                                               f"spec file may hold"]
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    opened = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer, so opening it to read does not wait
    try:
        assert [str(e) for e in parse_file(fifo).errors] == [f"{fifo}:1:1: cannot read the file: not a regular file"]
    finally:
        os.close(opened)
