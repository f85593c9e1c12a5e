"""Single-model merging baselines: weight averaging, Task Arithmetic and TIES-Merging."""

from collections.abc import Callable, Sequence

import numpy as np
import torch

from pareto_merge.state import StateDict, _combine, task_vectors

__all__ = [
    "task_arithmetic",
    "ties_merge",
    "tune_task_arithmetic",
    "weight_average",
    "weighted_task_arithmetic",
]


def weight_average(
    pretrained: StateDict, finetuned: Sequence[StateDict]
) -> dict[str, torch.Tensor]:
    """Uniform average of the fine-tuned weights (Wortsman et al., 2022, "model soups").

    Parameters
    ----------
    pretrained : state_dict
        Only used for validation and for the non-floating entries.
    finetuned : sequence of K state_dicts

    Returns
    -------
    dict
        The merged state_dict (new tensors).
    """
    tvs = task_vectors(pretrained, finetuned)
    return _combine(pretrained, {k: sum(tv[k] for tv in tvs) / len(tvs) for k in tvs[0]})


def task_arithmetic(
    pretrained: StateDict, finetuned: Sequence[StateDict], scale: float = 0.3
) -> dict[str, torch.Tensor]:
    """Task Arithmetic (Ilharco et al., 2023): ``theta_0 + scale * sum_k tau_k``.

    Parameters
    ----------
    pretrained : state_dict
    finetuned : sequence of K state_dicts
    scale : float, default=0.3
        Scaling coefficient ``lambda`` (the paper tunes it on validation data, see
        :func:`tune_task_arithmetic`).

    Returns
    -------
    dict
    """
    if not np.isfinite(scale):
        raise ValueError(f"scale: must be finite, got {scale!r}")
    tvs = task_vectors(pretrained, finetuned)
    return _combine(pretrained, {k: scale * sum(tv[k] for tv in tvs) for k in tvs[0]})


def weighted_task_arithmetic(
    pretrained: StateDict,
    finetuned: Sequence[StateDict],
    preference: Sequence[float] | np.ndarray,
    scale: float = 0.3,
) -> dict[str, torch.Tensor]:
    """Preference-weighted Task Arithmetic: ``theta_0 + scale * K * sum_k p_k tau_k``.

    The training-free front: the uniform preference gives :func:`task_arithmetic` at ``scale``,
    a vertex ``e_k`` gives ``theta_0 + scale * K * tau_k``.

    Parameters
    ----------
    pretrained : state_dict
    finetuned : sequence of K state_dicts
    preference : array-like of shape (K,)
        On the simplex.
    scale : float, default=0.3

    Returns
    -------
    dict
    """
    if not np.isfinite(scale):
        raise ValueError(f"scale: must be finite, got {scale!r}")
    p = np.asarray(preference, dtype=np.float64)
    if p.shape != (len(finetuned),) or not np.all(np.isfinite(p)):
        raise ValueError(f"preference: expected {len(finetuned)} finite values, got {p.tolist()}")
    if (p < -1e-9).any() or abs(p.sum() - 1) > 1e-6:
        raise ValueError(f"preference: must lie on the simplex, got {p.tolist()}")
    tvs = task_vectors(pretrained, finetuned)
    w = [float(scale * len(tvs) * max(pk, 0.0)) for pk in p]
    return _combine(
        pretrained, {k: sum(wk * tv[k] for wk, tv in zip(w, tvs, strict=True)) for k in tvs[0]}
    )


def tune_task_arithmetic(
    pretrained: StateDict,
    finetuned: Sequence[StateDict],
    score: Callable[[dict[str, torch.Tensor]], float],
    grid: Sequence[float] = tuple(np.round(np.linspace(0.0, 1.0, 11), 2)),
) -> tuple[float, dict[str, torch.Tensor]]:
    """Pick the Task Arithmetic scale that maximizes a validation ``score(state_dict)``.

    Returns
    -------
    best_scale : float
    merged : dict
        The state_dict at ``best_scale``.
    """
    if not callable(score):
        raise TypeError(f"score: must be callable state_dict -> float, got {type(score).__name__}")
    if isinstance(grid, str | bytes) or not hasattr(grid, "__len__"):
        raise TypeError(f"grid: must be a sequence of scales, got {grid!r}")
    if len(grid) == 0:
        raise ValueError("grid: empty")
    scales = []
    for s in grid:
        if isinstance(s, bool) or not isinstance(s, int | float | np.integer | np.floating):
            raise TypeError(f"grid: scales must be numbers, got {s!r}")
        if not np.isfinite(s):
            raise ValueError(f"grid: scales must be finite, got {s!r}")
        scales.append(float(s))
    results = []
    for s in scales:
        value = float(score(task_arithmetic(pretrained, finetuned, s)))
        if not np.isfinite(value):
            raise ValueError(f"score: returned {value} at scale {s} (a finite number is needed)")
        results.append((value, s))
    best = max(results)[1]  # ties: the larger scale, as before
    return best, task_arithmetic(pretrained, finetuned, best)


def ties_merge(
    pretrained: StateDict,
    finetuned: Sequence[StateDict],
    density: float = 0.2,
    scale: float = 1.0,
    scope: str = "model",
) -> dict[str, torch.Tensor]:
    """TIES-Merging (Yadav et al., 2023): trim, elect sign, disjoint merge.

    1. Trim: keep the ``density`` fraction of largest-magnitude entries of each task vector.
    2. Elect: per entry, the sign of the summed trimmed values (the larger total mass).
    3. Disjoint merge: average only the entries whose sign agrees with the elected one.

    Parameters
    ----------
    pretrained : state_dict
    finetuned : sequence of K state_dicts
    density : float, default=0.2
        Fraction in (0, 1] of entries kept per task vector (over the whole model).
    scale : float, default=1.0
        ``lambda`` applied to the merged task vector.
    scope : {"model", "tensor"}, default="model"
        Where the top-``density`` magnitudes are chosen: over the whole flattened task vector
        (the TIES paper's Algorithm 1) or within each tensor separately (mergekit's ``ties``).

    Returns
    -------
    dict
    """
    if not 0 < density <= 1:
        raise ValueError(f"density: must be in (0, 1], got {density!r}")
    if not np.isfinite(scale):
        raise ValueError(f"scale: must be finite, got {scale!r}")
    if scope not in ("model", "tensor"):
        raise ValueError(f"scope: must be 'model' or 'tensor', got {scope!r}")
    tvs = task_vectors(pretrained, finetuned)
    keys = list(tvs[0])
    if scope == "tensor":
        return _combine(
            pretrained,
            {
                k: scale
                * _ties_flat(
                    torch.stack([tv[k].flatten().float() for tv in tvs]), density, "mergekit"
                ).view_as(tvs[0][k])
                for k in keys
            },
        )
    flat = torch.stack([torch.cat([tv[k].flatten().float() for k in keys]) for tv in tvs])  # (K, P)
    merged = _ties_flat(flat, density)
    delta, offset = {}, 0
    for k in keys:
        n = tvs[0][k].numel()
        delta[k] = scale * merged[offset : offset + n].view_as(tvs[0][k])
        offset += n
    return _combine(pretrained, delta)


def _ties_flat(flat: torch.Tensor, density: float, rule: str = "ties") -> torch.Tensor:
    """Trim / elect / disjoint-mean of K flattened task vectors (K, P) -> (P,).

    The kept count truncates, ``k = int(density * P)``, as both references do. ``rule="ties"``
    is the TIES repository's ``topk_values_mask``: every magnitude ``>=`` the ``(P - k)``-th
    smallest (so ``k + 1`` entries, more on ties); ``rule="mergekit"`` is mergekit's
    ``magnitude`` sparsifier: exactly the ``k`` largest (``torch.topk``), at least one.
    """
    P = flat.shape[1]
    k = int(density * P)
    if density >= 1 or (rule == "ties" and k == 0):
        trimmed = flat  # nothing to trim (the reference's k = 0 has no (P - k)-th value either)
    elif rule == "ties":
        thresh = flat.abs().kthvalue(P - k, dim=1, keepdim=True).values
        trimmed = torch.where(flat.abs() >= thresh, flat, torch.zeros_like(flat))
    else:
        idx = flat.abs().topk(max(1, k), dim=1).indices
        trimmed = torch.zeros_like(flat).scatter_(1, idx, flat.gather(1, idx))
    total = trimmed.sum(dim=0)
    if rule == "ties":  # resolve_sign: a zero sum takes the sign of the elected signs' sum
        sign = torch.sign(total)
        sign = torch.where(sign == 0, torch.sign(sign.sum()), sign)
        agree = torch.where(sign > 0, trimmed > 0, trimmed < 0)
    else:  # mergekit's get_mask("sum"): a zero sum counts as positive
        agree = torch.sign(trimmed) == torch.where(total >= 0, 1.0, -1.0).to(trimmed.dtype)
    return (trimmed * agree).sum(0) / agree.sum(0).clamp(min=1)
