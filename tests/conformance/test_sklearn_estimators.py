"""scikit-learn's own estimator checks on every registry entry marked ``sklearn: True``.

A check an estimator cannot pass by design (a calibrator's input must be a probability matrix,
say) is listed in the entry's ``expected_failed`` with the reason, and the package README must
name it: the second test fails when a README forgets one.
"""

from __future__ import annotations

import pathlib

import pytest
from conformance_registry import all_entries
from sklearn.utils.estimator_checks import parametrize_with_checks

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKLEARN = [e for e in all_entries() if e.kind == "estimator" and e.raw.get("sklearn")]


# keyed on class and constructor arguments: one class may be declared several times
_SKIPS = {
    (e.raw["cls"], repr(e.raw["cls"](**e.raw.get("init", {})))): e.raw.get("expected_failed", {})
    for e in SKLEARN
}


def _expected_failed(est) -> dict[str, str]:
    return dict(_SKIPS.get((type(est), repr(est)), {}))


@parametrize_with_checks(
    [e.raw["cls"](**e.raw.get("init", {})) for e in SKLEARN],
    expected_failed_checks=_expected_failed,
)
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.id) for e in SKLEARN])
def test_skipped_checks_are_listed_in_the_readme(entry) -> None:
    readme = (ROOT / "packages" / entry.package / "README.md").read_text()
    missing = [c for c in entry.raw.get("expected_failed", {}) if c not in readme]
    assert not missing, f"{entry.package} README does not list the skipped checks {missing}"


@pytest.mark.parametrize(
    "entry", [pytest.param(e, id=e.id) for e in all_entries() if e.kind == "estimator"]
)
def test_every_estimator_runs_the_checks_or_says_why_not(entry) -> None:
    why = entry.raw.get("not_sklearn")
    assert entry.raw.get("sklearn") or (isinstance(why, str) and len(why) > 20), (
        f"{entry.id}: mark it sklearn=True or give not_sklearn, the reason its input is not (X, y)"
    )
