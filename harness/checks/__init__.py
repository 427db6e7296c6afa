"""The checks: targeted rules, random-graph properties, and what they run on (context, strategies)."""
