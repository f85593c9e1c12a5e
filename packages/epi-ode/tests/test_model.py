import itertools

import numpy as np
import pytest
import torch
import torchcde

from epi_ode import EARTH
from epi_ode.graph import GLTGraph, sym_normalize

N = 5


def _adj(n=N):
    A = np.eye(n) + np.roll(np.eye(n), 1, 1)
    return np.maximum(A, A.T)


def _model(**kw):
    torch.manual_seed(0)
    kw.setdefault("persistence_init", False)  # so that the latent readout shows in the output
    return EARTH(N, _adj(), hidden=8, heads=2, **kw)


def test_persistence_init_forecasts_last_value():
    x = torch.rand(3, 8, N)
    torch.testing.assert_close(EARTH(N, _adj(), hidden=8, heads=2)(x), x[:, -1])
    torch.testing.assert_close(_model().forward_coeffs(_model().control_coeffs(x)[0]), _model()(x))


def _state(m, B=3):
    torch.manual_seed(1)
    return torch.randn(B, N, len(m.layout), m.hidden)


@pytest.mark.parametrize("infection", ["concat", "mass_action"])
def test_compartment_rates_conserve_in_eval(infection):
    m = _model(infection=infection).eval()
    s, i = torch.randn(2, 4, N, 8).unbind(0)
    a_t = torch.softmax(torch.randn(4, N, N), -1)
    phis, phii, phir = m.field.compartment_rates(s, i, a_t)
    torch.testing.assert_close(phis + phii + phir, torch.zeros_like(s), atol=1e-6, rtol=0)
    m.train()
    out = m.field.compartment_rates(s, i, a_t)
    assert not torch.allclose(sum(out), torch.zeros_like(s))  # dropout is independent per rate


def test_regions_decouple_without_graph_mixing():
    torch.manual_seed(0)
    m = EARTH(N, np.eye(N), hidden=8, heads=2, use_gltg=False).eval()
    x = torch.rand(2, 6, N)
    spline, _ = m._control(x, None, None)
    m.field.control = spline
    y = _state(m, 2).requires_grad_(True)
    out = m.field(torch.tensor(2.5), y)
    grad = torch.autograd.grad(out[:, 0].sum(), y)[0]  # region 0's field
    assert grad[:, 1:].abs().max() == 0 and grad[:, 0].abs().max() > 0
    m2 = EARTH(N, _adj(), hidden=8, heads=2, use_gltg=False).eval()
    params = dict(m.named_parameters())
    m2.load_state_dict(params, strict=False)  # parameters only: keep m2's ring graph buffers
    m2.field.control = spline
    out2 = m2.field(torch.tensor(2.5), y)
    grad2 = torch.autograd.grad(out2[:, 0].sum(), y)[0]
    assert grad2[:, 1:].abs().max() > 0  # a ring graph couples neighbours


def test_gltg_graph_properties():
    torch.manual_seed(0)
    g = GLTGraph(N, 8)
    z = torch.randn(3, N, 8)
    a_hat = g.learned(z)
    assert (a_hat >= 0).all()
    norms = a_hat.norm(dim=-2)
    assert (
        torch.all((norms - 1).abs() < 1e-5) | torch.all(norms < 1e-5)
        or ((norms - 1).abs() < 1e-5).any()
    )
    a_bar = sym_normalize(torch.as_tensor(_adj(), dtype=torch.float32))
    a_t = g(z, a_bar)
    torch.testing.assert_close(a_t.sum(-1), torch.ones(3, N))
    with torch.no_grad():
        g.gate_bias.fill_(60.0)  # C = 1: the static graph only
    torch.testing.assert_close(g(z, a_bar), torch.softmax(a_bar, -1).expand(3, N, N))


def test_graph_trace_constant_without_gltg_and_varies_with_it():
    x = torch.rand(2, 8, N)
    tr = _model(use_gltg=False).eval().graph_trace(x)
    assert tr.shape == (8, 2, N, N)
    torch.testing.assert_close(tr, tr[:1].expand_as(tr))
    tr2 = _model().eval().graph_trace(x)
    torch.testing.assert_close(tr2.sum(-1), torch.ones(8, 2, N))
    assert (tr2[0] - tr2[-1]).abs().max() > 0


def test_constant_control_freezes_every_state():
    m = _model(time_channel=False).eval()
    x = torch.full((2, 7, N), 0.3)
    traj = m.trajectory(x)
    assert set(traj) == {"h", "z", "s", "i", "r"}
    for v in traj.values():
        torch.testing.assert_close(v, v[:1].expand_as(v), atol=1e-6, rtol=0)
    traj2 = _model().eval().trajectory(x)  # time channel on: dX/dtau = (1, 0) drives the state
    assert (traj2["h"][-1] - traj2["h"][0]).abs().max() > 1e-3


def test_masked_points_unused_and_irregular_times():
    m = _model().eval()
    x = torch.rand(2, 8, N)
    mask = torch.ones(2, 8, N, dtype=torch.bool)
    mask[0, 3, 1] = mask[1, 6, 4] = False
    y1 = m(x, mask=mask)
    x2 = x.clone()
    x2[0, 3, 1], x2[1, 6, 4] = 50.0, -7.0
    torch.testing.assert_close(m(x2, mask=mask), y1)
    x3 = x.clone()
    x3[0, 3, 1] = float("nan")
    torch.testing.assert_close(m(x3)[0], m(x, mask=mask[:1].expand(2, -1, -1))[0])
    times = torch.tensor([0.0, 0.5, 1.7, 2.0, 3.3, 4.0, 5.5, 6.1])
    out = m(x, times=times)
    assert out.shape == (2, N) and torch.isfinite(out).all()
    assert not torch.allclose(out, m(x))


def test_rk4_matches_hand_written_three_eighths_rule():
    m = _model().eval()
    x = torch.rand(2, 6, N)
    traj, spline, times = m._solve(x)
    m.field.control = spline
    y = m.initial(spline.evaluate(times[0])).unflatten(-1, (len(m.layout), m.hidden))
    f = m.field
    with torch.no_grad():
        for t0, t1 in itertools.pairwise(times):
            dt = t1 - t0
            k1 = f(t0, y)
            k2 = f(t0 + dt / 3, y + dt * k1 / 3)
            k3 = f(t0 + 2 * dt / 3, y + dt * (k2 - k1 / 3))
            k4 = f(t1, y + dt * (k1 - k2 + k3))
            y = y + dt * (k1 + 3 * (k2 + k3) + k4) / 8
    torch.testing.assert_close(y, traj[-1].detach(), atol=1e-6, rtol=1e-6)


def test_adjoint_gradient_matches_backprop():
    # the adjoint solves its own ODE backwards on the same rk4 grid, so it matches
    # discretise-then-differentiate only up to the solver's error (~0.5 % here, README)
    torch.manual_seed(0)
    kw = dict(hidden=8, heads=2, dropout=0.0, sir_dropout=0.0)
    base = EARTH(N, _adj(), persistence_init=False, **kw).double()
    adj = EARTH(N, _adj(), persistence_init=False, adjoint=True, **kw).double()
    adj.load_state_dict(base.state_dict())
    x = torch.rand(2, 6, N, dtype=torch.float64)
    grads = []
    for m in (base, adj):
        m.zero_grad()
        m(x).pow(2).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in m.parameters() if p.grad is not None]))
    rel = (grads[1] - grads[0]).norm() / grads[0].norm()
    assert rel < 0.02
    assert torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0) > 0.999


def test_ablation_layouts_and_readouts():
    x = torch.rand(2, 8, N)
    for kw, names in (({"use_eano": False}, {"h", "z"}), ({"use_gltg": False}, {"h", "s", "i", "r"}),
                      ({"use_eano": False, "use_gltg": False}, {"h"})):  # fmt: skip
        m = _model(**kw).eval()
        assert set(m.layout) == names
        assert m(x).shape == (2, N)
    m = _model(use_cross_attention=False, kv_compartments=("s", "i", "r")).eval()
    assert m(x).shape == (2, N)


def test_ar_source_time_is_constant_across_samples():
    m = _model(ar_source="time").eval()
    spline, times = m._control(torch.rand(3, 8, N), None, None)
    last = spline.evaluate(times[-4:])[..., 0]
    torch.testing.assert_close(last, last[:1].expand_as(last))


def test_spline_is_torchcde_natural_cubic():
    m = _model().eval()
    x = torch.rand(1, 6, N)
    spline, times = m._control(x, None, None)
    torch.testing.assert_close(spline.evaluate(times)[0, :, :, 1], x[0].T)
    ref = torchcde.CubicSpline(torchcde.natural_cubic_coeffs(x[0].T[..., None], times), times)
    torch.testing.assert_close(spline.derivative(torch.tensor(1.3))[0, :, 1:],
                               ref.derivative(torch.tensor(1.3)))  # fmt: skip


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="heads"):
        EARTH(N, _adj(), hidden=10, heads=4)
    with pytest.raises(ValueError, match="adjacency"):
        EARTH(N, np.ones((N, N + 1)))
    with pytest.raises(ValueError, match="adjacency"):
        EARTH(N, -np.eye(N))
    with pytest.raises(ValueError, match="infection"):
        EARTH(N, _adj(), infection="product")
    with pytest.raises(ValueError, match="dropout"):
        EARTH(N, _adj(), dropout=1.0)
    with pytest.warns(UserWarning, match="isolated"):
        EARTH(N, np.zeros((N, N)))
    m = _model()
    with pytest.raises(ValueError, match="values"):
        m(torch.rand(2, 8, N + 1))
    with pytest.raises(ValueError, match="W >= 4"):
        m(torch.rand(2, 3, N))
    with pytest.raises(TypeError, match="float"):
        m(torch.ones(2, 8, N, dtype=torch.int64))
    with pytest.raises(ValueError, match="inf"):
        m(torch.full((2, 8, N), float("inf")))
    x = torch.rand(2, 8, N)
    x[1, 1:, 3] = float("nan")
    with pytest.raises(ValueError, match="region 3 of window 1"):
        m(x)
    with pytest.raises(ValueError, match="increasing"):
        m(torch.rand(2, 8, N), times=torch.tensor([0.0, 1, 2, 2, 3, 4, 5, 6]))
    with pytest.raises(ValueError, match="mask"):
        m(torch.rand(2, 8, N), mask=torch.ones(2, 8, N))


def test_reference_semantic_normalisation_is_the_transposed_union() -> None:
    # the official normalize_adj2 returns D^-1/2 U^T D^-1/2 (D = row sums of U): for an
    # asymmetric DTW graph it differs from the symmetric default
    rng = np.random.default_rng(0)
    A = np.eye(5) + np.diag(np.ones(4), 1) + np.diag(np.ones(4), -1)
    S = (rng.random((5, 5)) < 0.4).astype(float)
    m = EARTH(5, A, hidden=8).set_semantic_graph(S, normalization="reference")
    U = A + ((S > 0) & ~(A > 0))
    d = U.sum(1) ** -0.5
    expected = (d[:, None] * U.T * d[None, :]).astype(np.float32)
    np.testing.assert_allclose(m.field.a_f.numpy(), expected, rtol=1e-6)
    sym = EARTH(5, A, hidden=8).set_semantic_graph(S).field.a_f.numpy()
    assert not np.allclose(sym, expected)
    with pytest.raises(ValueError, match="normalization"):
        m.set_semantic_graph(S, normalization="rows")


def test_sir_bias_false_has_no_bias_and_keeps_conservation() -> None:
    m = EARTH(4, np.ones((4, 4)), hidden=8, sir_bias=False)
    assert m.field.phi.bias is None and m.field.psi.bias is None
    s, i = torch.rand(2, 4, 8), torch.rand(2, 4, 8)
    m.eval()
    rates = m.field.compartment_rates(s, i, m.field.a_bar)
    torch.testing.assert_close(sum(rates), torch.zeros(2, 4, 8), atol=1e-6, rtol=0)
