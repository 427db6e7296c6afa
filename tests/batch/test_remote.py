"""`grade batch --scheduler`: a Dask LocalCluster grades exactly what the local run grades."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.batch import remote
from harness.batch.remote import grade_task
from harness.cli import main

pytestmark = pytest.mark.slow

distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[2]
TIMING_KEYS = {"timings", "seconds", "backward_seconds"}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def test_a_dask_cluster_gives_the_local_results(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(ROOT / "tests" / "solutions" / "correct_core.py", subs / "alice.py")
    shutil.copy(ROOT / "tests" / "solutions" / "overwrite_grad.py", subs / "bob.py")
    (subs / "carol").mkdir()  # a row without a file: travels as its problem
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("levels: {core: 40}\nweights: {core.accumulation: 5}\ninterview_bar: 0.5\n")
    options = ["--level", "core", "--max-examples", "5", "--only-specs", ROOT / "specs" / "core", "--rubric", rubric,
               "--allow-basic-isolation"]
    runner = CliRunner()
    local = runner.invoke(main, ["batch", str(subs), "-o", str(tmp_path / "local"), *map(str, options)],
                          catch_exceptions=False)
    assert local.exit_code == 0, local.output
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        remote = runner.invoke(main, ["batch", str(subs), "-o", str(tmp_path / "remote"), "--scheduler",
                                      cluster.scheduler_address, *map(str, options)], catch_exceptions=False)
    assert remote.exit_code == 0, remote.output
    for sid in ("alice", "bob", "carol"):
        here = json.loads((tmp_path / "local" / "results" / f"{sid}.json").read_text())
        there = json.loads((tmp_path / "remote" / "results" / f"{sid}.json").read_text())
        assert without_timings(there) == without_timings(here), sid
    bob = json.loads((tmp_path / "local" / "results" / "bob.json").read_text())
    assert bob["max_score"] == 40 and bob["file"] == str(subs / "bob.py")  # the rubric and the path travelled
    carol = json.loads((tmp_path / "remote" / "results" / "carol.json").read_text())
    assert carol["message"].startswith("no solution.py in the folder")
    snippet = next(c for c in bob["checks"] if c["id"] == "core.accumulation")["details"]["snippet"]
    # runnable here, where the submission is
    assert f"Tensor = runpy.run_path({str(subs / 'bob.py')!r})['Tensor']" in snippet


def test_a_worker_of_another_version_refuses(tmp_path):
    graded = grade_task("ann", "subs/ann.py", "subs/ann.py", b"x = 1\n", "", {"level": "core"},
                        {"specs": [], "rubric": None}, "0.0.0-other", True)
    assert graded.report.status == "error" and graded.report.file == "subs/ann.py"
    assert graded.report.message.startswith("the Dask worker runs grader 0.1.0, the batch 0.0.0-other")


def test_an_unreachable_scheduler_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(remote, "CONNECT_SECONDS", 1.0)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["batch", str(subs), "-o", str(tmp_path / "out"), "--scheduler",
                                       "tcp://127.0.0.1:9", "--allow-basic-isolation"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: cannot reach the Dask scheduler at tcp://127.0.0.1:9: ")
    assert len(result.stderr.splitlines()) == 1
