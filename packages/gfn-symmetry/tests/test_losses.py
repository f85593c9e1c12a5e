import pytest
import torch

from gfn_symmetry import detailed_balance_loss, subtrajectory_balance_loss, trajectory_balance_loss


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    B, T = 4, 5
    lengths = torch.tensor([5, 3, 1, 4])
    pf = -torch.rand(B, T, generator=g)
    pb = -torch.rand(B, T, generator=g)
    flow = torch.randn(B, T, generator=g)
    r = torch.randn(B, generator=g)
    return flow, pf, pb, r, lengths


def _ext(flow, r, n):
    return [*flow[:n].tolist(), float(r)]


def test_tb_matches_manual():
    _flow, pf, pb, r, lengths = _batch()
    log_z = torch.tensor(0.3)
    expected = torch.stack(
        [
            (log_z + pf[b, :n].sum() - r[b] - pb[b, :n].sum()) ** 2
            for b, n in enumerate(lengths.tolist())
        ]
    ).mean()
    assert trajectory_balance_loss(log_z, pf, pb, r, lengths) == pytest.approx(
        float(expected), rel=1e-6
    )


def test_db_matches_manual():
    flow, pf, pb, r, lengths = _batch(1)
    terms = []
    for b, n in enumerate(lengths.tolist()):
        f = _ext(flow[b], r[b], n)
        terms += [(f[t] + pf[b, t] - f[t + 1] - pb[b, t]) ** 2 for t in range(n)]
    assert detailed_balance_loss(flow, pf, pb, r, lengths) == pytest.approx(
        float(torch.stack(terms).mean()), rel=1e-6
    )


@pytest.mark.parametrize("lamda", [0.5, 1.0, 2.0])
def test_subtb_matches_manual(lamda):
    flow, pf, pb, r, lengths = _batch(2)
    per = []
    for b, n in enumerate(lengths.tolist()):
        f = _ext(flow[b], r[b], n)
        num = den = 0.0
        for i in range(n + 1):
            for j in range(i + 1, n + 1):
                res = f[i] + float(pf[b, i:j].sum() - pb[b, i:j].sum()) - f[j]
                num += lamda ** (j - i) * res**2
                den += lamda ** (j - i)
        per.append(num / den)
    got = subtrajectory_balance_loss(flow, pf, pb, r, lengths, lamda)
    assert float(got) == pytest.approx(sum(per) / len(per), rel=1e-5)


def test_losses_vanish_on_balanced_flows():
    # build flows that satisfy DB exactly: F_{t+1} = F_t + pf_t - pb_t, terminal = reward
    flow, pf, pb, _, lengths = _batch(3)
    cum = torch.cat([torch.zeros(4, 1), (pf - pb).cumsum(1)], 1)
    flow = 0.7 + cum[:, :-1]
    r = 0.7 + cum.gather(1, lengths.unsqueeze(1))[:, 0]
    assert float(detailed_balance_loss(flow, pf, pb, r, lengths)) < 1e-10
    assert float(subtrajectory_balance_loss(flow, pf, pb, r, lengths)) < 1e-10
    assert float(trajectory_balance_loss(torch.tensor(0.7), pf, pb, r, lengths)) < 1e-10


def test_padding_is_ignored():
    flow, pf, pb, r, lengths = _batch(4)
    pf2, pb2, flow2 = pf.clone(), pb.clone(), flow.clone()
    pf2[1, 3:] = 1e6
    pb2[2, 1:] = -1e6
    flow2[1, 3:] = 1e6
    for fn in (detailed_balance_loss, subtrajectory_balance_loss):
        assert float(fn(flow, pf, pb, r, lengths)) == pytest.approx(
            float(fn(flow2, pf2, pb2, r, lengths))
        )


def test_bad_inputs():
    flow, pf, pb, r, lengths = _batch()
    with pytest.raises(ValueError, match="log_pb"):
        trajectory_balance_loss(torch.tensor(0.0), pf, pb[:, :2], r, lengths)
    with pytest.raises(ValueError, match="lengths"):
        detailed_balance_loss(flow, pf, pb, r, lengths + 3)
    with pytest.raises(ValueError, match="log_reward"):
        detailed_balance_loss(flow, pf, pb, r.clone().fill_(float("nan")), lengths)
    with pytest.raises(ValueError, match="log_reward"):
        detailed_balance_loss(flow, pf, pb, r[:2], lengths)
    with pytest.raises(ValueError, match="log_z"):
        trajectory_balance_loss(torch.zeros(2), pf, pb, r, lengths)
    with pytest.raises(ValueError, match="lamda"):
        subtrajectory_balance_loss(flow, pf, pb, r, lengths, lamda=0.0)
    with pytest.raises(ValueError, match="log_flow"):
        subtrajectory_balance_loss(flow[:, :2], pf, pb, r, lengths)
    with pytest.raises(ValueError, match="log_pf"):
        trajectory_balance_loss(torch.tensor(0.0), pf[0], pb[0], r, lengths)
