"""The checks: one ``Check`` type and the registry of declared checks (registry), the targeted rules,
ties and timing, random-graph properties with their fixed situations, the saved-tensor audit, the
integrity probes run in the sandbox (accuracy, backward cost), what they run on (context,
strategies, examples) and the script that reproduces a failure (snippets)."""
