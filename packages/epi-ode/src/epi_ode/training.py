"""One training loop for every neural forecaster: Adam, masked L1, early stopping on validation."""

from __future__ import annotations

import copy
import time

import numpy as np
import torch
from tqdm.auto import tqdm

__all__ = ["masked_l1", "train_network"]


def masked_l1(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean absolute error over the observed (non-NaN) targets."""
    ok = ~torch.isnan(target)
    return (pred - torch.nan_to_num(target)).abs()[ok].mean()


@torch.no_grad()
def _evaluate(model, X, y, batch_size) -> float:
    model.eval()
    errs, count = 0.0, 0
    for k in range(0, len(X), batch_size):
        t = y[k : k + batch_size]
        ok = ~torch.isnan(t)
        errs += (model(X[k : k + batch_size]) - torch.nan_to_num(t)).abs()[ok].sum().item()
        count += int(ok.sum())
    return errs / max(count, 1)


def train_network(model, Xtr, ytr, Xva, yva, *, epochs, lr, weight_decay, batch_size, patience,
                  seed, verbose=0, desc="train"):  # fmt: skip
    """Train ``model`` (normalised (B, W, N) -> (B, N)) and load its best-validation weights.

    Returns
    -------
    list of dict
        Per epoch: ``epoch, train_loss, val_loss, seconds`` (CPU seconds of this process).
    """
    gen = torch.Generator().manual_seed(seed)
    # the data go where the model is (its ``device=``); batches are drawn by a CPU generator
    dev = next(model.parameters()).device
    f32 = {"dtype": torch.float32, "device": dev}
    Xtr, ytr = torch.as_tensor(Xtr, **f32), torch.as_tensor(ytr, **f32)
    Xva, yva = torch.as_tensor(Xva, **f32), torch.as_tensor(yva, **f32)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state, stale, history = np.inf, None, 0, []
    bar = tqdm(range(epochs), desc=desc, disable=not verbose, leave=False)
    for epoch in bar:
        t0 = time.process_time()
        model.train()
        total, n = 0.0, 0
        for idx in torch.randperm(len(Xtr), generator=gen).split(batch_size):
            if torch.isnan(ytr[idx]).all():  # no observed target: no gradient (not a NaN loss)
                continue
            loss = masked_l1(model(Xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + loss.item() * len(idx), n + len(idx)
        val = _evaluate(model, Xva, yva, 4 * batch_size)
        history.append({"epoch": epoch + 1, "train_loss": total / max(n, 1), "val_loss": val,
                        "seconds": time.process_time() - t0})  # fmt: skip
        bar.set_postfix(train=f"{total / max(n, 1):.4f}", val=f"{val:.4f}")
        if val < best - 1e-6:
            best, best_state, stale = val, copy.deepcopy(model.state_dict()), 0
        else:
            stale += 1
            if stale >= patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return history
