"""Errors the grader reports to its user as a one-line message and exit code 2."""


class HarnessError(Exception):
    """Bad input to the grader itself: a missing file, a bad rubric or spec, a bad option."""
