"""Grading many submissions at once: find them, grade each in its own sandbox, write what interviewers read.

collect.py (folders and zips -> submissions), grading.py (one submission, whatever
happens), pools.py (threads here) and remote.py (a Dask cluster), runner.py (the
output folder, resume, summaries), similarity.py (alike pairs), progress.py,
command.py (``grade batch``).
"""

from harness.batch.collect import Submission, collect
from harness.batch.grading import Graded, grade_one
from harness.batch.pools import LocalPool, SandboxSource
from harness.batch.runner import BatchInterrupted, Outputs, run_batch, settings_record

__all__ = ["Submission", "collect", "Graded", "grade_one", "LocalPool", "SandboxSource", "BatchInterrupted",
           "Outputs", "run_batch", "settings_record"]
