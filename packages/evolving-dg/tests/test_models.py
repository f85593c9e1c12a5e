import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone

import evolving_dg as edg

FAST = dict(epochs=2, iters_per_epoch=3, batch_per_domain=8, width=16, random_state=0)


@pytest.fixture(scope="module")
def circle():
    return edg.make_circle(n_domains=8, n_per_domain=20, seed=0).split(4, 2, 2)


@pytest.mark.parametrize(
    "make",
    [
        lambda: edg.ERM(**FAST),
        lambda: edg.ERMLast(**FAST),
        lambda: edg.IRM(**FAST),
        lambda: edg.LSSAE(z_dim=4, **FAST),
        lambda: edg.SYNC(z_dim=4, **FAST),
        lambda: edg.SYNC(
            z_dim=4, sigma_param="consistent", causal_grad="encoder", transductive=False, **FAST
        ),
    ],
)
def test_fit_predict_shapes_determinism_and_no_mutation(make, circle):
    src, val, tgt = circle
    copies = [(X.copy(), y.copy()) for X, y in src]
    m = make().fit(src, val_domains=val)
    for (X, y), (X0, y0) in zip(src, copies, strict=True):
        assert np.array_equal(X, X0) and np.array_equal(y, y0)
    accs = m.score_sequence(tgt)
    assert accs.shape == (2,) and np.all((accs >= 0) & (accs <= 1))
    assert m.next_index_ == 6 and len(m.history_) == 2
    assert all(np.isfinite(v) for h in m.history_ for v in h.values())
    proba = m.predict_proba(tgt[0][0])
    assert proba.shape == (20, 2) and np.allclose(proba.sum(1), 1, atol=1e-5)
    preds = m.predict_sequence([X for X, _ in tgt])
    assert [p.shape for p in preds] == [(20,), (20,)]
    again = clone(m).fit(src, val_domains=val)
    assert np.array_equal(again.score_sequence(tgt), accs)  # same seed, same result
    assert np.array_equal(m.score_sequence(tgt), accs)  # scoring leaves the state unchanged


def test_sync_learns_circle_sources():
    src, _, _ = edg.make_circle(n_domains=12, seed=1).split(6, 2, 4)
    m = edg.SYNC(z_dim=8, epochs=4, iters_per_epoch=15, batch_per_domain=32, width=32).fit(src)
    acc = np.mean([np.mean(m.predict(X, t) == y) for t, (X, y) in enumerate(src)])
    assert acc > 0.7  # beats chance (0.5) on the source domains


def test_causal_losses_train_only_the_maskers_by_default(circle):
    src, _, _ = circle
    for grad, reaches in (("masker", False), ("encoder", True)):
        m = edg.SYNC(z_dim=4, causal_grad=grad, **FAST).fit(src)
        x, y = m._sampler(src, np.random.default_rng(0))()
        m.net_.zero_grad()
        t = m._loss_terms(x, y)
        (t["stc"] + t["dyc"]).backward()
        enc = [p.grad for p in m.net_.phi_st.parameters()] + [p.grad for p in m.net_.phi_dy.parameters()]  # fmt: skip
        got = any(g is not None and g.abs().sum() > 0 for g in enc)
        assert got == reaches
        mk = [p.grad for p in m.net_.mask_st.parameters()]
        assert any(g is not None and g.abs().sum() > 0 for g in mk)


def test_ablation_switches_and_lssae():
    assert edg.ablation("A").get_params()["use_mi"] is False
    c = edg.ablation("C", z_dim=4)
    assert (c.use_mi, c.use_static_causal, c.use_dynamic_causal) == (True, True, False)
    assert edg.LSSAE().use_static_causal is False and "use_mi" not in edg.LSSAE().get_params()
    with pytest.raises(ValueError, match="variant"):
        edg.ablation("E")


def test_prior_unrolling_and_non_transductive_order_independence(circle):
    src, val, tgt = circle
    m = edg.SYNC(z_dim=4, transductive=False, **FAST).fit(src, val_domains=val)
    with torch.no_grad():
        long, short = m.net_.dynamic_prior(7)[0], m.net_.dynamic_prior(4)[0]
        assert torch.allclose(long[:4], short)  # step t of the prior does not see later steps
        assert torch.allclose(m.net_.drift_prior(7)[:4], m.net_.drift_prior(4))
    A, B, C = tgt[0][0], tgt[1][0], tgt[0][0][::-1].copy()
    assert np.array_equal(m.predict_sequence([A, B])[1], m.predict_sequence([C, B])[1])
    p6, p9 = m.predict_proba(A, 6), m.predict_proba(A, 9)
    assert p6.shape == p9.shape == (20, 2)


def test_transductive_state_source_reads_every_domain_from_the_source_states(circle):
    """``transductive_state="source"`` (official code): every domain starts from the states after
    the source sequence; ``"advance"`` carries the LSTM states on to the next domain."""
    src, val, tgt = circle
    A = torch.as_tensor(tgt[0][0])
    for state, moves in (("source", False), ("advance", True)):
        m = edg.SYNC(z_dim=4, transductive_state=state, **FAST).fit(src, val_domains=val)
        before = [t.clone() for t in m._bank]
        with torch.no_grad():
            m._predict_logits(A, m.next_index_, transductive=True)
        same = all(torch.equal(x, y) for x, y in zip(m._bank, before, strict=True))
        assert same is not moves, state
        assert m.predict_sequence([tgt[0][0], tgt[1][0]])[1].shape == (20,)
    with pytest.raises(ValueError, match="transductive_state"):
        edg.SYNC(transductive_state="x").fit(src)


def test_bad_inputs_raise_and_leave_state(circle):
    src, val, tgt = circle
    with pytest.raises(ValueError, match="at least 3"):
        edg.SYNC().fit(src[:2])
    with pytest.raises(ValueError, match="sample shape"):
        edg.ERM(**FAST).fit([src[0], src[1], (np.zeros((5, 3)), np.zeros(5, int))])
    bad = [(X.copy(), y) for X, y in src]
    bad[1][0][0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        edg.ERM(**FAST).fit(bad)
    for kw, msg in (({"z_dim": 0}, "z_dim"), ({"mask_ratio": 0.0}, "mask_ratio"),
                    ({"lr": -1.0}, "lr"), ({"sigma_param": "x"}, "sigma_param"),
                    ({"causal_grad": "x"}, "causal_grad"), ({"epochs": 0}, "epochs"),
                    ({"lambda_mi": -1.0}, "lambda_mi"), ({"contrast_tau": 0.0}, "contrast_tau")):  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            edg.SYNC(**kw).fit(src)
    with pytest.raises(ValueError, match="penalty_weight"):
        edg.IRM(penalty_weight=-1.0).fit(src)
    with pytest.raises(ValueError, match="fraction"):
        edg.ERMLast(fraction=0.0).fit(src)
    with pytest.raises(RuntimeError, match="not fitted"):
        edg.SYNC().predict(src[0][0])
    m = edg.ERM(**FAST).fit(src, val_domains=val)
    before = m.score_sequence(tgt)
    with pytest.raises(ValueError, match="labels"):
        m.score_sequence([(tgt[0][0], np.full(20, 5))])
    with pytest.raises(ValueError, match="sample shape"):
        m.predict(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="domain_index"):
        m.predict(tgt[0][0], domain_index=-1)
    with pytest.raises(TypeError, match="X_list"):
        m.predict_sequence(tgt[0][0])
    assert np.array_equal(m.score_sequence(tgt), before)


def test_batch_larger_than_domain_warns(circle):
    src, _, _ = circle
    with pytest.warns(UserWarning, match="replacement"):
        edg.ERM(epochs=1, iters_per_epoch=1, batch_per_domain=50, width=8).fit(src)


def test_irm_penalty_closed_form():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    y = torch.tensor([0, 1])
    w = torch.tensor(1.0, requires_grad=True)
    ce = torch.nn.functional.cross_entropy(logits * w, y)
    (g,) = torch.autograd.grad(ce, [w])
    assert float(edg.irm_penalty(logits, y).detach()) == pytest.approx(float(g) ** 2, rel=1e-6)


def test_report_and_demo():
    r = edg.evolving_report([0.5, 0.75, 1.0])
    assert r["avg"] == pytest.approx(0.75) and r["worst"] == 0.5
    with pytest.raises(ValueError, match="accs"):
        edg.evolving_report([1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = edg.demo(0)
    assert "SYNC" in out and "ERM" in out


def test_plots(tmp_path):
    pytest.importorskip("matplotlib")
    from evolving_dg.plotting import plot_domain_accuracy, plot_history

    plot_domain_accuracy({"a": [0.5, 0.6]}, str(tmp_path / "a.png"))
    plot_history([{"epoch": 0, "loss": 1.0, "mi": 0.1}], path=str(tmp_path / "h.png"))
    assert (tmp_path / "a.png").exists() and (tmp_path / "h.png").exists()


@pytest.mark.parametrize(
    "make",
    [
        lambda: edg.ERMLast(**FAST),
        lambda: edg.LSSAE(z_dim=4, **FAST),
        lambda: edg.SYNC(z_dim=4, **FAST),
    ],
)
def test_eval_domains_record_a_curve_without_changing_training(make, circle):
    src, val, tgt = circle
    plain = make().fit(src, val_domains=val)
    watched = make().fit(src, val_domains=val, eval_domains=tgt)
    for a, b in zip(
        plain.net_.state_dict().values(), watched.net_.state_dict().values(), strict=False
    ):
        assert torch.equal(a, b)
    np.testing.assert_array_equal(plain.score_sequence(tgt), watched.score_sequence(tgt))
    assert all(len(h["eval_accs"]) == 2 for h in watched.history_)
    assert "eval_acc" not in plain.history_[0]
    # the last epoch's curve point is the score of that epoch's weights
    last = make().set_params(epochs=1).fit(src, val_domains=val, eval_domains=tgt)
    assert last.history_[0]["eval_accs"] == pytest.approx(list(last.score_sequence(tgt)))
    with pytest.raises(ValueError, match="eval_domains"):
        make().fit(src, val_domains=val, eval_domains=[(tgt[0][0][:, :1], tgt[0][1])])


def test_reference_arch_has_the_official_sizes_and_initialisation(circle):
    from evolving_dg.sync import SYNCNet

    torch.manual_seed(0)
    net = SYNCNet((2,), 2, "mlp", 512, 20, True, (True, True), arch="reference")
    shapes = [tuple(m.weight.shape) for m in net.phi_st.modules() if isinstance(m, torch.nn.Linear)]
    assert shapes == [
        (512, 2),
        (512, 512),
        (512, 512),
        (128, 512),
    ]  # Toy_Linear_FE, feature-dim 128
    assert [tuple(m.weight.shape) for m in net.static.modules() if isinstance(m, torch.nn.Linear)] == [
        (128, 128), (40, 128), (40, 40)]  # fmt: skip
    assert net.lstm_dy.input_size == 128 and net.drift_lstm.hidden_size == 2
    assert net.drift_prior_cell.hidden_size == 4
    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert bns and all(torch.all(m.bias == 1) and torch.all(m.weight == 1) for m in bns)
    # Kaiming normal (fan_in, gain sqrt 2): std sqrt(2 / 512) for the 512-wide layers
    w = net.phi_st.net[2].weight
    assert abs(w.std().item() - (2 / 512) ** 0.5) < 0.003
    src, val, tgt = circle
    m = edg.SYNC(arch="reference", width=32, epochs=1, iters_per_epoch=2, batch_per_domain=8).fit(
        src, val
    )
    assert m.predict(tgt[0][0]).shape == (len(tgt[0][0]),)
    with pytest.raises(ValueError, match="arch"):
        edg.SYNC(arch="official").fit(src, val)
