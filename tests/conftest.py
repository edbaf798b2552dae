"""Shared pytest configuration: hypothesis profiles.

Select a profile with the ``HYPOTHESIS_PROFILE`` environment variable:

``dev`` (default)
    100 examples per property, no deadline: quick local runs.
``ci``
    200 examples per property, no deadline (CI machines are slow and shared, and no test here
    asserts timing), the reproduction blob printed on failure.

Tests marked ``@pytest.mark.slow`` (exhaustive sweeps, seconds to minutes) are skipped unless
the environment variable ``STRIDED_SLOW`` is ``1``; ``.ci/run`` sets it for its main test run.
"""

from __future__ import annotations

import os

import pytest
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


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``slow`` unless ``STRIDED_SLOW=1``."""
    if os.environ.get("STRIDED_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set STRIDED_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
