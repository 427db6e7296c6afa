"""Grading many submissions at once: find them, grade each in its own sandbox, write what interviewers read.

collect.py (folders and zips -> submissions), grading.py (one submission, whatever
happens), pools.py (threads here) and remote.py (a Dask cluster), runner.py (the
output folder, resume, summaries), similarity.py (alike pairs), progress.py,
command.py (``grade batch``). Nothing is imported here: ``grade --help`` lists the
command without importing torch.
"""
