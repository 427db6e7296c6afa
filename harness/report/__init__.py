"""What a grade produces (the Report model), how it is scored (the rubric) and rendered."""

from harness.report.model import (OUTCOMES, STATUSES, CheckResult, Interview, Report, ReviewEntry, RootCause,
                                  exit_code)

__all__ = ["CheckResult", "Interview", "Report", "ReviewEntry", "RootCause", "OUTCOMES", "STATUSES", "exit_code"]
