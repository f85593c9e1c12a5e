"""Global knowledge-distillation uptraining of the assembled child (paper §4.3, App. F.3).

L_GKD = w_cos * sum_l (1 - cos(h_c^l, h_p^l)) + w_kl * KL(p_parent || q_child) (+ w_lm * CE,
default 0: adding the LM term hurt in the paper's ablation, Table 17).
"""

from __future__ import annotations

import copy
import math
import numbers

import torch
from torch import Tensor
from tqdm.auto import tqdm

from nas_puzzle.data import sample_batch
from nas_puzzle.losses import gkd_loss
from nas_puzzle.model import HeteroDecoder
from nas_puzzle.train import _check_steps_lr, _training_tokens, cosine_lr

__all__ = ["uptrain"]


def uptrain(
    child: HeteroDecoder,
    parent: HeteroDecoder,
    data: str | Tensor,
    steps: int = 300,
    lr: float = 3e-4,
    batch_size: int = 16,
    seq_len: int | None = None,
    w_cos: float = 1.0,
    w_kl: float = 1.0,
    w_lm: float = 0.0,
    seed: int = 0,
    verbose: bool = False,
) -> HeteroDecoder:
    """Distill the parent into (a copy of) the child end to end.

    Parameters
    ----------
    child, parent : HeteroDecoder
        Same ``cfg``; neither is modified.
    data : str or Tensor (n,)
    steps, lr, batch_size : int, float, int
    seq_len : int, optional
        Default ``cfg.max_seq_len``.
    w_cos, w_kl, w_lm : float
        Loss weights (paper default 1, 1, 0).
    seed : int
    verbose : bool

    Returns
    -------
    HeteroDecoder
        The uptrained copy of ``child`` in eval mode.
    """
    if not isinstance(child, HeteroDecoder) or not isinstance(parent, HeteroDecoder):
        raise TypeError("child and parent must be HeteroDecoder instances")
    if child.cfg != parent.cfg:
        raise ValueError("child.cfg does not match parent.cfg")
    cfg = child.cfg
    seq_len = cfg.max_seq_len if seq_len is None else seq_len
    steps, lr, batch_size, seq_len, seed = _check_steps_lr(steps, lr, batch_size, seq_len, seed)
    if seq_len > cfg.max_seq_len:
        raise ValueError(f"seq_len={seq_len} exceeds max_seq_len={cfg.max_seq_len}")
    for name, w in (("w_cos", w_cos), ("w_kl", w_kl), ("w_lm", w_lm)):
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not 0 <= w < math.inf:
            raise ValueError(f"{name} must be a finite number >= 0, got {w!r}")
    if w_cos == w_kl == w_lm == 0:
        raise ValueError("w_cos, w_kl and w_lm are all 0")
    if not isinstance(verbose, bool):
        raise TypeError(f"verbose must be a bool, got {type(verbose).__name__}")
    toks = _training_tokens(data, cfg, seq_len).to(child.embed.weight.device)
    child = copy.deepcopy(child).train()
    was_training = parent.training
    parent.eval()  # restored below: the caller's parent keeps its mode
    try:
        return _distill(child, parent, toks, steps, lr, batch_size, seq_len,
                        (w_cos, w_kl, w_lm), seed, verbose)  # fmt: skip
    finally:
        parent.train(was_training)


def _distill(child, parent, toks, steps, lr, batch_size, seq_len, weights, seed, verbose):
    w_cos, w_kl, w_lm = weights
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(child.parameters(), lr=lr, weight_decay=0.0)
    for step in tqdm(range(steps), disable=not verbose, desc="GKD"):
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, steps, lr, warmup=min(20, steps // 10))
        win = sample_batch(toks, batch_size, seq_len, gen)
        x = win[:, :-1]
        with torch.no_grad():
            p_logits, p_aux = parent(x, return_hidden=True)
        c_logits, c_aux = child(x, return_hidden=True)
        loss = gkd_loss(c_logits, p_logits, c_aux.hidden, p_aux.hidden, win[:, 1:],
                        w_cos=w_cos, w_kl=w_kl, w_lm=w_lm)  # fmt: skip
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(child.parameters(), 1.0)
        opt.step()
    return child.eval()
