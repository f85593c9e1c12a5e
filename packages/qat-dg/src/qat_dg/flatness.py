"""Local flatness F_gamma(w) = E_{||d||=gamma} L(w + d) - L(w) (QT-DoG Eq. 5 / Fig. 2, SWAD)."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from qat_dg.quant import quant_parameters

__all__ = ["local_flatness"]


def _batches(data: object, batch_size: int) -> Iterable[tuple[Tensor, Tensor]]:
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, numbers.Integral)
        or batch_size < 1
    ):
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if isinstance(data, tuple | list) and len(data) == 2 and isinstance(data[0], Tensor):
        x, y = data
        if not isinstance(y, Tensor) or x.ndim == 0 or y.ndim == 0:
            raise TypeError("loader: a (x, y) pair must hold two tensors with a batch axis")
        if x.shape[0] != y.shape[0] or x.shape[0] == 0:
            raise ValueError("loader: x and y must have the same non-zero length")
        if x.is_floating_point() and not torch.isfinite(x).all():
            raise ValueError("loader: x contains NaN or inf")
        return [
            (x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, len(x), batch_size)
        ]
    return data  # type: ignore[return-value]


@torch.no_grad()
def _mean_loss(model: nn.Module, loss_fn: Callable, batches: Iterable) -> float:
    total, n = 0.0, 0
    for x, y in batches:
        try:
            total += float(loss_fn(model(x), y, reduction="sum"))
        except (RuntimeError, IndexError) as e:  # name the input: torch's message does not
            raise ValueError(
                f"loss_fn(model(x), y, reduction='sum') failed on loader's (x, y): {e}"
            ) from e
        n += len(y)
    if n == 0:
        raise ValueError("loader yielded no samples")
    return total / n


def local_flatness(
    model: nn.Module,
    loss_fn: Callable[..., Tensor],
    loader: object,
    radii: tuple[str, Sequence[float]] | Sequence[float] = ("rel", (0, 0.01, 0.02, 0.05, 0.1, 0.2)),
    n_directions: int = 20,
    include: str = "weights",
    seed: int = 0,
    batch_size: int = 512,
    normalize: str = "sphere",
) -> dict[str, list[float]]:
    """Monte-Carlo estimate of the loss increase under random weight perturbations.

    For each radius gamma, draws ``n_directions`` directions d uniform on the sphere
    ``||d||_2 = gamma`` over the concatenated perturbed parameters and averages
    ``L(w + d) - L(w)``. The model is evaluated in eval mode (BatchNorm uses its running
    statistics, which are never changed) and restored exactly afterwards. For fake-quant
    models the latent weights are perturbed and the forward pass re-quantizes them.

    Parameters
    ----------
    model : nn.Module
        Model or :class:`~qat_dg.algorithms.Algorithm` (its ``predict`` is used).
    loss_fn : callable
        ``loss_fn(logits, y, reduction="sum")``, e.g. ``torch.nn.functional.cross_entropy``.
    loader : (Tensor, Tensor) or iterable of (x, y)
        Evaluation data.
    radii : ("rel", values) or ("abs", values) or sequence of float
        Radii relative to the norm of the perturbed parameters (default) or absolute; a plain
        sequence means absolute.
    n_directions : int, default=20
        Directions per radius (>= 1).
    include : {"weights", "all"}, default="weights"
        ``"weights"``: every parameter (frozen ones too) except LSQ step sizes; ``"all"``: also
        the steps. For an :class:`~qat_dg.algorithms.Algorithm` the parameters of its
        ``predict_network()`` are perturbed (e.g. the averaged copy of ``ERM_SMA``).
    seed : int, default=0
        Direction seed.
    batch_size : int, default=512
        Evaluation batch size when ``loader`` is a tensor pair.
    normalize : {"sphere", "filter"}, default="sphere"
        ``"sphere"``: d uniform on the sphere of radius gamma (SWAD's protocol, ``radii`` as
        above). ``"filter"``: filter-normalised directions (Li et al., 2018): each output filter
        (row of a weight tensor viewed as (out, -1)) of a Gaussian direction is rescaled to the
        norm of the same filter of w, one-dimensional parameters (biases, norm affine) are not
        perturbed, and the perturbation is ``gamma · d`` with ``radii`` read as the scalar
        gamma (``"rel"`` / ``"abs"`` make no difference). Invariant to per-filter weight
        rescaling, so a model with larger weights does not look flatter.

    Returns
    -------
    dict
        ``{"radius": [...], "mean": [...], "std": [...], "base_loss": [L(w)], "weight_norm":
        [||w||]}``; ``radius`` holds absolute radii (``"sphere"``) or gamma (``"filter"``);
        ``mean``/``std`` are over directions.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    if (
        isinstance(n_directions, bool)
        or not isinstance(n_directions, numbers.Integral)
        or n_directions < 1
    ):
        raise ValueError(f"n_directions must be an int >= 1, got {n_directions!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if include not in ("weights", "all"):
        raise ValueError(f"include must be 'weights' or 'all', got {include!r}")
    if normalize not in ("sphere", "filter"):
        raise ValueError(f"normalize must be 'sphere' or 'filter', got {normalize!r}")
    if isinstance(radii, tuple) and len(radii) == 2 and isinstance(radii[0], str):
        mode, values = radii
        if mode not in ("rel", "abs"):
            raise ValueError(f"radii mode must be 'rel' or 'abs', got {mode!r}")
    else:
        mode, values = "abs", radii
    values = np.asarray(list(values), dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("radii must be a non-empty sequence of finite values >= 0")
    if hasattr(model, "predict_network"):  # an Algorithm: probe the module predict() runs
        model = model.predict_network()
    steps = {id(p) for p in quant_parameters(model)}
    params = [p for p in model.parameters() if include == "all" or id(p) not in steps]
    if not params:
        raise ValueError("model has no parameters to perturb")
    batches = list(_batches(loader, batch_size))
    was_training = model.training
    model.eval()
    originals = [p.detach().clone() for p in params]
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    norm = float(torch.sqrt(sum((p.detach() ** 2).sum() for p in params)))
    abs_radii = values * norm if mode == "rel" and normalize == "sphere" else values
    means, stds = [], []
    try:
        base = _mean_loss(model, loss_fn, batches)
        if not np.isfinite(base):
            raise ValueError(f"the loss at w is {base} on loader: check the data and the model")
        for r in abs_radii:
            if r == 0:
                means.append(0.0)
                stds.append(0.0)
                continue
            incs = []
            for _ in range(n_directions):
                # drawn on the CPU generator, so a seed gives the same directions on any device
                dirs = [
                    torch.randn(p.shape, generator=gen, dtype=p.dtype, device="cpu").to(p.device)
                    for p in params
                ]
                if normalize == "filter":
                    dirs = [_filter_normalized(d, o) for d, o in zip(dirs, originals, strict=True)]
                    scale = r
                else:
                    scale = r / torch.sqrt(sum((d**2).sum() for d in dirs))
                with torch.no_grad():
                    for p, d in zip(params, dirs, strict=True):
                        p.add_(d * scale)
                incs.append(_mean_loss(model, loss_fn, batches) - base)
                with torch.no_grad():
                    for p, o in zip(params, originals, strict=True):
                        p.copy_(o)
            means.append(float(np.mean(incs)))
            stds.append(float(np.std(incs)))
    finally:
        with torch.no_grad():
            for p, o in zip(params, originals, strict=True):
                p.copy_(o)
        model.train(was_training)
    return {
        "radius": [float(r) for r in abs_radii],
        "mean": means,
        "std": stds,
        "base_loss": [base],
        "weight_norm": [norm],
    }


def _filter_normalized(d: Tensor, w: Tensor) -> Tensor:
    """Rows of ``d`` (viewed as (out, -1)) rescaled to the norms of ``w``'s rows; 1-D -> 0."""
    if w.ndim < 2:
        return torch.zeros_like(d)
    d2, w2 = d.reshape(d.shape[0], -1), w.reshape(w.shape[0], -1)
    scale = w2.norm(dim=1, keepdim=True) / d2.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return (d2 * scale).reshape(d.shape)
