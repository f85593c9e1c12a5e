"""Controls (weighted task arithmetic, capacity control, per-tensor TIES, clipped AdaMerging),
the unlabeled objective's diversity term, safetensors I/O and transformers models."""

import numpy as np
import pytest
import torch

from pareto_merge import (
    ParetoMerger,
    adamerging,
    entropy_objective,
    load_state_dict,
    load_state_dicts,
    save_state_dict,
    task_arithmetic,
    task_vectors,
    ties_merge,
    weighted_task_arithmetic,
)


def test_weighted_task_arithmetic_uniform_and_vertices(models):
    _, theta0, ft = models
    uni = weighted_task_arithmetic(theta0, ft, [1 / 3] * 3, scale=0.4)
    ta = task_arithmetic(theta0, ft, scale=0.4)
    for k in ta:
        torch.testing.assert_close(uni[k], ta[k])
    vert = weighted_task_arithmetic(theta0, ft, [0, 1, 0], scale=0.4)
    tv = task_vectors(theta0, ft)[1]
    for k in tv:
        torch.testing.assert_close(vert[k], theta0[k] + 1.2 * tv[k])
    with pytest.raises(ValueError, match="preference"):
        weighted_task_arithmetic(theta0, ft, [0.5, 0.6, 0.0])


def _ties_loop(vectors, density):
    """mergekit's TIES entry by entry (brute force) on K flat vectors: the int(density P)
    largest magnitudes, a zero sign sum counted as positive."""
    K, P = vectors.shape
    n_keep = max(1, int(density * P))
    trimmed = np.zeros_like(vectors)
    for k in range(K):
        idx = np.argsort(-np.abs(vectors[k]), kind="stable")[:n_keep]
        trimmed[k, idx] = vectors[k, idx]
    out = np.zeros(P)
    for j in range(P):
        s = 1.0 if trimmed[:, j].sum() >= 0 else -1.0
        vals = [t for t in trimmed[:, j] if t != 0 and np.sign(t) == s]
        out[j] = np.mean(vals) if vals else 0.0
    return out


def test_ties_per_tensor_matches_a_loop_per_tensor(models):
    _, theta0, ft = models
    merged = ties_merge(theta0, ft, density=0.3, scale=1.0, scope="tensor")
    tvs = task_vectors(theta0, ft)
    for k in tvs[0]:
        vecs = np.stack([tv[k].flatten().double().numpy() for tv in tvs])
        ref = _ties_loop(vecs, 0.3).reshape(tvs[0][k].shape)
        np.testing.assert_allclose((merged[k] - theta0[k]).double().numpy(), ref, atol=1e-6)
    # on a one-tensor model the two scopes differ only by the TIES repository's one extra
    # kept entry (its mask keeps |v| >= the (P - k)-th smallest magnitude: k + 1 entries)
    one = {"w": theta0["fc1.weight"]}
    ones = [{"w": sd["fc1.weight"]} for sd in ft]
    a = ties_merge(one, ones, 0.3, scope="tensor")["w"]
    b = ties_merge(one, ones, 0.3, scope="model")["w"]
    assert 0 < int((a != b).sum()) <= len(ft)
    with pytest.raises(ValueError, match="scope"):
        ties_merge(theta0, ft, scope="layer")


def test_capacity_control_ignores_the_preference(models):
    model, theta0, ft = models
    x = torch.randn(32, 4)
    objs = [entropy_objective(model, x, diversity=1.0) for _ in ft]
    ctrl = ParetoMerger(theta0, ft, rank=2, n_steps=20, conditioned=False).fit(objs)
    pm = ParetoMerger(theta0, ft, rank=2, n_steps=20).fit(objs)
    assert ctrl.n_extra_parameters() == pm.n_extra_parameters()
    a, b = ctrl.merge([1, 0, 0]), ctrl.merge([0, 0, 1])
    assert all(torch.equal(a[k], b[k]) for k in a)
    c, d = pm.merge([1, 0, 0]), pm.merge([0, 0, 1])
    assert any(not torch.equal(c[k], d[k]) for k in c)
    with pytest.raises(TypeError, match="conditioned"):
        ParetoMerger(theta0, ft, conditioned="yes")


def test_adamerging_coefficients_are_clipped(models):
    model, theta0, ft = models
    x = torch.randn(16, 4)
    objs = [entropy_objective(model, x) for _ in ft]
    _, coef = adamerging(theta0, ft, objs, n_steps=60, lr=0.5, init_scale=0.9)
    assert coef.min() >= 0.0 and coef.max() <= 1.0
    # weighted objectives: a vertex preference puts all weight on one task
    _, c1 = adamerging(theta0, ft, objs, n_steps=5, preference=[1, 0, 0])
    assert c1.shape == coef.shape


def test_entropy_diversity_term():
    lin = torch.nn.Linear(3, 4, bias=False)
    with torch.no_grad():
        lin.weight.zero_()
        lin.weight[0] = 50.0  # every input -> class 0 with certainty (a collapsed model)
    x = torch.rand(10, 3) + 0.1
    params = dict(lin.named_parameters())
    plain = entropy_objective(lin, x)(params).detach()
    im = entropy_objective(lin, x, diversity=1.0)(params).detach()
    assert float(plain) < 1e-6 and float(im) == pytest.approx(float(plain), abs=1e-6)
    with torch.no_grad():  # balanced confident predictions: marginal entropy log 2
        lin.weight.zero_()
        lin.weight[0, 0] = 50.0
        lin.weight[1, 1] = 50.0
    x2 = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    im2 = entropy_objective(lin, x2, diversity=1.0)(dict(lin.named_parameters())).detach()
    assert float(im2) == pytest.approx(-np.log(2), abs=1e-5)
    with pytest.raises(ValueError, match="diversity"):
        entropy_objective(lin, x, diversity=-1.0)


def test_safetensors_round_trip(tmp_path, models):
    _, theta0, ft = models
    paths = []
    for i, sd in enumerate(ft):
        paths.append(tmp_path / f"ft{i}.safetensors")
        save_state_dict(sd, paths[-1], metadata={"task": str(i)})
    loaded = load_state_dicts(paths)
    for a, b in zip(loaded, ft, strict=True):
        assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    merged = task_arithmetic(theta0, loaded, 0.3)
    save_state_dict(merged, tmp_path / "merged.safetensors")
    back = load_state_dict(tmp_path / "merged.safetensors")
    assert all(torch.equal(back[k], merged[k]) for k in merged)
    with pytest.raises(ValueError, match="path"):
        load_state_dict(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="paths"):
        load_state_dicts([])
    with pytest.raises(TypeError, match="state_dict"):
        save_state_dict({"a": 1.0}, tmp_path / "x.safetensors")


def test_merging_two_transformers_models(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.ViTConfig(
        image_size=8,
        patch_size=4,
        num_channels=1,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=3,
    )
    torch.manual_seed(0)
    base = transformers.ViTForImageClassification(cfg).eval()
    base.save_pretrained(tmp_path / "base")
    dirs = []
    for i in range(2):  # "fine-tune" each copy a few steps on its own random task
        m = transformers.ViTForImageClassification.from_pretrained(tmp_path / "base")
        opt = torch.optim.SGD(m.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(16, 1, 8, 8, generator=g), torch.randint(0, 3, (16,), generator=g)
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(m(pixel_values=x).logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        m.save_pretrained(tmp_path / f"ft{i}")
        dirs.append(tmp_path / f"ft{i}")
    # file level, as a mergekit user does: safetensors in, safetensors out, from_pretrained
    ta = task_arithmetic(load_state_dict(tmp_path / "base"), load_state_dicts(dirs), 0.5)
    out = tmp_path / "merged"
    out.mkdir()
    (out / "config.json").write_text((tmp_path / "base" / "config.json").read_text())
    save_state_dict(ta, out / "model.safetensors")
    merged_model = transformers.ViTForImageClassification.from_pretrained(out).eval()
    xs = torch.randn(8, 1, 8, 8)
    assert torch.isfinite(merged_model(pixel_values=xs).logits).all()

    # module level: Pareto Merging trains through functional_call on the module's own keys
    class Logits(torch.nn.Module):  # functional_call needs a module returning a tensor
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(pixel_values=x).logits

    loaded = [transformers.ViTForImageClassification.from_pretrained(d) for d in dirs]
    wrapped = Logits(base)
    theta0 = dict(wrapped.state_dict())
    ft = [dict(Logits(m).state_dict()) for m in loaded]
    objs = [entropy_objective(wrapped, xs, diversity=1.0) for _ in ft]
    merger = ParetoMerger(theta0, ft, rank=2, n_steps=3).fit(objs)
    sd = merger.merge([0.3, 0.7])
    wrapped.load_state_dict(sd, strict=True)
    assert torch.isfinite(wrapped(xs)).all()
