"""Ties in maximum and max_pool2d: every valid convention passes, the full gradient to every tied element fails."""

from __future__ import annotations

import pytest

from harness.diagnosis.mutants import reference_source
from harness.grade import GradeOptions, grade

_FULL_MAXIMUM = ("            return (g * w, g * (1 - w))\n",
                 "            return (g * (a >= b), g * (b >= a))  # every tied element takes all\n")
_FIRST_MAXIMUM = ("        wins = (a > b).to(a.dtype) + 0.5 * (a == b).to(a.dtype)\n",
                  "        wins = (a >= b).to(a.dtype)  # a tie goes to the left operand\n")
_FULL_POOL = (
    "            routed = torch.zeros(*idx.shape, k * k, dtype=g.dtype).scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))\n",
    "            routed = (windows == out.unsqueeze(-1)).to(g.dtype) * g.unsqueeze(-1)  # every tied element takes all\n")
_SPLIT_POOL = (
    _FULL_POOL[0],
    "            top = (windows == out.unsqueeze(-1)).to(g.dtype)\n"
    "            routed = top / top.sum(-1, keepdim=True) * g.unsqueeze(-1)  # a tie splits evenly\n")

ENGINES = {"reference": (), "maximum_left_wins": (_FIRST_MAXIMUM,), "pool_split": (_SPLIT_POOL,),
           "maximum_full": (_FULL_MAXIMUM,), "pool_full": (_FULL_POOL,)}


def _engine(patches, tmp_path, name):
    source = reference_source()
    for old, new in patches:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


@pytest.mark.parametrize("name", ENGINES)
def test_ties_accept_every_convention_and_fail_double_counting(name, launcher, tmp_path):
    report = grade(_engine(ENGINES[name], tmp_path, name), GradeOptions(levels=("extensions",), max_examples=5),
                   launcher)
    outcomes = {c.id: c for c in report.checks if c.id.startswith("extensions.ties.")}
    failing = {cid for cid, c in outcomes.items() if c.outcome != "passed"}
    expected = {"maximum_full": {"extensions.ties.maximum"}, "pool_full": {"extensions.ties.max_pool2d"}}
    assert failing == expected.get(name, set()), {cid: outcomes[cid].message for cid in failing}
    for cid in failing:
        assert "the full gradient to every tied element" in outcomes[cid].message
        first = report.root_causes[0]
        assert (first.op, first.symptom) == (cid.removeprefix("extensions.ties."), "tied_all"), first.name
