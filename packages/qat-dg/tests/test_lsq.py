import math

import pytest
import torch

from qat_dg.quant import LSQQuantizer, init_step_size, lsq_fake_quant, quant_range


def _composite(w, s, q_n, q_p, g):
    """LSQ written with the detach tricks of the reference code (autograd reference)."""
    s_g = s * g + (s - s * g).detach()
    v = (w / s_g.reshape(-1, *([1] * (w.ndim - 1)))).clamp(-q_n, q_p)
    r = v + (v.round() - v).detach()
    return r * s_g.reshape(-1, *([1] * (w.ndim - 1)))


@pytest.mark.parametrize("bits", [2, 4, 7, 8])
def test_forward_matches_torch_per_channel(bits):
    torch.manual_seed(0)
    w = torch.randn(6, 3, 3, 3)
    s = torch.rand(6) * 0.2 + 0.01
    q_n, q_p = quant_range(bits)
    ref = torch.fake_quantize_per_channel_affine(
        w, s, torch.zeros(6, dtype=torch.int32), 0, -q_n, q_p
    )
    out = lsq_fake_quant(w, s, bits)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
    # on the grid, and saturated at the ends
    codes = out / s.reshape(-1, 1, 1, 1)
    torch.testing.assert_close(codes, codes.round(), rtol=0, atol=1e-4)
    assert codes.min() >= -q_n - 1e-4 and codes.max() <= q_p + 1e-4


def test_forward_matches_torch_per_tensor_and_saturates():
    w = torch.tensor([[-10.0, -0.26, 0.0, 0.24, 0.76, 10.0]])
    s = torch.tensor(0.5)
    out = lsq_fake_quant(w, s, 3)  # grid [-4, 3] * 0.5
    ref = torch.fake_quantize_per_tensor_affine(w, 0.5, 0, -4, 3)
    torch.testing.assert_close(out, ref)
    assert out[0, 0] == -2.0 and out[0, -1] == 1.5


def test_gradients_closed_form_and_autograd():
    torch.manual_seed(1)
    w = (torch.randn(4, 5, dtype=torch.float64) * 0.3).requires_grad_()
    s = torch.tensor([0.05, 0.1, 0.02, 0.2], dtype=torch.float64, requires_grad=True)
    bits = 4
    q_n, q_p = quant_range(bits)
    g = 1.0 / math.sqrt(q_p * w.numel())
    upstream = torch.randn(4, 5, dtype=torch.float64)
    (lsq_fake_quant(w, s, bits) * upstream).sum().backward()
    # autograd through the reference's detach formulation
    w2, s2 = w.detach().clone().requires_grad_(), s.detach().clone().requires_grad_()
    (_composite(w2, s2, q_n, q_p, g) * upstream).sum().backward()
    torch.testing.assert_close(w.grad, w2.grad)
    torch.testing.assert_close(s.grad, s2.grad)
    # closed form
    v = w.detach() / s.detach()[:, None]
    inside = (v >= -q_n) & (v <= q_p)
    assert (~inside).any() and inside.any()
    torch.testing.assert_close(w.grad, upstream * inside)
    ds = torch.where(inside, v.round() - v, v.clamp(-q_n, q_p))
    torch.testing.assert_close(s.grad, (ds * upstream).sum(1) * g)


def test_init_step_size_formula_and_zero_channel():
    w = torch.randn(3, 8)
    w[1] = 0.0
    s = init_step_size(w, 7)
    q_p = 63
    torch.testing.assert_close(s[0], 2 * w[0].abs().mean() / math.sqrt(q_p))
    assert torch.isfinite(s).all() and s[1] > 0
    out = lsq_fake_quant(w, s, 7)
    assert torch.isfinite(out).all() and (out[1] == 0).all()
    s_t = init_step_size(w, 7, per_channel=False)
    assert s_t.shape == ()


@pytest.mark.parametrize("bits", [1, 17, 0, -3])
def test_bits_out_of_range(bits):
    with pytest.raises(ValueError, match="bits"):
        quant_range(bits)
    with pytest.raises(ValueError, match="bits"):
        LSQQuantizer(4, bits=bits)


def test_bad_inputs():
    with pytest.raises(TypeError, match="bits"):
        quant_range(7.0)
    with pytest.raises(ValueError, match="step"):
        lsq_fake_quant(torch.randn(3, 2), torch.ones(4), 7)
    with pytest.raises(ValueError, match="weight"):
        lsq_fake_quant(torch.randn(0, 2), torch.ones(()), 7)
    with pytest.raises(ValueError, match="grad_scale"):
        LSQQuantizer(3, grad_scale="layer")


def test_symmetric_range_and_quantizer_module():
    assert quant_range(7) == (64, 63)
    assert quant_range(7, symmetric=True) == (63, 63)
    assert quant_range(4, all_positive=True) == (0, 15)
    q = LSQQuantizer(3, bits=5, grad_scale="channel")
    w = torch.randn(3, 4)
    q.init_from(w)
    codes = q.integers(w)
    assert codes.dtype == torch.int8
    torch.testing.assert_close(codes.float() * q.step[:, None], q(w))


def test_grad_scale_channel_vs_tensor():
    torch.manual_seed(2)
    w = torch.randn(4, 9)
    grads = {}
    for mode in ("tensor", "channel"):
        q = LSQQuantizer(4, bits=4, grad_scale=mode)
        q.init_from(w)
        q(w).pow(2).sum().backward()
        grads[mode] = q.step.grad
    # 1/sqrt(Q_P * 9) vs 1/sqrt(Q_P * 36): ratio sqrt(4) = 2
    torch.testing.assert_close(grads["channel"], 2 * grads["tensor"])
