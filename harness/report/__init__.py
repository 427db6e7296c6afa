"""What a grade produces (the Report model), how it is scored (the rubric) and rendered."""

from harness.report.model import OUTCOMES, STATUSES, CheckResult, Report, exit_code

__all__ = ["CheckResult", "Report", "OUTCOMES", "STATUSES", "exit_code"]
