"""Diagnosis: which classic bug explains a grade's failures, and the catalogue that proves the checks.

catalogue.py (the bugs, as data), mutants.py (each bug as the reference engine with one
patch), matching.py (replaying failing graphs through the mutants), symptoms.py (naming a
wrong gradient no bug explains by the op, operand and rule mutation that reproduce it),
rule_replay.py (the backward pass in torch that tries each rule mutation), causes.py (root
causes: failures grouped by bug). The kill matrix behind ``grade spec audit`` is harness/cli/audit.py.
"""

from harness.diagnosis.catalogue import BUGS, Bug, bug

__all__ = ["BUGS", "Bug", "bug"]
