"""Errors the grader reports to its user as a one-line message and exit code 2."""


class HarnessError(Exception):
    """Bad input to the grader itself: a missing file, a bad rubric or spec, a bad option."""


class MissingSubmission(HarnessError):
    """The file to grade does not exist; ``beside`` names the Python files and notebooks in its folder."""

    def __init__(self, path: object, beside: list[str]) -> None:
        listed = f"; its folder holds {', '.join(beside)}" if beside else ""
        super().__init__(f"{path}: no such file{listed}")
        self.beside = beside
