"""Pre-train a backbone on a source task (the package's stand-in for ImageNet pre-training)."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm.auto import tqdm

from qat_dg._validation import check_bool, check_int, check_real
from qat_dg.models import build_model

__all__ = ["pretrain_backbone"]


def pretrain_backbone(
    x: Tensor,
    y: Tensor,
    arch: str = "small_cnn",
    width: int | None = None,
    n_steps: int = 3000,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
    verbose: bool = False,
) -> tuple[dict[str, Tensor], dict[str, float]]:
    """Train ``arch`` on (x, y) with Adam and cosine decay; return its ``features`` weights.

    Parameters
    ----------
    x : Tensor
        Inputs (n, C, H, W), e.g. :func:`~qat_dg.data.PretrainDigits`.
    y : Tensor
        Integer labels (n,) in ``[0, num_classes)``.
    arch, width
        Network as in :func:`~qat_dg.models.build_model`.
    n_steps : int, default=3000
        Adam steps.
    batch_size : int, default=128
        Minibatch size.
    lr : float, default=2e-3
        Peak learning rate (cosine-decayed to 0).
    seed : int, default=0
        Initialisation, split and minibatch seed.
    verbose : bool, default=False
        tqdm progress bar.

    Returns
    -------
    state_dict : dict
        Weights and buffers of the ``features`` module; pass as ``hparams["pretrained"]``.
    info : dict
        ``"train_acc"``, ``"val_acc"`` (10 % held out), ``"loss_first"``, ``"loss_last"``.
    """
    if not isinstance(x, Tensor) or x.ndim != 4 or not x.is_floating_point():
        raise ValueError("x must be a float tensor of shape (n, C, H, W)")
    if not isinstance(y, Tensor) or y.ndim != 1 or len(y) != len(x) or y.is_floating_point():
        raise ValueError("y must be an integer tensor of shape (n,) matching x")
    if len(x) < 20 or not torch.isfinite(x).all():
        raise ValueError("x must hold >= 20 finite samples")
    n_steps = check_int("n_steps", n_steps)
    batch_size = check_int("batch_size", batch_size)
    lr = check_real("lr", lr)  # inf trained to NaN weights
    seed = check_int("seed", seed, 0)  # torch.Generator refuses numpy integers
    check_bool("verbose", verbose)
    if int(y.min()) < 0:
        raise ValueError("y must hold class ids >= 0")
    num_classes = int(y.max()) + 1
    if num_classes < 2:
        raise ValueError("y must hold at least two classes")
    torch.manual_seed(seed)
    with torch.device("cpu"):  # one seed, one initialisation, wherever x lives
        net = build_model(arch, tuple(x.shape[1:]), num_classes, width)
    net = net.to(x.device)
    x = x.to(next(net.parameters()).dtype)  # float16/float64 images: the network's float32
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(x), generator=gen, device="cpu").to(x.device)
    n_val = max(1, len(x) // 10)
    val, tr = perm[:n_val], perm[n_val:]
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, n_steps)
    losses = []
    net.train()
    for _ in tqdm(range(n_steps), disable=not verbose, desc="pretrain"):
        idx = tr[torch.randint(len(tr), (batch_size,), generator=gen, device="cpu").to(x.device)]
        loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    net.eval()
    with torch.no_grad():
        acc = {
            k: float((net(x[i]).argmax(1) == y[i]).float().mean())
            for k, i in (("train_acc", tr[:2000]), ("val_acc", val))
        }
    k = max(1, n_steps // 20)
    info = {
        **acc,
        "loss_first": sum(losses[:k]) / k,
        "loss_last": sum(losses[-k:]) / k,
    }
    return copy.deepcopy(net.features.state_dict()), info
