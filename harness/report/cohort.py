"""A cohort as a batch's exports read it: the summary, the reports it summarises, and the sources the page
shows side by side for similar pairs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from harness.report.model import Report

__all__ = ["Cohort"]


@dataclass(frozen=True)
class Cohort:
    summary: Mapping[str, Any]
    """``report.summary.summarise``'s summary: rows with every person's decision applied."""
    reports: Mapping[str, Report]
    """Every graded submission's report, by id."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """The sources of the submissions in similar pairs, by id (the page shows them side by side)."""
