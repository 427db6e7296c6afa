"""The checks: targeted rules, random-graph properties, the integrity probes run in the sandbox
(accuracy, backward cost), and what they run on (context, strategies, examples)."""
