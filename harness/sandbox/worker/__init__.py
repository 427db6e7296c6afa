"""The worker: the one process that imports a submission and answers the grader's requests, with
the integrity tripwires and the audit hook it installs before the submission's first line runs.

Everything here runs beside candidate code: it reports what it observed, and the grader, in
another process, judges it. Its words can only incriminate.
"""
