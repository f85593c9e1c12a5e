import pytest
import torch
import torch.nn.functional as F

import sparse_attn as sa

CFG = sa.TinyLlamaConfig(vocab_size=80, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2)


def model():
    torch.manual_seed(0)
    return sa.TinyLlama(CFG).double()


@pytest.mark.parametrize(
    ("kind", "opts"),
    [
        ("dense", {}),
        ("cca", {"group_size": 4, "local_window": 6}),
        ("sliding", {"window": 8}),
        ("sink", {"num_sink": 2, "window": 8}),
    ],
)
def test_swap_and_cached_generation_match_full_forward(kind, opts):
    net = model()
    assert sa.swap_attention(net, kind, **opts) == 2
    ids = torch.randint(0, 80, (2, 45), generator=torch.Generator().manual_seed(1))
    full, _ = net(ids)
    logits, cache = net(ids[:, :20], use_cache=True)
    steps = [logits]
    for t in range(20, 45):
        out, cache = net(ids[:, t : t + 1], cache=cache)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-9, rtol=0)


def test_swap_changes_kernel_not_weights_and_wide_window_is_exact():
    net = model()
    ids = torch.randint(0, 80, (1, 30))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    dense, _ = net(ids)
    sa.swap_attention(net, "cca", group_size=4, local_window=64)
    cca_wide, _ = net(ids)
    torch.testing.assert_close(cca_wide, dense, atol=1e-10, rtol=0)
    sa.swap_attention(net, "cca", group_size=4, local_window=4, layers=[1])
    assert [b.attn.kind for b in net.layers] == ["cca", "cca"]
    assert net.layers[1].attn.options["local_window"] == 4
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])
    with pytest.raises(ValueError, match="kind"):
        sa.swap_attention(net, "flash")
    with pytest.raises(ValueError, match="unknown options"):
        sa.swap_attention(net, "cca", window=3)
    with pytest.raises(ValueError, match="group_size"):
        sa.swap_attention(net, "cca", group_size=0)
    with pytest.raises(ValueError, match="layers"):
        sa.swap_attention(net, "cca", layers=[5])
    with pytest.raises(TypeError, match="model"):
        sa.swap_attention("net", "cca")


def test_brief_finetune_after_swap_reduces_loss():
    torch.manual_seed(0)
    net = sa.TinyLlama(CFG)
    sa.swap_attention(net, "cca", group_size=4, local_window=8)
    gen = torch.Generator().manual_seed(0)
    ids, target, _ = sa.passkey_batch(8, 48, num_keys=8, vocab_size=80, generator=gen)
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
    losses = []
    for _ in range(20):
        logits, _ = net(ids)
        loss = F.cross_entropy(logits[:, -1], target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


def test_passkey_batch():
    gen = torch.Generator().manual_seed(0)
    ids, target, depth = sa.passkey_batch(16, 100, generator=gen)
    rows = torch.arange(16)
    assert ids.shape == (16, 100) and (ids[rows, depth] == 64).all()
    assert (ids[rows, depth + 1] == target).all() and (ids[:, -1] == 64).all()
    ids2, *_ = sa.passkey_batch(16, 100, generator=torch.Generator().manual_seed(0))
    assert torch.equal(ids, ids2)
    with pytest.raises(ValueError, match="length"):
        sa.passkey_batch(2, 3)
    with pytest.raises(ValueError, match="depth"):
        sa.passkey_batch(2, 10, depth=torch.tensor([0, 9]))
    with pytest.raises(ValueError, match="input_ids"):
        model()(torch.zeros(3, dtype=torch.long))


def test_associative_recall_batch():
    gen = torch.Generator().manual_seed(0)
    ids, tgt, dist = sa.associative_recall_batch(
        8, 64, num_pairs=5, num_queries=3, num_keys=16, num_values=16, vocab_size=64, generator=gen
    )
    assert ids.shape == tgt.shape == (8, 64) and dist.shape == (8, 3)
    assert ((tgt != -100).sum(1) == 3).all()
    for b in range(8):
        for qp in (tgt[b] != -100).nonzero().flatten().tolist():
            key, value = ids[b, qp].item(), tgt[b, qp].item()
            assert ids[b, qp + 1] == value and key < 16 <= value < 32
            earlier = (ids[b, :qp] == key).nonzero().flatten()
            assert len(earlier) == 1 and ids[b, earlier[0] + 1] == value
            assert qp - earlier[0] in dist[b].tolist()
    with pytest.raises(ValueError, match="num_queries"):
        sa.associative_recall_batch(2, 64, num_pairs=2, num_queries=3)
    with pytest.raises(ValueError, match="length"):
        sa.associative_recall_batch(2, 10, num_pairs=8, num_queries=2)
    with pytest.raises(ValueError, match="vocab_size"):
        sa.associative_recall_batch(2, 64, vocab_size=40)


def test_plot_scaling(tmp_path):
    pytest.importorskip("matplotlib")
    from sparse_attn.plotting import plot_scaling

    rows = [{"method": m, "L": n, "fwd": n * 1e-6, "fwdbwd": n * 3e-6}
            for m in ("dense", "cca") for n in (512, 1024)]  # fmt: skip
    plot_scaling(rows, str(tmp_path / "s.png"))
    assert (tmp_path / "s.png").stat().st_size > 0
    with pytest.raises(ValueError, match="rows"):
        plot_scaling([], str(tmp_path / "e.png"))
