import numpy as np
import pytest
import torch

from lomap_planner.diffusion import GaussianDiffusion, apply_conditioning, cosine_beta_schedule
from lomap_planner.lomap import LoMAP
from lomap_planner.metrics import normalized_score, rollout_planner
from lomap_planner.planner import DiffuserPlanner
from lomap_planner.training import goal_conditions, train_diffusion
from lomap_planner.unet import TemporalUnet


def _diffusion(h=8, steps=10, eps=False):
    torch.manual_seed(0)
    net = TemporalUnet(h, 6, dim=8, dim_mults=(1, 2))
    return GaussianDiffusion(net, h, 6, 2, n_timesteps=steps, predict_epsilon=eps)


@pytest.fixture(scope="module")
def trained(tiny_windows):
    _, norm, wn = tiny_windows
    diff = _diffusion()
    losses = train_diffusion(diff, wn, n_steps=100, batch_size=16, lr=2e-3, ema_decay=0.9)
    return diff, norm, wn, losses


def test_cosine_schedule_and_q_sample():
    b = cosine_beta_schedule(50)
    assert b.shape == (50,) and (b > 0).all() and (b <= 0.999).all()
    diff = _diffusion()
    x0, noise = torch.randn(3, 8, 6), torch.randn(3, 8, 6)
    t = torch.tensor([0, 4, 9])
    ab = diff.alphas_cumprod[t][:, None, None]
    expected = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
    np.testing.assert_allclose(diff.q_sample(x0, t, noise).numpy(), expected.numpy(), atol=1e-6)
    # Posterior at the last step returns x0 exactly (coef1 = 1, coef2 = 0).
    assert abs(float(diff.posterior_coef1[0]) - 1) < 1e-6 and float(diff.posterior_coef2[0]) == 0


def test_apply_conditioning_does_not_mutate_and_repeats():
    x = torch.zeros(6, 8, 6)
    cond = {0: torch.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]]), 7: torch.tensor([[9.0, 9], [8, 8]])}
    y = apply_conditioning(x, cond, action_dim=2)
    assert x.abs().sum() == 0
    np.testing.assert_array_equal(y[:3, 0, 2:].numpy(), [[1, 2, 3, 4]] * 3)
    np.testing.assert_array_equal(y[3:, 7, 2:4].numpy(), [[8, 8]] * 3)
    assert (y[:, :, :2] == 0).all() and (y[:, 7, 4:] == 0).all()


def test_sample_respects_inpainting_and_seed():
    diff = _diffusion(eps=True).eval()
    cond = {0: torch.full((2, 4), 0.3), 7: torch.full((2, 2), -0.4)}
    a = diff.sample(cond, generator=torch.Generator().manual_seed(1))
    b = diff.sample(cond, generator=torch.Generator().manual_seed(1))
    assert a.shape == (2, 8, 6)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert torch.allclose(a[:, 0, 2:], torch.tensor(0.3)) and torch.allclose(
        a[:, 7, 2:4], torch.tensor(-0.4)
    )
    with pytest.raises(ValueError, match="conditions"):
        diff.sample({9: torch.zeros(1, 4)})
    with pytest.raises(ValueError, match="guide_scale"):
        diff.sample(cond, guide_scale=-1.0)


def test_value_guidance_moves_samples_uphill():
    diff = _diffusion(eps=True).eval()
    cond = {0: torch.zeros(8, 4)}

    def guide(x):  # reward: large final x-position
        return x[:, -1, 2]

    g = torch.Generator()
    base = diff.sample(cond, generator=g.manual_seed(0))
    pushed = diff.sample(cond, guide=guide, guide_scale=50.0, generator=g.manual_seed(0))
    assert pushed[:, -1, 2].mean() > base[:, -1, 2].mean()


def test_training_reduces_loss(trained):
    *_, losses = trained
    assert np.mean(losses[-25:]) < np.mean(losses[:25])


def test_loss_bad_input():
    diff = _diffusion()
    with pytest.raises(ValueError, match="x0"):
        diff.loss(torch.zeros(2, 5, 6), {})
    with pytest.raises(ValueError, match="windows"):
        train_diffusion(diff, np.full((4, 8, 6), np.nan), n_steps=1)


def test_planner_with_and_without_lomap(trained, tiny_env):
    diff, norm, wn, _ = trained
    obs = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 3.0, 0.0, 0.0]])
    goal = np.array([2.0, 4.0])
    lm = LoMAP(wn, n_neighbors=8, proj_range=(0.0, 1.0))
    for lomap in (None, lm):
        planner = DiffuserPlanner(diff, norm, lomap=lomap)
        plans = planner.plan(obs, goal, seed=0)
        assert plans.shape == (2, 8, 6)
        np.testing.assert_allclose(plans[:, 0, 2:], obs, atol=1e-4)
        np.testing.assert_allclose(plans[:, -1, 2:4], [goal, goal], atol=1e-4)
        assert planner.last_plan_time > 0
    assert lm.last_ranks is not None and (lm.last_ranks >= 1).all()
    with pytest.raises(ValueError, match="obs"):
        planner.plan(np.array([np.nan, 1.0, 0, 0]), goal)
    with pytest.raises(ValueError, match="goal"):
        planner.plan(obs, np.zeros(3))


def test_rollout_and_scores(trained, tiny_env):
    diff, norm, *_ = trained
    res = rollout_planner(tiny_env, DiffuserPlanner(diff, norm), n_episodes=2, seed=0)
    assert res["returns"].shape == (2,) and res["plans"].shape == (2, 8, 6)
    assert len(res["plan_time"]) == 1 and res["infeasible"].dtype == bool
    res = rollout_planner(tiny_env, DiffuserPlanner(diff, norm), n_episodes=2, replan_every=10)
    assert len(res["plan_time"]) == 2
    assert normalized_score("umaze", 161.86) == pytest.approx(100.0)
    assert normalized_score("large", 6.7) == pytest.approx(0.0)
    np.testing.assert_allclose(normalized_score("medium", np.array([13.13, 277.39])), [0, 100])
    with pytest.raises(ValueError, match="layout"):
        normalized_score("tiny", 1.0)


def test_goal_conditions_layout():
    x = torch.arange(2 * 8 * 6, dtype=torch.float32).reshape(2, 8, 6)
    c = goal_conditions(x, action_dim=2)
    assert set(c) == {0, 7}
    np.testing.assert_array_equal(c[7].numpy(), x[:, 7, 2:4].numpy())


def test_train_checkpoints_give_the_ema_at_each_step(tiny_windows):
    """A checkpoint at step s holds what a run of s steps ends with (same seed, same draws)."""
    _, _, wn = tiny_windows
    seen = {}

    def keep(step, ema):
        seen[step] = {k: v.clone() for k, v in ema.state_dict().items()}

    full = _diffusion()
    train_diffusion(full, wn, n_steps=12, batch_size=8, checkpoints=[5, 12], on_checkpoint=keep)
    assert sorted(seen) == [5, 12]
    short = _diffusion()
    train_diffusion(short, wn, n_steps=5, batch_size=8)
    for k, v in short.model.state_dict().items():
        torch.testing.assert_close(seen[5][k], v)
    for k, v in full.model.state_dict().items():
        torch.testing.assert_close(seen[12][k], v)


@pytest.mark.parametrize(
    "kw, match",
    [({"checkpoints": [0]}, "checkpoints"), ({"checkpoints": [9]}, "checkpoints"),
     ({"checkpoints": [2], "on_checkpoint": None}, "on_checkpoint")],
)  # fmt: skip
def test_train_checkpoints_validated(tiny_windows, kw, match):
    _, _, wn = tiny_windows
    diff = _diffusion()
    before = {k: v.clone() for k, v in diff.state_dict().items()}
    kw = {"on_checkpoint": lambda s, m: None, **kw}
    with pytest.raises(ValueError, match=match):
        train_diffusion(diff, wn, n_steps=8, **kw)
    for k, v in diff.state_dict().items():
        torch.testing.assert_close(before[k], v)


def test_trainer_resumes_as_one_run(tiny_windows, tmp_path):
    """Stop at step 5, save, resume in a fresh process-like object: the same run as 12 straight."""
    from lomap_planner.training import DiffusionTrainer

    _, _, wn = tiny_windows
    straight = DiffusionTrainer(_diffusion(), wn, batch_size=8, lr=2e-3, seed=3)
    want = straight.fit(12)
    first = DiffusionTrainer(_diffusion(), wn, batch_size=8, lr=2e-3, seed=3)
    got = first.fit(5)
    torch.save(first.state_dict(), tmp_path / "state.pt")
    torch.manual_seed(123)  # whatever happened to the global RNG in between
    torch.manual_seed(99)
    other = _diffusion()  # a different initialisation, overwritten by the state
    for p in other.parameters():
        p.data.normal_()
    second = DiffusionTrainer(other, wn, batch_size=8, lr=2e-3, seed=0)
    second.load_state_dict(torch.load(tmp_path / "state.pt", weights_only=False))
    got += second.fit(12)
    assert second.step == 12 and got == want
    for a, b in zip(
        straight.ema.state_dict().values(), second.ema.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(a, b)
    # train_diffusion is the same run, ending with the EMA weights in the model
    plain = _diffusion()
    assert train_diffusion(plain, wn, n_steps=12, batch_size=8, lr=2e-3, seed=3) == want
    for a, b in zip(
        plain.model.state_dict().values(),
        straight.finish().model.state_dict().values(),
        strict=True,
    ):
        torch.testing.assert_close(a, b)


def test_trainer_rejects_bad_resume(tiny_windows):
    from lomap_planner.training import DiffusionTrainer

    _, _, wn = tiny_windows
    t = DiffusionTrainer(_diffusion(), wn, batch_size=8)
    t.fit(3)
    with pytest.raises(ValueError, match="until"):
        t.fit(2)
    with pytest.raises(ValueError, match="missing"):
        t.load_state_dict({"step": 1})
    assert t.step == 3
    # a new lr on resume was silently replaced by the saved one (Adam's state_dict holds it)
    slower = DiffusionTrainer(_diffusion(), wn, batch_size=8, lr=1e-5)
    with pytest.warns(UserWarning, match="resuming with lr=1e-05"):
        slower.load_state_dict(t.state_dict())
    assert [g["lr"] for g in slower.opt.param_groups] == [1e-5]
    with pytest.raises(ValueError, match="batch_size"):
        DiffusionTrainer(_diffusion(), wn, batch_size=0)
