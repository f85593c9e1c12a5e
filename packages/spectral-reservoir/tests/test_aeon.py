"""SARCAeonClassifier passes aeon's own estimator checks (aeon installed: the [aeon] extra)."""

import pytest

pytest.importorskip("aeon")


def test_aeon_check_estimator_passes():
    from aeon.testing.estimator_checking import check_estimator

    from spectral_reservoir.aeon_estimator import SARCAeonClassifier

    results = check_estimator(SARCAeonClassifier, raise_exceptions=False)
    failed = {k: v for k, v in results.items() if v != "PASSED"}
    assert len(results) > 10 and not failed, failed
