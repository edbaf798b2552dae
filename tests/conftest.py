"""Shared pytest configuration: hypothesis profiles.

Select a profile with the ``HYPOTHESIS_PROFILE`` environment variable:

``dev`` (default)
    100 examples per property, no deadline: quick local runs.
``ci``
    200 examples per property, no deadline (CI machines are slow and shared, and no test here
    asserts timing), the reproduction blob printed on failure.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
