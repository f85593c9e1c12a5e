import numpy as np
import pytest

from spectral_reservoir import extract_periods, hp_filter, wavelet_components


def test_hp_filter_closed_form_and_line():
    line = 3.0 + 0.5 * np.arange(50)
    cycle, trend = hp_filter(line)
    assert np.allclose(trend, line, atol=1e-8) and np.allclose(cycle, 0, atol=1e-8)
    u = np.random.default_rng(0).standard_normal(40)
    n, lamb = len(u), 1600.0
    D = np.diff(np.eye(n), 2, axis=0)
    ref = np.linalg.solve(np.eye(n) + lamb * D.T @ D, u)
    assert np.allclose(hp_filter(u, lamb)[1], ref, atol=1e-8)


def test_hp_filter_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.tsa.filters.hp_filter")
    u = np.random.default_rng(1).standard_normal(120).cumsum()
    c, t = hp_filter(u, 1600)
    c2, t2 = sm.hpfilter(u, 1600)
    assert np.allclose(t, t2, atol=1e-8) and np.allclose(c, c2, atol=1e-8)


def test_wavelet_bands_sum_to_the_signal():
    c = np.random.default_rng(2).standard_normal(257)
    comps = wavelet_components(c)
    assert len(comps) >= 2 and np.allclose(np.sum(comps, axis=0), c, atol=1e-8)


@pytest.mark.parametrize("P", [12, 24, 50])
def test_sine_period_is_in_the_base_set(P):
    t = np.arange(400)
    u = np.sin(2 * np.pi * t / P) + 0.1 * np.random.default_rng(P).standard_normal(400)
    base = extract_periods(u, mode="base")
    assert any(abs(p - P) <= 1 for p in base)
    ext = extract_periods(u, mode="extended-100")
    assert set(base) <= set(ext)


def test_period_rules():
    L = 30
    # constant series: every component peaks at f = 0 or is zero -> fallback 1..9
    assert extract_periods(np.ones(L), mode="base") == list(range(1, 10))
    assert extract_periods(np.ones(L), mode="all-5") == [1, 2, 3, 4, 5]
    assert extract_periods(np.ones(8), mode="all-100") == list(range(1, 8))
    u = np.sin(2 * np.pi * np.arange(200) / 10)
    ext = extract_periods(u, mode="extended-50")
    assert {10, 20, 30, 40} <= set(ext) and max(ext) < 50  # p <= L/5: multiples below min(L, kappa)
    for bad in ("extended", "all-1", "foo-3", "extended-x"):
        with pytest.raises(ValueError, match="period_mode"):
            extract_periods(u, mode=bad)
    with pytest.raises(ValueError, match="top_k"):
        extract_periods(u, top_k=0)
    with pytest.raises(ValueError, match="finite"):
        extract_periods(np.array([1.0, np.nan, 2.0, 3.0]))
