import pytest
import torch

import kd_losses as K

NAMES = list(K.LOSS_NAMES)


def _setup(dtype=torch.float64, n=(2, 5), d=6, dt=4, v=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    hs = torch.randn(*n, d, generator=g, dtype=dtype, requires_grad=True)
    ws = torch.randn(v, d, generator=g, dtype=dtype, requires_grad=True)
    bs = torch.randn(v, generator=g, dtype=dtype, requires_grad=True)
    ht = torch.randn(*n, dt, generator=g, dtype=dtype)
    wt = torch.randn(v, dt, generator=g, dtype=dtype)
    return hs, ws, bs, ht, wt


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("chunk", [None, 3])
def test_fused_equals_the_logits_path_in_value_and_gradients(name, chunk):
    hs, ws, bs, ht, wt = _setup()
    labels = torch.tensor([[1, 2, -100, 4, 5], [6, -100, 8, 9, 1]])
    kw = dict(labels=labels, temperature=1.5)
    out = K.fused_kd_loss(
        hs,
        ws,
        student_bias=bs,
        teacher_hidden=ht,
        teacher_weight=wt,
        loss=name,
        chunk_size=chunk,
        **kw,
    )
    grads = torch.autograd.grad(out, (hs, ws, bs))
    ref = K.distill_loss(name, hs @ ws.T + bs, ht @ wt.T, **kw)
    ref_grads = torch.autograd.grad(ref, (hs, ws, bs))
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_teacher_logits_sum_reduction_and_module_form():
    hs, ws, _, ht, wt = _setup()
    tl = ht @ wt.T
    a = K.fused_kd_loss(hs, ws, teacher_logits=tl, loss="jsd", beta=0.3, reduction="sum")
    b = K.js_divergence(hs @ ws.T, tl, beta=0.3, reduction="sum")
    torch.testing.assert_close(a, b)
    m = K.FusedKDLoss("skl", alpha=0.2)
    torch.testing.assert_close(m(hs, ws, teacher_logits=tl), K.skew_kl(hs @ ws.T, tl, alpha=0.2))


def test_all_masked_gives_zero_and_zero_gradients():
    hs, ws, _, ht, wt = _setup()
    out = K.fused_kd_loss(
        hs, ws, teacher_hidden=ht, teacher_weight=wt, mask=torch.zeros(2, 5, dtype=torch.bool)
    )
    gh, gw = torch.autograd.grad(out, (hs, ws))
    assert out.item() == 0.0 and gh.abs().sum() == 0 and gw.abs().sum() == 0


def test_fused_bad_inputs():
    hs, ws, _, ht, wt = _setup()
    with pytest.raises(ValueError, match="teacher_logits"):
        K.fused_kd_loss(hs, ws)
    with pytest.raises(ValueError, match="loss"):
        K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt, loss="nope")
    with pytest.raises(ValueError, match="student_weight"):
        K.fused_kd_loss(hs, ws[:, :3], teacher_hidden=ht, teacher_weight=wt)
    with pytest.raises(ValueError, match="teacher_weight"):
        K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt[:5])
    with pytest.raises(ValueError, match="reduction"):
        K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt, reduction="none")
    with pytest.raises(TypeError, match="loss_kwargs"):
        K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt, loss="fkl", beta=0.3)
    bad = hs.detach().clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="student_hidden"):
        K.fused_kd_loss(bad, ws, teacher_hidden=ht, teacher_weight=wt)
    with pytest.raises(ValueError, match="chunk_size"):
        K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt, chunk_size=0)


def test_distil_a_transformers_llama_through_the_fused_head():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)

    def llama(width, layers):
        cfg = transformers.LlamaConfig(
            vocab_size=101,
            hidden_size=width,
            intermediate_size=2 * width,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
        return transformers.LlamaForCausalLM(cfg)

    teacher, student = llama(64, 2).eval(), llama(32, 1)
    ids = torch.randint(0, 101, (4, 24))
    opt = torch.optim.Adam(student.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        with torch.no_grad():
            t_hidden = teacher.model(ids).last_hidden_state
        s_hidden = student.model(ids).last_hidden_state
        loss = K.fused_kd_loss(
            s_hidden,
            student.lm_head.weight,
            teacher_hidden=t_hidden,
            teacher_weight=teacher.lm_head.weight,
            loss="bdl",
            chunk_size=16,
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert student.lm_head.weight.grad is not None


@pytest.mark.parametrize("what", ["nan", "posinf", "neginf"])
def test_fused_rejects_what_the_logits_path_rejects(what):
    hs, ws, _, ht, wt = _setup()
    tl = (ht @ wt.T).detach()
    tl[0, 1, 2] = {"nan": float("nan"), "posinf": float("inf"), "neginf": float("-inf")}[what]
    with pytest.raises(ValueError, match="teacher_logits"):
        K.fused_kd_loss(hs, ws, teacher_logits=tl)
    if what != "neginf":  # the logits path rejects NaN and +inf too
        with pytest.raises(ValueError, match="teacher_logits"):
            K.distill_loss("bdl", hs @ ws.T, tl)
    bad_w = ws.detach().clone()
    bad_w[3, 1] = float("nan")
    with pytest.raises(ValueError, match="student_weight"):
        K.fused_kd_loss(hs, bad_w, teacher_hidden=ht, teacher_weight=wt)
    with pytest.raises(ValueError, match="teacher_weight"):
        K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=bad_w[:, :4])


def test_fused_keeps_float64_exact():
    hs, ws, bs, ht, wt = _setup(n=(3, 7), v=13)
    labels = torch.tensor([[1, 2, -100, 4, 5, 6, 7], [6, -100, 8, 9, 1, 0, 3], [1] * 7])
    out = K.fused_kd_loss(hs, ws, student_bias=bs, teacher_hidden=ht, teacher_weight=wt,
                          labels=labels, loss="bdl")  # fmt: skip
    ref = K.distill_loss("bdl", hs @ ws.T + bs, ht @ wt.T, labels=labels)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, ref, atol=1e-13, rtol=0)


def test_one_backward_contract():
    """A second backward through the same graph raises and says how to get another."""
    hs, ws, _, ht, wt = _setup()
    out = K.fused_kd_loss(hs, ws, teacher_hidden=ht, teacher_weight=wt)
    out.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="one backward pass"):
        out.backward()


@pytest.mark.parametrize("loss", [None, *K.LOSS_NAMES])
def test_auto_block_sizes_respect_the_budget(loss):
    vocab = 128 * 1024
    rows, sub = K.fused.auto_block_sizes(vocab, 2, loss=loss)  # bf16, 128K vocabulary
    temps = K.fused._KERNEL_TEMPS[loss] if loss else max(K.fused._KERNEL_TEMPS.values())
    assert 2 * rows * vocab * 2 <= K.fused.MEMORY_BUDGET // 2  # student + teacher logits
    assert temps * sub * vocab * 4 <= K.fused.MEMORY_BUDGET // 4  # float32 kernel temporaries
    assert rows >= 64 and 1 <= sub <= rows
    with pytest.raises(ValueError, match="loss"):
        K.fused.auto_block_sizes(vocab, 2, loss="kl")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), None])
def test_all_finite_matches_isfinite(dtype, bad):
    from kd_losses._validation import all_finite

    x = torch.randn(50, 7).to(dtype)
    if bad is not None:
        x[41, 2] = bad
    assert all_finite(x) == bool(torch.isfinite(x).all())
    assert all_finite(x[:0])  # empty


@pytest.mark.parametrize("loss", ["bdl", "akl", "fkl"])
def test_gradient_overwriting_logits_is_exact_across_sub_blocks(loss, monkeypatch):
    """The logit gradient is written over the block's logits sub-block by sub-block; blocks
    of several 3-row kernel sub-blocks must match the logits path."""
    monkeypatch.setattr(K.fused, "auto_block_sizes", lambda *a, **k: (4, 3))
    g = torch.Generator().manual_seed(3)
    n, d, vocab = 13, 6, 40
    hs = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
    ws = torch.randn(vocab, d, generator=g, dtype=torch.float64, requires_grad=True)
    ht = torch.randn(n, 5, generator=g, dtype=torch.float64)
    wt = torch.randn(vocab, 5, generator=g, dtype=torch.float64)
    ref = K.distill_loss(loss, hs @ ws.T, ht @ wt.T)
    gh_ref, gw_ref = torch.autograd.grad(ref, (hs, ws))
    for chunk in (None, 1, 4, 13):
        out = K.fused_kd_loss(
            hs, ws, teacher_hidden=ht, teacher_weight=wt, loss=loss, chunk_size=chunk
        )
        gh, gw = torch.autograd.grad(out, (hs, ws))
        assert torch.allclose(out, ref, atol=1e-12, rtol=1e-10)
        assert torch.allclose(gh, gh_ref, atol=1e-12, rtol=1e-9)
        assert torch.allclose(gw, gw_ref, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("loss", K.LOSS_NAMES)
def test_float16_gradients_match_the_float32_logits_path_and_survive_loss_scaling(loss):
    # the fused head once summed the float16 weight gradient block by block in float16: 1% off,
    # and NaN under GradScaler's 2^16 scale; every accumulation is float32 now
    g = torch.Generator().manual_seed(5)
    n, d, vocab, dt = 96, 16, 700, 12
    hs = torch.randn(n, d, generator=g).half()
    ws = (torch.randn(vocab, d, generator=g) * 0.3).half()
    bs = (torch.randn(vocab, generator=g) * 0.1).half()
    ht = torch.randn(n, dt, generator=g).half()
    wt = (torch.randn(vocab, dt, generator=g) * 0.3).half()
    h32, w32, b32 = (t.float().requires_grad_() for t in (hs, ws, bs))
    ref = K.distill_loss(loss, h32 @ w32.T + b32, ht.float() @ wt.float().T)
    want = torch.autograd.grad(ref, (h32, w32, b32))
    for scale in (1.0, 2.0**16):
        leaves = [t.clone().requires_grad_() for t in (hs, ws, bs)]
        out = K.fused_kd_loss(leaves[0], leaves[1], student_bias=leaves[2], teacher_hidden=ht,
                              teacher_weight=wt, loss=loss, chunk_size=32)  # fmt: skip
        got = torch.autograd.grad(out * scale, leaves)
        assert (
            out.dtype == torch.float32
            and abs(float(out) - float(ref)) <= 1e-5 * abs(float(ref)) + 1e-6
        )
        for a, b in zip(got, want, strict=True):
            assert a.dtype == torch.float16 and torch.isfinite(a).all()
            rel = (a.float() / scale - b).abs().max() / b.abs().max()
            assert rel <= 1e-3, (loss, scale, float(rel))


def test_bfloat16_gradients_are_the_float32_ones_rounded():
    g = torch.Generator().manual_seed(6)
    hs = torch.randn(40, 8, generator=g).bfloat16()
    ws = (torch.randn(300, 8, generator=g) * 0.3).bfloat16()
    tl = torch.randn(40, 300, generator=g).bfloat16()
    h32, w32 = (t.float().requires_grad_() for t in (hs, ws))
    want = torch.autograd.grad(K.distill_loss("jsd", h32 @ w32.T, tl.float()), (h32, w32))
    leaves = [t.clone().requires_grad_() for t in (hs, ws)]
    got = torch.autograd.grad(K.fused_kd_loss(*leaves, teacher_logits=tl, loss="jsd"), leaves)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == torch.bfloat16
        # one bfloat16 rounding of the float32 gradient (8 mantissa bits: 2^-8 relative)
        assert ((a.float() - b).abs() <= b.abs() * 2**-8 + 1e-6 * b.abs().max()).all()


def test_grad_scaler_step_with_float16_hidden_states_and_float32_weights():
    # mixed precision as AMP runs it: autocast's float16 hidden states, float32 master weights
    # and GradScaler's 2^16 scale: finite gradients, the scale is kept, the step equals the
    # float32 logits path's
    torch.manual_seed(0)
    ws = torch.nn.Parameter(torch.randn(200, 8) * 0.3)
    hs = torch.randn(32, 8).half().requires_grad_()
    tl = torch.randn(32, 200)
    opt = torch.optim.SGD([ws], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    scaler.scale(K.fused_kd_loss(hs, ws, teacher_logits=tl, loss="fkl")).backward()
    assert ws.grad.dtype == torch.float32 and hs.grad.dtype == torch.float16
    w32 = ws.detach().clone().requires_grad_()
    (want,) = torch.autograd.grad(K.distill_loss("fkl", hs.detach().float() @ w32.T, tl), (w32,))
    torch.testing.assert_close(ws.grad / 2.0**16, want, rtol=1e-5, atol=1e-8)
    before = ws.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**16  # no inf/NaN found: the scale was kept
    torch.testing.assert_close(ws.detach(), before - 0.1 * want, rtol=1e-5, atol=1e-7)
    with pytest.raises(TypeError, match="student_weight"):  # float64 weights, half states
        K.fused_kd_loss(hs, ws.detach().double(), teacher_logits=tl)
