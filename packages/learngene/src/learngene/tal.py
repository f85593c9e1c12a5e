"""TAL: a graph hypernetwork pretrained under an ancestry's guidance, then multi-task tuned with
task-specific layers, predicting a descendant's initial parameters from (architecture, task)."""

from __future__ import annotations

import copy
import math
import pickle
import time
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call
from tqdm.auto import tqdm

from learngene._validation import check_int, check_real, check_vector
from learngene.cnn import ResNetSpace, ResNetSpec
from learngene.data import Task
from learngene.graph import NODE_TYPES, ArchGraph, arch_graph
from learngene.hypernet import GraphHyperNetwork
from learngene.losses import TaskSampler, kd_loss
from learngene.nets import SPECS, make_net
from learngene.training import head_features_batched
from learngene.vit import TinyViT, ViTSpace, ViTSpec

__all__ = ["TAL"]


def _spec_pool(space) -> list[ViTSpec | ResNetSpec]:
    if isinstance(space, ViTSpace | ResNetSpace):
        return list(space.specs)
    if isinstance(space, SPECS):
        return [space]
    if isinstance(space, Sequence) and space and all(isinstance(s, SPECS) for s in space):
        return list(space)  # ViTs and ResNets may be mixed
    raise TypeError(
        "space must be a ViTSpace / ResNetSpace, a spec or a non-empty list of ViTSpec / ResNetSpec"
    )


_V1_NODE_TYPES = 14  # files written before the CNN node types were appended carry no vocabulary


def _upgrade_state(blob: dict, own: dict) -> dict:
    """The saved hypernetwork state, with rows for node types added since it was written.

    Node types are only ever appended, and a graph never uses a type it does not hold, so rows
    for new types (kept at their fresh initialisation) leave every earlier prediction unchanged.
    """
    saved = tuple(blob.get("node_types") or NODE_TYPES[:_V1_NODE_TYPES])
    state = dict(blob["state"])
    if saved == NODE_TYPES:
        return state
    if NODE_TYPES[: len(saved)] != saved:
        raise ValueError(
            f"path: the file's node types {list(saved)} are not a prefix of this version's "
            f"{list(NODE_TYPES)}; it was written by an incompatible learngene"
        )
    for key in ("type_embed.weight", "log_gain"):
        new = own[key].clone()
        new[: len(saved)] = state[key]
        state[key] = new
    return state


def _cosine_warmup(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


class TAL:
    """Task-aware learngene: graph hypernetwork + task-specific FiLM layers (TAL, ICML 2025).

    Parameters
    ----------
    hid, layers, heads : int
        Graphormer encoder width, depth and heads (reference 128 / 5 / 16; CPU default 64 / 3 / 4).
    lora_r : int
        Rank of the LoRA-style decoder (reference 90).
    max_shape : int
        Side c_k of each predicted block (reference 2048); larger tensors are tiled.
    task_dim : int
        Size d_e of task embeddings (= the ancestry's head feature size and the distillation
        projection's output size).
    c_max : int
        Most classes a predicted head can have; heads are cropped to a task's class count.
    use_tsl : bool
        Condition stage 2 and predictions on the task embedding through the TSLs (False gives the
        task-agnostic multi-task GHN of the ablation).
    standardize_embeddings : bool
        Centre task embeddings on the stage-2 tasks' mean and divide by their RMS (one scalar)
        before the TSLs; the same statistics are applied to unseen tasks. Raw ancestry means are
        dominated by a shared component (cosine up to 0.99 between different tasks) and have norms
        of 10-40. The reference feeds them raw (``False``).
    scale : {"timm", "fan_in"}
        Scale of predicted hidden weights: timm's 0.02 with a learnable gain (default) or GHN-3's
        fan-in rule (see ``GraphHyperNetwork``).
    random_state : int
        Seeds initialisation, architecture and task sampling and data order.
    verbose : int
        0 disables progress bars.
    device : str or torch.device, default="cpu"
        Where the hypernetwork trains and predicts (``"cuda"``); it is initialised on the CPU
        from ``random_state`` and moved. Predicted networks are returned on this device.

    Attributes
    ----------
    ghn_ : GraphHyperNetwork
    history_ : dict
        ``stage1_loss`` / ``stage2_loss`` (per step) and ``stage1_seconds`` / ``stage2_seconds``.
    """

    def __init__(
        self,
        hid: int = 64,
        layers: int = 3,
        heads: int = 4,
        lora_r: int = 16,
        max_shape: int = 256,
        task_dim: int = 64,
        c_max: int = 64,
        use_tsl: bool = True,
        standardize_embeddings: bool = True,
        scale: str = "timm",
        random_state: int = 0,
        verbose: int = 1,
        device: str | torch.device = "cpu",
    ):
        self.hid, self.layers, self.heads = hid, layers, heads
        self.lora_r, self.max_shape, self.task_dim, self.c_max = lora_r, max_shape, task_dim, c_max
        self.use_tsl, self.scale, self.random_state, self.verbose = (
            use_tsl,
            scale,
            random_state,
            verbose,
        )
        self.standardize_embeddings = standardize_embeddings
        self.device = device
        self.emb_mean_: np.ndarray | None = None  # set by fit_stage2 when standardising
        self.emb_scale_: float = 1.0
        self._validate_params()
        torch.manual_seed(random_state)
        self.ghn_ = GraphHyperNetwork(hid, layers, heads, lora_r, max_shape, task_dim, scale)
        self.ghn_.to(self._device)
        self.history_: dict = {"stage1_loss": [], "stage2_loss": []}
        self.stage1_done_ = self.stage2_done_ = False
        self._graphs: dict = {}
        self._templates: dict = {}

    # ------------------------------------------------------------------ sklearn-style params
    _PARAMS = (
        "hid",
        "layers",
        "heads",
        "lora_r",
        "max_shape",
        "task_dim",
        "c_max",
        "use_tsl",
        "standardize_embeddings",
        "scale",
        "random_state",
        "verbose",
        "device",
    )

    @property
    def _device(self) -> torch.device:
        return torch.device(getattr(self, "device", "cpu"))

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in self._PARAMS}

    def _validate_params(self):
        for k in ("hid", "layers", "heads", "lora_r", "max_shape", "task_dim", "c_max"):
            check_int(getattr(self, k), k, 1)
        check_int(self.random_state, "random_state", 0)
        check_int(self.verbose, "verbose", 0)
        if self.hid % self.heads:
            raise ValueError(f"hid ({self.hid}) must be divisible by heads ({self.heads})")
        if not isinstance(self.use_tsl, bool):
            raise TypeError("use_tsl must be a bool")
        if not isinstance(self.standardize_embeddings, bool):
            raise TypeError("standardize_embeddings must be a bool")
        if self.scale not in ("timm", "fan_in"):
            raise ValueError(f"scale must be 'timm' or 'fan_in', got {self.scale!r}")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device must name a torch device, got {self.device!r}") from exc

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._PARAMS)
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------------ helpers
    def graph(self, arch: ViTSpec | ResNetSpec) -> ArchGraph:
        """The (cached) graph the hypernetwork reads for ``arch`` (head with ``c_max`` rows)."""
        if not isinstance(arch, SPECS):
            raise TypeError(f"arch must be a ViTSpec or a ResNetSpec, got {type(arch).__name__}")
        g = self._graphs.get(arch)
        if g is None:
            g = self._graphs[arch] = arch_graph(arch, self.c_max, self.task_dim)
        return g

    def _template(self, arch: ViTSpec, n_classes: int) -> TinyViT:
        key = (arch, n_classes)
        m = self._templates.get(key)
        if m is None:
            m = self._templates[key] = (
                make_net(arch, n_classes, distill_dim=self.task_dim)
                .requires_grad_(False)
                .to(self._device)
            )
        return m

    def _check_n_classes(self, n_classes) -> int:
        n_classes = check_int(n_classes, "n_classes", 1)
        if n_classes > self.c_max:
            raise ValueError(f"n_classes ({n_classes}) exceeds c_max ({self.c_max})")
        return n_classes

    def _task_tensor(self, task_emb):
        if task_emb is None:
            return None
        e = check_vector(task_emb, "task_emb", self.task_dim)
        if self.emb_mean_ is not None:
            e = (e - self.emb_mean_) / self.emb_scale_
        return torch.from_numpy(e.astype(np.float32)).to(self._device)

    def _forward(self, arch, x, n_classes, task_emb=None):
        """Predict parameters for ``arch`` and run the batch through them (differentiable)."""
        params = self.ghn_(self.graph(arch), task_emb, n_classes)
        logits, feat = functional_call(
            self._template(arch, n_classes), params, (x,), {"return_features": True}
        )
        return logits, F.linear(feat, params["distill_head.weight"])

    def _optimizer(self, params, lr, weight_decay, steps, warmup):
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        w = max(1, int(warmup * steps))
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _cosine_warmup(s, steps, w))

    def _check_fit_args(self, steps, meta_batch, batch_size, lr, weight_decay, warmup, grad_clip):
        check_int(steps, "steps", 1)
        check_int(meta_batch, "meta_batch", 1)
        check_int(batch_size, "batch_size", 1)
        check_real(lr, "lr", 0.0, open_low=True)
        check_real(weight_decay, "weight_decay", 0.0)
        check_real(warmup, "warmup", 0.0, 1.0)
        check_real(grad_clip, "grad_clip", 0.0, open_low=True)

    def _check_space(self, pool, task):
        for s in pool:
            if (s.in_chans, s.img, s.img) != task.image_shape:
                raise ValueError(
                    f"spec {s} does not fit the images {task.image_shape} of {task.name!r}"
                )

    # ------------------------------------------------------------------ stage 1
    def fit_stage1(
        self,
        proxy: Task,
        ancestry: TinyViT | None,
        space,
        steps: int = 1500,
        meta_batch: int = 4,
        batch_size: int = 128,
        kd_alpha: float = 0.2,
        kd_T: float = 3.0,
        lr: float = 3e-4,
        weight_decay: float = 1e-2,
        warmup: float = 0.05,
        grad_clip: float = 5.0,
    ) -> TAL:
        """Pretrain the hypernetwork on the proxy task under the ancestry's guidance (Eq. 5).

        Each step samples ``meta_batch`` architectures from ``space``, predicts their parameters,
        runs one image batch through each and averages ``kd_loss`` (α = ``kd_alpha``, T = ``kd_T``;
        the target q_t is the ancestry's head feature of the same images).

        Parameters
        ----------
        proxy : Task
            The large generic task (``make_proxy_task``).
        ancestry : TinyViT or None
            Well-trained model with ``head_hidden == task_dim``; may be None only if ``kd_alpha == 0``.
        space : ViTSpace or list of ViTSpec
            Training architectures.
        """
        if not isinstance(proxy, Task):
            raise TypeError(f"proxy must be a Task, got {type(proxy).__name__}")
        kd_alpha = check_real(kd_alpha, "kd_alpha", 0.0, 1.0)
        kd_T = check_real(kd_T, "kd_T", 0.0, open_low=True)
        self._check_fit_args(steps, meta_batch, batch_size, lr, weight_decay, warmup, grad_clip)
        pool = _spec_pool(space)
        self._check_space(pool, proxy)
        self._check_n_classes(proxy.n_classes)
        if kd_alpha > 0:
            if not isinstance(ancestry, TinyViT) or ancestry.pre_logits is None:
                raise ValueError("kd_alpha > 0 needs an ancestry TinyViT built with head_hidden")
            if ancestry.pre_logits.out_features != self.task_dim:
                raise ValueError(
                    f"ancestry head feature size {ancestry.pre_logits.out_features} != task_dim {self.task_dim}"
                )
        X = torch.from_numpy(proxy.X_train).to(self._device)
        y = torch.from_numpy(proxy.y_train).to(self._device)
        q_t = None
        if kd_alpha > 0:  # ancestry targets for the whole proxy set, once, on its own device
            a_dev = next(ancestry.parameters()).device
            q_t = head_features_batched(ancestry, X.to(a_dev)).to(self._device)
        rng = np.random.default_rng(self.random_state + 1)
        g = torch.Generator().manual_seed(self.random_state + 1)
        self.ghn_.train()
        opt, sched = self._optimizer(self.ghn_.parameters(), lr, weight_decay, steps, warmup)
        t0 = time.process_time()
        losses = []
        for _ in tqdm(range(steps), desc="TAL stage 1", disable=not self.verbose, leave=False):
            idx = torch.randint(len(X), (batch_size,), generator=g)
            xb, yb = X[idx], y[idx]
            loss = 0.0
            for i in rng.integers(0, len(pool), meta_batch):
                logits, q_s = self._forward(pool[i], xb, proxy.n_classes)
                loss = loss + kd_loss(
                    logits, yb, q_s, None if q_t is None else q_t[idx], kd_alpha, kd_T
                )
            loss = loss / meta_batch
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.ghn_.parameters(), grad_clip)
            opt.step()
            sched.step()
            losses.append(loss.item())
        self.ghn_.eval()
        self.history_["stage1_loss"] = losses
        self.history_["stage1_seconds"] = time.process_time() - t0
        self.stage1_done_ = True
        return self

    # ------------------------------------------------------------------ stage 2
    def fit_stage2(
        self,
        tasks: dict,
        embeddings: dict | None,
        space,
        steps: int = 1500,
        meta_batch: int = 4,
        batch_size: int = 128,
        temperature: float = 2.0,
        freeze_encoder: bool = True,
        lr: float = 3e-4,
        weight_decay: float = 1e-2,
        warmup: float = 0.05,
        grad_clip: float = 5.0,
    ) -> TAL:
        """Multi-task tuning: each step draws a task with p ∝ (N_τ/ΣN)^(1/temperature), a batch of
        it and ``meta_batch`` architectures; the loss is that task's cross-entropy (no KD).

        With ``freeze_encoder`` the Graphormer layers stay as stage 1 left them; the TSLs (if
        ``use_tsl``), node embeddings and decoder are trained.

        Parameters
        ----------
        tasks : dict name -> Task
        embeddings : dict name -> (task_dim,) array, or None when ``use_tsl`` is False
        space : ViTSpace or list of ViTSpec
        """
        if not isinstance(tasks, dict) or not tasks:
            raise ValueError("tasks must be a non-empty dict of name -> Task")
        for k, t in tasks.items():
            if not isinstance(t, Task):
                raise TypeError(f"tasks[{k!r}] must be a Task, got {type(t).__name__}")
            self._check_n_classes(t.n_classes)
        if self.use_tsl:
            if not isinstance(embeddings, dict) or set(tasks) - set(embeddings):
                raise ValueError("embeddings must map every task name to its task embedding")
            raw = {
                k: check_vector(embeddings[k], f"embeddings[{k!r}]", self.task_dim) for k in tasks
            }
            mean, scale = None, 1.0
            if self.standardize_embeddings:
                R = np.stack(list(raw.values())).astype(np.float64)
                if len(R) > 1:
                    mean = R.mean(0)
                    scale = float(np.sqrt(((R - mean) ** 2).mean())) or 1.0
                else:
                    mean, scale = np.zeros(self.task_dim), float(np.sqrt((R**2).mean())) or 1.0
                mean = mean.astype(np.float32)
            shift = 0.0 if mean is None else mean
            E = {
                k: torch.from_numpy(((v - shift) / scale).astype(np.float32)).to(self._device)
                for k, v in raw.items()
            }
        else:
            E = dict.fromkeys(tasks)
        temperature = check_real(temperature, "temperature", 0.0, open_low=True)
        self._check_fit_args(steps, meta_batch, batch_size, lr, weight_decay, warmup, grad_clip)
        pool = _spec_pool(space)
        for t in tasks.values():
            self._check_space(pool, t)
        frozen = []
        if freeze_encoder:
            for layer in self.ghn_.layers:
                for name, p in layer.named_parameters():
                    if not name.startswith("tsl."):
                        frozen.append(p)
        for p in frozen:
            p.requires_grad_(False)
        try:
            trainable = [p for p in self.ghn_.parameters() if p.requires_grad]
            sampler = TaskSampler(
                {k: t.n_train for k, t in tasks.items()}, temperature, self.random_state + 2
            )
            rng = np.random.default_rng(self.random_state + 3)
            g = torch.Generator().manual_seed(self.random_state + 3)
            data = {
                k: (
                    torch.from_numpy(t.X_train).to(self._device),
                    torch.from_numpy(t.y_train).to(self._device),
                )
                for k, t in tasks.items()
            }
            self.ghn_.train()
            opt, sched = self._optimizer(trainable, lr, weight_decay, steps, warmup)
            t0 = time.process_time()
            losses = []
            names = sampler.sample(steps)
            for name in tqdm(names, desc="TAL stage 2", disable=not self.verbose, leave=False):
                X, y = data[name]
                idx = torch.randint(len(X), (batch_size,), generator=g)
                loss = 0.0
                for i in rng.integers(0, len(pool), meta_batch):
                    logits, _ = self._forward(pool[i], X[idx], tasks[name].n_classes, E[name])
                    loss = loss + F.cross_entropy(logits, y[idx])
                loss = loss / meta_batch
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(trainable, grad_clip)
                opt.step()
                sched.step()
                losses.append(loss.item())
        finally:
            for p in frozen:
                p.requires_grad_(True)
            self.ghn_.eval()
        if self.use_tsl:
            self.emb_mean_, self.emb_scale_ = mean, scale
        self.history_["stage2_loss"] = losses
        self.history_["stage2_tasks"] = names
        self.history_["stage2_seconds"] = time.process_time() - t0
        self.stage2_done_ = True
        return self

    # ------------------------------------------------------------------ using TAL
    @torch.no_grad()
    def predict_parameters(
        self, arch: ViTSpec | ResNetSpec, task_emb=None, n_classes: int = 10
    ) -> dict:
        """Predicted tensors ``{name: tensor}`` of ``TinyViT(arch, n_classes)`` (no distill head)."""
        n_classes = self._check_n_classes(n_classes)
        e = self._task_tensor(task_emb) if self.use_tsl else None
        params = self.ghn_(self.graph(arch), e, n_classes)
        params.pop("distill_head.weight")
        return params

    def predict(self, arch: ViTSpec | ResNetSpec, task_emb=None, n_classes: int = 10):
        """A ``TinyViT(arch, n_classes)`` (or ``TinyResNet``) initialised with the predictions.

        Parameters
        ----------
        arch : ViTSpec or ResNetSpec
            Any depth; widths beyond ``max_shape`` are tiled.
        task_emb : array (task_dim,) or None
            Task embedding (``task_embedding(ancestry, task)``); ignored when ``use_tsl`` is False;
            None gives the task-agnostic prediction.
        n_classes : int <= c_max
        """
        params = self.predict_parameters(arch, task_emb, n_classes)
        net = make_net(arch, n_classes).to(self._device)
        net.load_state_dict({k: v.clone() for k, v in params.items()})
        return net.eval()

    @torch.no_grad()
    def encode(self, arch: ViTSpec | ResNetSpec, task_emb=None) -> np.ndarray:
        """Node embeddings (N, hid) of ``arch``'s graph under the task (the learngene's output)."""
        e = self._task_tensor(task_emb) if self.use_tsl else None
        return self.ghn_.encode(self.graph(arch), e).cpu().numpy()

    @classmethod
    def from_stage1(cls, other: TAL, **overrides) -> TAL:
        """A new model starting from ``other``'s stage-1 hypernetwork (e.g. with ``use_tsl=False``)."""
        if not isinstance(other, TAL):
            raise TypeError(f"other must be a TAL, got {type(other).__name__}")
        params = {**other.get_params(), **overrides}
        new = cls(**params)
        new.ghn_.load_state_dict(copy.deepcopy(other.ghn_.state_dict()))
        new.history_ = {"stage1_loss": list(other.history_["stage1_loss"]), "stage2_loss": []}
        if "stage1_seconds" in other.history_:
            new.history_["stage1_seconds"] = other.history_["stage1_seconds"]
        new.stage1_done_ = other.stage1_done_
        return new

    def save(self, path) -> None:
        """Write the configuration and hypernetwork weights (``torch.save``, tensors + primitives)."""
        torch.save(
            {
                "params": {**self.get_params(), "device": str(self.device)},
                "state": self.ghn_.state_dict(),
                "stages": [self.stage1_done_, self.stage2_done_],
                "emb_mean": None if self.emb_mean_ is None else torch.from_numpy(self.emb_mean_),
                "emb_scale": self.emb_scale_,
                "class": type(self).__name__,
                "node_types": list(NODE_TYPES),
            },
            path,
        )

    @classmethod
    def load(cls, path, device: str | torch.device = "cpu") -> TAL:
        """Read a model written by ``save`` onto ``device`` (default the CPU, whichever device
        saved it).

        A file that is not such a checkpoint (truncated, empty, another pickle) raises
        ``ValueError``; weights are read with ``weights_only=True``, never by unpickling code.
        """
        try:
            blob = torch.load(path, weights_only=True, map_location="cpu")
        except (EOFError, pickle.UnpicklingError, RuntimeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(
                f"path: {path} is not a checkpoint written by TAL.save ({first})"
            ) from exc
        keys = {"params", "state", "stages"}
        if not isinstance(blob, dict) or not keys <= set(blob):
            raise ValueError(
                f"path: {path} is not a checkpoint written by TAL.save (it lacks {sorted(keys)})"
            )
        model = cls(**{**blob["params"], "device": device})
        model.ghn_.load_state_dict(_upgrade_state(blob, model.ghn_.state_dict()))
        model.stage1_done_, model.stage2_done_ = blob["stages"]
        if blob.get("emb_mean") is not None:
            model.emb_mean_ = blob["emb_mean"].numpy()
        model.emb_scale_ = blob.get("emb_scale", 1.0)
        return model
