"""The checks: targeted rules, random-graph properties, the integrity probes run in the sandbox
(accuracy, backward cost), what they run on (context, strategies, examples), and the
script that reproduces a failure (snippets)."""
