"""State-dict checks and task vectors: the arithmetic every merging method shares."""

from collections.abc import Mapping, Sequence

import torch

__all__ = ["StateDict", "check_state_dicts", "is_mergeable", "task_vectors"]

StateDict = Mapping[str, torch.Tensor]


def is_mergeable(t: torch.Tensor) -> bool:
    """Floating tensors are merged; integer buffers (e.g. BatchNorm counters) are copied."""
    return t.is_floating_point()


def check_state_dicts(pretrained: StateDict, finetuned: Sequence[StateDict]) -> None:
    """Raise if the fine-tuned state_dicts do not match the pre-trained one key for key.

    Parameters
    ----------
    pretrained : mapping of str -> Tensor
    finetuned : sequence of mappings of str -> Tensor
        Same keys, shapes and dtypes as ``pretrained``; at least one.
    """
    if not isinstance(pretrained, Mapping):
        raise TypeError(
            f"pretrained: expected a state_dict (mapping), got {type(pretrained).__name__}"
        )
    if isinstance(finetuned, Mapping) or not isinstance(finetuned, Sequence):
        raise TypeError("finetuned: expected a sequence of state_dicts")
    if len(finetuned) == 0:
        raise ValueError("finetuned: empty task list; give at least one fine-tuned state_dict")
    for key, value in pretrained.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"pretrained: entry {key!r} is not a tensor")
        if is_mergeable(value) and not torch.isfinite(value).all():
            raise ValueError(f"pretrained: entry {key!r} contains NaN or inf")
    keys = set(pretrained)
    for i, sd in enumerate(finetuned):
        if not isinstance(sd, Mapping):
            raise TypeError(
                f"finetuned[{i}]: expected a state_dict (mapping), got {type(sd).__name__}"
            )
        if set(sd) != keys:
            missing, extra = sorted(keys - set(sd)), sorted(set(sd) - keys)
            raise ValueError(
                f"finetuned[{i}]: keys differ from pretrained (missing {missing[:3]}, extra {extra[:3]})"
            )
        for key, ref in pretrained.items():
            t = sd[key]
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"finetuned[{i}]: entry {key!r} is not a tensor")
            if t.shape != ref.shape:
                raise ValueError(
                    f"finetuned[{i}]: {key!r} has shape {tuple(t.shape)}, pretrained has {tuple(ref.shape)}"
                )
            if t.dtype != ref.dtype:
                raise ValueError(
                    f"finetuned[{i}]: {key!r} has dtype {t.dtype}, pretrained has {ref.dtype}"
                )
            if is_mergeable(t) and not torch.isfinite(t).all():
                raise ValueError(f"finetuned[{i}]: entry {key!r} contains NaN or inf")


def task_vectors(
    pretrained: StateDict, finetuned: Sequence[StateDict]
) -> list[dict[str, torch.Tensor]]:
    """Task vectors ``tau_k = theta_k - theta_0`` for every floating entry (new tensors).

    Parameters
    ----------
    pretrained : mapping of str -> Tensor
    finetuned : sequence of K mappings of str -> Tensor

    Returns
    -------
    list of K dicts
        One dict per task with the floating keys only.
    """
    check_state_dicts(pretrained, finetuned)
    return [
        {k: sd[k].detach() - v.detach() for k, v in pretrained.items() if is_mergeable(v)}
        for sd in finetuned
    ]


def _combine(pretrained: StateDict, delta: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``theta_0 + delta`` on floating keys, copies of the other entries (never aliases inputs)."""
    return {
        k: (v.detach() + delta[k].to(v.dtype)) if k in delta else v.detach().clone()
        for k, v in pretrained.items()
    }
