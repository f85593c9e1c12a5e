"""Ancestry training, task embeddings, evaluation and fine-tuning of (initialised) TinyViTs."""

from __future__ import annotations

import copy
import numbers

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from learngene._validation import check_int, check_real
from learngene.cnn import TinyResNet
from learngene.data import Task
from learngene.vit import TinyViT, ViTSpec

__all__ = ["evaluate_init", "finetune", "head_features_batched", "task_embedding", "train_ancestry"]


def _check_task(task, name="task") -> Task:
    if not isinstance(task, Task):
        raise TypeError(f"{name} must be a learngene.data.Task, got {type(task).__name__}")
    return task


def _check_net(net) -> TinyViT:
    if not isinstance(net, TinyViT | TinyResNet):
        raise TypeError(f"net must be a TinyViT or a TinyResNet, got {type(net).__name__}")
    return net


def _check_shapes(net: TinyViT, task: Task):
    s = net.spec
    if task.image_shape != (s.in_chans, s.img, s.img):
        raise ValueError(f"task images {task.image_shape} do not fit the net's spec {s}")
    if net.n_classes != task.n_classes:
        raise ValueError(
            f"net has {net.n_classes} outputs but task {task.name!r} has {task.n_classes}"
        )


def _train(net, X, y, epochs, lr, batch_size, weight_decay, seed, verbose, desc, after_epoch=None):
    g = torch.Generator().manual_seed(seed)
    ref = next(net.parameters())  # images go where the net is, in its dtype
    X = torch.from_numpy(X).to(device=ref.device, dtype=ref.dtype)
    y = torch.from_numpy(y).to(ref.device)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * -(-len(X) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    out = []
    for _ in tqdm(range(epochs), desc=desc, disable=not verbose, leave=False):
        net.train()
        perm = torch.randperm(len(X), generator=g, device="cpu").to(ref.device)
        for i in range(0, len(X), batch_size):
            idx = perm[i : i + batch_size]
            loss = F.cross_entropy(net(X[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        if after_epoch is not None:
            out.append(after_epoch())
    net.eval()
    return out


def train_ancestry(
    proxy: Task,
    depth: int = 6,
    width: int = 128,
    heads: int = 4,
    head_hidden: int = 64,
    epochs: int = 15,
    lr: float = 1e-3,
    batch_size: int = 128,
    weight_decay: float = 0.05,
    seed: int = 0,
    verbose: int = 1,
) -> TinyViT:
    """Train the "well-trained" ancestry TinyViT on the proxy task (AdamW, one-cycle schedule).

    Its head is ``Linear(width, head_hidden) → GELU → Linear``; the first layer's output is the
    ancestry feature used for task embeddings and as the stage-1 distillation target.

    Returns
    -------
    TinyViT in eval mode, with ``history_`` (test accuracy after training) set.
    """
    _check_task(proxy, "proxy")
    epochs, batch_size, lr, weight_decay = _check_opt_args(epochs, batch_size, lr, weight_decay)
    seed = _check_seed_verbose(seed, verbose)
    head_hidden = check_int(head_hidden, "head_hidden", 1)
    c, h, _ = proxy.image_shape
    spec = ViTSpec(depth, width, heads, 2, 4, h, c)
    with torch.random.fork_rng(devices=[]):  # the caller's RNG is left as it was
        torch.manual_seed(seed)
        net = TinyViT(spec, proxy.n_classes, head_hidden=head_hidden)
    _train(
        net,
        proxy.X_train,
        proxy.y_train,
        epochs,
        lr,
        batch_size,
        weight_decay,
        seed,
        verbose,
        "ancestry",
    )
    net.test_accuracy_ = evaluate_init(net, proxy)
    return net


@torch.no_grad()
def task_embedding(ancestry: TinyViT, task: Task, batch_size: int = 1024) -> np.ndarray:
    """e_τ: mean over the task's training images of the ancestry's head feature, shape (d_e,)."""
    _check_net(ancestry)
    _check_task(task)
    if ancestry.pre_logits is None:
        raise ValueError("ancestry must be built with head_hidden (use train_ancestry)")
    batch_size = check_int(batch_size, "batch_size", 1)
    s = ancestry.spec
    if task.image_shape != (s.in_chans, s.img, s.img):
        raise ValueError(f"task images {task.image_shape} do not fit the ancestry's spec {s}")
    ref = next(ancestry.parameters())  # images go where the ancestry is, in its dtype
    X = torch.from_numpy(task.X_train).to(device=ref.device, dtype=ref.dtype)
    return head_features_batched(ancestry, X, batch_size).mean(0).float().cpu().numpy()


@torch.no_grad()
def head_features_batched(
    ancestry: TinyViT, X: torch.Tensor, batch_size: int = 1024
) -> torch.Tensor:
    """The ancestry's head feature of every image (n, d_e), in batches, in eval mode (the
    ancestry's own mode is restored afterwards)."""
    was = ancestry.training
    ancestry.eval()
    try:
        parts = [
            ancestry.head_features(ancestry.forward_features(X[i : i + batch_size]))
            for i in range(0, len(X), batch_size)
        ]
    finally:
        ancestry.train(was)
    return torch.cat(parts)


def _check_seed_verbose(seed, verbose) -> int:
    if not isinstance(verbose, numbers.Integral):  # 0/1 or a bool
        raise TypeError(f"verbose must be an int, got {type(verbose).__name__}")
    return check_int(seed, "seed", 0)  # torch.Generator refuses numpy integers


def _check_opt_args(epochs, batch_size, lr, weight_decay):
    return (
        check_int(epochs, "epochs", 1),
        check_int(batch_size, "batch_size", 1),
        check_real(lr, "lr", 0.0, open_low=True),
        check_real(weight_decay, "weight_decay", 0.0),
    )


@torch.no_grad()
def evaluate_init(net: TinyViT, task: Task, split: str = "test", batch_size: int = 1024) -> float:
    """Accuracy of ``net`` on the task's ``split`` ("test" or "train"), no training."""
    _check_net(net)
    _check_task(task)
    _check_shapes(net, task)
    if split not in ("test", "train"):
        raise ValueError(f"split must be 'test' or 'train', got {split!r}")
    X, y = (task.X_test, task.y_test) if split == "test" else (task.X_train, task.y_train)
    batch_size = check_int(batch_size, "batch_size", 1)
    was = net.training
    net.eval()
    ref = next(net.parameters())  # a float64 or GPU net gets its images there
    X = torch.from_numpy(X).to(device=ref.device, dtype=ref.dtype)
    try:
        pred = torch.cat(
            [net(X[i : i + batch_size]).argmax(1) for i in range(0, len(X), batch_size)]
        )
    finally:
        net.train(was)
    return float((pred.cpu().numpy() == y).mean())


def finetune(
    net: TinyViT,
    task: Task,
    epochs: int = 3,
    lr: float = 1e-3,
    batch_size: int = 64,
    weight_decay: float = 0.05,
    seed: int = 0,
    verbose: int = 0,
) -> tuple[TinyViT, np.ndarray]:
    """Fine-tune a copy of ``net`` on the task (AdamW, one-cycle); ``net`` itself is untouched.

    Returns
    -------
    net : TinyViT
        The fine-tuned copy.
    curve : ndarray (epochs,)
        Test accuracy after each epoch.
    """
    _check_net(net)
    _check_task(task)
    _check_shapes(net, task)
    epochs, batch_size, lr, weight_decay = _check_opt_args(epochs, batch_size, lr, weight_decay)
    seed = _check_seed_verbose(seed, verbose)
    net = copy.deepcopy(net)
    curve = _train(
        net,
        task.X_train,
        task.y_train,
        epochs,
        lr,
        batch_size,
        weight_decay,
        seed,
        verbose,
        "finetune",
        after_epoch=lambda: evaluate_init(net, task),
    )
    return net, np.asarray(curve)
