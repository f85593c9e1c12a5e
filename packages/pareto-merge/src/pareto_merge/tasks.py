"""Generated merging benchmark: digit-recognition tasks on shifted input domains.

scikit-learn's bundled 8x8 ``load_digits`` images are rendered into several domains (rotated,
inverted, mirrored, blurred, ...). A small MLP is pre-trained on the original images, then
fine-tuned separately on each domain (backbone and a task head); merging combines the fine-tuned
backbones while each task keeps its head, as in the vision merging benchmarks (Ilharco et al.).
"""

from dataclasses import dataclass

import numpy as np
import torch
from scipy.ndimage import gaussian_filter
from sklearn.datasets import load_digits
from torch import nn

__all__ = ["DOMAINS", "DigitTask", "finetune", "make_backbone", "make_digit_tasks", "pretrain"]


def _rot90(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.rot90(img, 1, axes=(1, 2))


def _invert(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return 16.0 - img


def _mirror(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return img[:, :, ::-1]


def _blur(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return gaussian_filter(img, sigma=(0, 1.0, 1.0))


def _noise(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.clip(img + rng.normal(0, 4.0, img.shape), 0, 16)


def _transpose(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return img.transpose(0, 2, 1)


DOMAINS = {
    "rot90": _rot90,
    "invert": _invert,
    "mirror": _mirror,
    "blur": _blur,
    "noise": _noise,
    "transpose": _transpose,
}


@dataclass
class DigitTask:
    """One task: inputs (n, 64) scaled to [0, 1] and labels 0..9, split into train/test."""

    name: str
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor


def make_digit_tasks(
    domains: tuple[str, ...] = ("rot90", "invert"), *, test_size: float = 0.3, random_state: int = 0
) -> tuple[DigitTask, list[DigitTask]]:
    """The original digits (for pre-training) and one task per domain.

    Each domain uses a disjoint random part of the 1797 images, split into train and test.

    Parameters
    ----------
    domains : tuple of str, default=("rot90", "invert")
        Names from :data:`DOMAINS`.
    test_size : float, default=0.3
    random_state : int, default=0

    Returns
    -------
    source : DigitTask
        Original images (the pre-training task).
    tasks : list of DigitTask
    """
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown:
        raise ValueError(f"domains: unknown {unknown}; choose from {sorted(DOMAINS)}")
    if not domains:
        raise ValueError("domains: empty")
    if not 0 < test_size < 1:
        raise ValueError(f"test_size: must be in (0, 1), got {test_size!r}")
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(random_state)
    parts = np.array_split(rng.permutation(len(X)), len(domains) + 1)
    out = []
    for name, idx in zip(("source", *domains), parts, strict=True):
        img = X[idx].reshape(-1, 8, 8)
        if name != "source":
            img = DOMAINS[name](img, rng)
        Xd = torch.tensor(img.reshape(-1, 64) / 16.0, dtype=torch.float32)
        yd = torch.tensor(y[idx], dtype=torch.long)
        n_test = round(test_size * len(idx))
        out.append(DigitTask(name, Xd[n_test:], yd[n_test:], Xd[:n_test], yd[:n_test]))
    return out[0], out[1:]


def make_backbone(hidden: int = 64, features: int = 32, arch: str = "mlp") -> nn.Sequential:
    """The merged part: a feature extractor of the flattened 8x8 image, layer-normed.

    ``"mlp"``: 64 -> hidden -> features. ``"cnn"``: two 3x3 convolutions (16 and 32 channels, the
    second with stride 2) on the 1x8x8 image, then a linear layer to ``features``.
    """
    # the final LayerNorm bounds the feature scale, as in ViTs: entropy objectives cannot then be
    # minimized by merely inflating the weights
    if arch == "mlp":
        return nn.Sequential(
            nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, features), nn.LayerNorm(features)
        )
    if arch == "cnn":
        return nn.Sequential(
            nn.Unflatten(1, (1, 8, 8)),
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * 16, features),
            nn.LayerNorm(features),
        )
    raise ValueError(f"arch: must be 'mlp' or 'cnn', got {arch!r}")


def _train(
    backbone: nn.Module,
    head: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    epochs: int,
    lr: float,
    seed: int,
) -> None:
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam([*backbone.parameters(), *head.parameters()], lr=lr)
    for _ in range(epochs):
        for idx in torch.randperm(len(X), generator=gen).split(64):
            loss = nn.functional.cross_entropy(head(backbone(X[idx])), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()


def pretrain(
    source: DigitTask, *, epochs: int = 30, lr: float = 3e-3, seed: int = 0, arch: str = "mlp"
) -> nn.Sequential:
    """Pre-train a backbone (with a throwaway head) on the original digits."""
    torch.manual_seed(seed)
    backbone = make_backbone(arch=arch)
    _train(backbone, nn.Linear(32, 10), source.X_train, source.y_train, epochs, lr, seed)
    return backbone


def finetune(
    backbone: nn.Module, task: DigitTask, *, epochs: int = 30, lr: float = 1e-3, seed: int = 0
) -> tuple[dict[str, torch.Tensor], nn.Linear]:
    """Fine-tune a copy of the backbone and a fresh head on one task.

    Returns
    -------
    state_dict : dict
        The fine-tuned backbone weights.
    head : nn.Linear
        The task head (kept frozen during merging).
    """
    import copy

    torch.manual_seed(seed)
    model, head = copy.deepcopy(backbone), nn.Linear(32, 10)
    _train(model, head, task.X_train, task.y_train, epochs, lr, seed)
    head.requires_grad_(False)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, head
