"""Test settings shared by every test module.

Hypothesis runs under the "ci" profile: a fixed seed and no example database,
so a test run is reproducible and leaves nothing behind; no deadline, because
graph programs call into torch and a shared machine's timings vary.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")
