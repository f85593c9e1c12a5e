"""Round trips between :class:`~learngene.TinyViT` and the ViTs users have: ``transformers``'
``ViTForImageClassification`` and ``timm``'s ``VisionTransformer``.

A TinyViT is a standard pre-LN ViT (class token, learned positional embedding, exact GELU, head on
the class token after the final LayerNorm), so the maps are renamings plus two reshapes: the patch
embedding is a linear map of unfolded patches (a convolution's weight flattened as
``(out, c·p·p)``), and the fused ``qkv`` is the concatenation of the query, key and value
projections. ``spec_from_hf`` / ``spec_from_timm`` describe a user's model so that TAL can predict
its parameters; ``to_hf`` / ``to_timm`` ship a predicted TinyViT as a library model;
``from_hf`` / ``from_timm`` bring a library model in (e.g. as an ancestry to select weights from).

Every conversion consumes every tensor of its input or raises naming what it would drop, refuses
variants the TinyViT cannot express (other activations, layer scale, register tokens, mean
pooling, a non-square image, ...), and checks itself with a forward pass on random images: a
conversion whose logits differ by more than ``atol`` raises instead of returning a different model.

``transformers`` (extra ``hf``) and ``timm`` (extra ``timm``) are imported only when used.
"""

from __future__ import annotations

import copy
import numbers
import os

import torch

from learngene.vit import TinyViT, ViTSpec

__all__ = ["from_hf", "from_timm", "spec_from_hf", "spec_from_timm", "to_hf", "to_timm"]

ATOL = 1e-4


# ---------------------------------------------------------------------- TinyViT <-> generic
def _tiny_to_parts(net: TinyViT) -> dict[str, torch.Tensor]:
    """TinyViT tensors under neutral names (patch weight as a conv kernel, qkv split)."""
    s, sd = net.spec, {k: v.detach().clone() for k, v in net.state_dict().items()}
    out = {
        "cls": sd["cls_token"],
        "pos": sd["pos_embed"],
        "patch.w": sd["patch_embed.weight"].reshape(s.width, s.in_chans, s.patch, s.patch),
        "patch.b": sd["patch_embed.bias"],
        "norm.w": sd["norm.weight"],
        "norm.b": sd["norm.bias"],
        "head.w": sd["head.weight"],
        "head.b": sd["head.bias"],
    }
    for i in range(s.depth):
        p = f"blocks.{i}."
        q, k, v = sd[p + "qkv.weight"].chunk(3)
        out.update({f"{i}.q.w": q, f"{i}.k.w": k, f"{i}.v.w": v})
        if s.qkv_bias:
            q, k, v = sd[p + "qkv.bias"].chunk(3)
            out.update({f"{i}.q.b": q, f"{i}.k.b": k, f"{i}.v.b": v})
        for src, dst in (("ln1", "ln1"), ("proj", "o"), ("ln2", "ln2"), ("fc1", "fc1"),
                         ("fc2", "fc2")):  # fmt: skip
            out[f"{i}.{dst}.w"] = sd[p + src + ".weight"]
            out[f"{i}.{dst}.b"] = sd[p + src + ".bias"]
    return out


def _parts_to_tiny(spec: ViTSpec, n_classes: int, parts: dict[str, torch.Tensor]) -> TinyViT:
    sd = {
        "cls_token": parts["cls"],
        "pos_embed": parts["pos"],
        "patch_embed.weight": parts["patch.w"].reshape(spec.width, -1),
        "patch_embed.bias": parts["patch.b"],
        "norm.weight": parts["norm.w"],
        "norm.bias": parts["norm.b"],
        "head.weight": parts["head.w"],
        "head.bias": parts["head.b"],
    }
    for i in range(spec.depth):
        p = f"blocks.{i}."
        sd[p + "qkv.weight"] = torch.cat([parts[f"{i}.{x}.w"] for x in "qkv"])
        if spec.qkv_bias:
            sd[p + "qkv.bias"] = torch.cat([parts[f"{i}.{x}.b"] for x in "qkv"])
        for dst, src in (("ln1", "ln1"), ("proj", "o"), ("ln2", "ln2"), ("fc1", "fc1"),
                         ("fc2", "fc2")):  # fmt: skip
            sd[p + dst + ".weight"] = parts[f"{i}.{src}.w"]
            sd[p + dst + ".bias"] = parts[f"{i}.{src}.b"]
    net = TinyViT(spec, n_classes)
    net.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)
    return net.eval()


def _load_exact(model: torch.nn.Module, names: dict[str, str], parts: dict[str, torch.Tensor]):
    """Load ``parts`` into ``model`` under ``names`` (part -> key); every key must be filled."""
    own = model.state_dict()
    missing = sorted(set(own) - set(names.values()))
    if missing:
        raise ValueError(f"the target model has tensors the TinyViT does not define: {missing}")
    model.load_state_dict({names[k]: v.to(own[names[k]].dtype) for k, v in parts.items()})


def _take(sd: dict[str, torch.Tensor], names: dict[str, str], what: str) -> dict[str, torch.Tensor]:
    """Read ``names`` (part -> key) from ``sd``; raise listing any tensor of ``sd`` left unread."""
    absent = sorted(k for k in names.values() if k not in sd)
    if absent:
        raise ValueError(f"{what}: expected tensors are absent: {absent[:8]}")
    dropped = sorted(set(sd) - set(names.values()))
    if dropped:
        raise ValueError(
            f"{what}: these tensors have no place in a TinyViT and would be dropped: {dropped[:12]}"
            + (f" (+{len(dropped) - 12} more)" if len(dropped) > 12 else "")
        )
    return {p: sd[k].detach().float().clone() for p, k in names.items()}


def _self_check(net: TinyViT, other, call, what: str, atol: float) -> None:
    """Compare logits on seeded random images; raise if they differ by more than
    ``atol · (1 + max |logit|)``."""
    s = net.spec
    x = torch.randn(4, s.in_chans, s.img, s.img, generator=torch.Generator().manual_seed(0))
    dtype = next(other.parameters()).dtype
    if dtype in (torch.float16, torch.bfloat16):
        # a half-precision checkpoint is compared in float32: the check is of the name map,
        # and half-precision rounding alone would exceed atol ("architectures differ")
        other = copy.deepcopy(other).float()
        dtype = torch.float32
    was = other.training
    other.eval()
    with torch.no_grad():
        a = net(x).double()
        b = call(other, x.to(dtype)).double()
    other.train(was)
    err = float((a - b).abs().max())
    tol = atol * (1.0 + float(a.abs().max()))  # relative for large logits
    if not err <= tol:
        raise ValueError(
            f"{what}: the converted model's logits differ by {err:.3g} (> {tol:.3g}) on random "
            "images: the architectures differ in a way the map does not cover"
        )


def _check_tiny(net) -> TinyViT:
    if not isinstance(net, TinyViT):
        raise TypeError(f"net must be a TinyViT, got {type(net).__name__}")
    extra = [n for n in ("pre_logits", "distill_head") if getattr(net, n) is not None]
    if extra:
        raise ValueError(
            f"net has {extra}, which a library ViT classifier has no place for and would drop"
        )
    return net


def _square(v, name: str) -> int:
    if isinstance(v, (list, tuple)):
        if len(v) != 2 or v[0] != v[1]:
            raise ValueError(f"{name} must be square, got {v!r}")
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {v!r}")
    return int(v)


# ---------------------------------------------------------------------- transformers
def _hf_names(depth: int, keys) -> dict[str, str]:
    """Part -> state-dict key of ``ViTForImageClassification`` (transformers 5 or 4 names)."""
    v5 = "vit.layers.0.attention.q_proj.weight" in keys or depth == 0
    e = "vit.embeddings."
    n = {
        "cls": e + "cls_token",
        "pos": e + "position_embeddings",
        "patch.w": e + "patch_embeddings.projection.weight",
        "patch.b": e + "patch_embeddings.projection.bias",
        "norm.w": "vit.layernorm.weight",
        "norm.b": "vit.layernorm.bias",
        "head.w": "classifier.weight",
        "head.b": "classifier.bias",
    }
    for i in range(depth):
        if v5:
            p = f"vit.layers.{i}."
            m = {"q": "attention.q_proj", "k": "attention.k_proj", "v": "attention.v_proj",
                 "o": "attention.o_proj", "fc1": "mlp.fc1", "fc2": "mlp.fc2"}  # fmt: skip
        else:
            p = f"vit.encoder.layer.{i}."
            m = {"q": "attention.attention.query", "k": "attention.attention.key",
                 "v": "attention.attention.value", "o": "attention.output.dense",
                 "fc1": "intermediate.dense", "fc2": "output.dense"}  # fmt: skip
        m.update(ln1="layernorm_before", ln2="layernorm_after")
        for part, mod in m.items():
            n[f"{i}.{part}.w"] = p + mod + ".weight"
            n[f"{i}.{part}.b"] = p + mod + ".bias"
    return n


def _check_shards(path) -> None:
    """Every shard a sharded checkpoint's index names must exist: transformers' own error for a
    missing one names neither the index nor the other missing files."""
    import json

    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        f = os.path.join(os.fspath(path), index)
        if os.path.isfile(f):
            with open(f) as fh:
                shards = sorted(set(json.load(fh).get("weight_map", {}).values()))
            missing = [s for s in shards if not os.path.isfile(os.path.join(os.fspath(path), s))]
            if missing:
                raise FileNotFoundError(
                    f"model: {index} at {os.fspath(path)!r} names {len(shards)} shards, and "
                    f"{len(missing)} are missing: {missing[:5]}"
                )


def _load_hf_dir(path):
    from transformers import ViTForImageClassification

    _check_shards(path)

    model, info = ViTForImageClassification.from_pretrained(
        path, output_loading_info=True, ignore_mismatched_sizes=True
    )
    problems = {
        "missing from the checkpoint (would be randomly initialised)": info.get("missing_keys"),
        "in the checkpoint but not in the model (would be dropped)": info.get("unexpected_keys"),
        "of another shape than the config says (would be re-drawn)": [
            k[0] for k in info.get("mismatched_keys") or ()
        ],
    }
    problems = {k: sorted(v) for k, v in problems.items() if v}
    if problems:
        raise ValueError(
            f"model: the checkpoint at {os.fspath(path)!r} does not load as itself: "
            + "; ".join(f"{k}: {v[:8]}" for k, v in problems.items())
        )
    return model.eval()


def spec_from_hf(config) -> ViTSpec:
    """The :class:`ViTSpec` of a ``transformers`` ``ViTConfig`` (or a model holding one).

    Raises
    ------
    ValueError
        For what a TinyViT cannot express: a model type other than ``"vit"``, an activation other
        than exact GELU, a non-square image or patch, an MLP width that is not a multiple of the
        hidden size, a mask token.
    """
    config = getattr(config, "config", config)
    if getattr(config, "model_type", None) != "vit":
        raise ValueError(
            f"config: expected a ViTConfig (model_type 'vit'), got {getattr(config, 'model_type', type(config).__name__)!r}"
        )
    if config.hidden_act != "gelu":
        raise ValueError(f"config.hidden_act must be 'gelu' (exact), got {config.hidden_act!r}")
    w, inter = int(config.hidden_size), int(config.intermediate_size)
    if inter % w:
        raise ValueError(
            f"config.intermediate_size ({inter}) must be a multiple of hidden_size ({w})"
        )
    return ViTSpec(
        depth=int(config.num_hidden_layers),
        width=w,
        heads=int(config.num_attention_heads),
        mlp_ratio=inter // w,
        patch=_square(config.patch_size, "config.patch_size"),
        img=_square(config.image_size, "config.image_size"),
        in_chans=int(config.num_channels),
        qkv_bias=bool(getattr(config, "qkv_bias", True)),
        ln_eps=float(config.layer_norm_eps),
    )


def _hf_call(model, x):
    return model(pixel_values=x).logits


def to_hf(net: TinyViT, *, atol: float = ATOL, **config_kwargs):
    """A ``transformers.ViTForImageClassification`` with ``net``'s parameters and logits.

    Parameters
    ----------
    net : TinyViT
        Without ``head_hidden`` / ``distill_dim`` (a TAL prediction or a descendant).
    atol : float
        Largest logit difference the self-check on random images accepts.
    **config_kwargs
        Passed on to ``ViTConfig`` (``id2label``, ...); architecture fields are set from the spec.

    Returns
    -------
    ViTForImageClassification
        In eval mode; ``save_pretrained`` / ``from_pretrained`` round-trip it as any HF ViT.
    """
    from transformers import ViTConfig, ViTForImageClassification

    s = _check_tiny(net).spec
    arch = dict(
        hidden_size=s.width,
        num_hidden_layers=s.depth,
        num_attention_heads=s.heads,
        intermediate_size=s.mlp_ratio * s.width,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        layer_norm_eps=s.ln_eps,
        image_size=s.img,
        patch_size=s.patch,
        num_channels=s.in_chans,
        qkv_bias=s.qkv_bias,
        num_labels=net.n_classes,
    )
    clash = sorted(set(arch) & set(config_kwargs))
    if clash:
        raise ValueError(f"config_kwargs: {clash} are set by the net's spec")
    model = ViTForImageClassification(ViTConfig(**arch, **config_kwargs))
    parts = _tiny_to_parts(net)
    names = {k: v for k, v in _hf_names(s.depth, model.state_dict()).items() if k in parts}
    _load_exact(model, names, parts)
    model.eval()
    _self_check(net, model, _hf_call, "to_hf", atol)
    return model


def from_hf(model, *, atol: float = ATOL) -> TinyViT:
    """The :class:`TinyViT` equal to a ``transformers`` ``ViTForImageClassification``.

    Parameters
    ----------
    model : ViTForImageClassification or path
        A loaded model, or a ``save_pretrained`` directory. A directory is loaded with the
        loading report, and any tensor the model would re-initialise (a missing classifier, as
        in a ``ViTModel`` checkpoint), ignore (a pooler) or re-draw for a size mismatch raises:
        ``from_pretrained`` itself only warns.
    atol : float
        Tolerance of the self-check on random images.

    Raises
    ------
    TypeError
        If ``model`` is not a ``ViTForImageClassification`` (a bare ``ViTModel`` has no head).
    ValueError
        If the config is not expressible (see :func:`spec_from_hf`), if a tensor would be dropped
        (a mask token, a pooler), or if the converted logits differ by more than ``atol``.
    """
    if isinstance(model, str | os.PathLike):
        model = _load_hf_dir(model)
    if type(model).__name__ != "ViTForImageClassification":
        raise TypeError(
            f"model must be a transformers ViTForImageClassification, got {type(model).__name__}"
        )
    spec = spec_from_hf(model.config)
    sd = model.state_dict()
    names = _hf_names(spec.depth, sd)
    if not spec.qkv_bias:
        names = {k: v for k, v in names.items() if not k.endswith((".q.b", ".k.b", ".v.b"))}
    net = _parts_to_tiny(spec, int(model.config.num_labels), _take(sd, names, "from_hf"))
    _self_check(net, model, _hf_call, "from_hf", atol)
    return net


# ---------------------------------------------------------------------- timm
def _timm_names(depth: int, qkv_bias: bool) -> dict[str, str]:
    n = {
        "cls": "cls_token",
        "pos": "pos_embed",
        "patch.w": "patch_embed.proj.weight",
        "patch.b": "patch_embed.proj.bias",
        "norm.w": "norm.weight",
        "norm.b": "norm.bias",
        "head.w": "head.weight",
        "head.b": "head.bias",
    }
    for i in range(depth):
        p = f"blocks.{i}."
        n[f"{i}.qkv.w"] = p + "attn.qkv.weight"
        if qkv_bias:
            n[f"{i}.qkv.b"] = p + "attn.qkv.bias"
        for part, mod in (("ln1", "norm1"), ("o", "attn.proj"), ("ln2", "norm2"),
                          ("fc1", "mlp.fc1"), ("fc2", "mlp.fc2")):  # fmt: skip
            n[f"{i}.{part}.w"] = p + mod + ".weight"
            n[f"{i}.{part}.b"] = p + mod + ".bias"
    return n


def _fuse_qkv(parts: dict, depth: int) -> dict:
    out = dict(parts)
    for i in range(depth):
        out[f"{i}.qkv.w"] = torch.cat([out.pop(f"{i}.{x}.w") for x in "qkv"])
        if f"{i}.q.b" in out:
            out[f"{i}.qkv.b"] = torch.cat([out.pop(f"{i}.{x}.b") for x in "qkv"])
    return out


def _split_qkv(parts: dict, depth: int) -> dict:
    out = dict(parts)
    for i in range(depth):
        for x, t in zip("qkv", out.pop(f"{i}.qkv.w").chunk(3), strict=True):
            out[f"{i}.{x}.w"] = t
        if f"{i}.qkv.b" in out:
            for x, t in zip("qkv", out.pop(f"{i}.qkv.b").chunk(3), strict=True):
                out[f"{i}.{x}.b"] = t
    return out


def spec_from_timm(model) -> ViTSpec:
    """The :class:`ViTSpec` of a ``timm`` ``VisionTransformer``.

    Raises
    ------
    ValueError
        For variants a TinyViT cannot express: no class token or register tokens, pooling other
        than ``"token"``, pre-norm or fc-norm, layer scale, q/k norm, an activation other than
        exact GELU, positional embeddings without the class token, dynamic image size, a
        non-square image or patch.
    """
    if type(model).__name__ != "VisionTransformer":
        raise TypeError(f"model must be a timm VisionTransformer, got {type(model).__name__}")
    ident = torch.nn.Identity
    problems = []
    if getattr(model, "global_pool", None) != "token":
        problems.append(f"global_pool={model.global_pool!r} (need 'token')")
    if not getattr(model, "has_class_token", False) or model.num_prefix_tokens != 1:
        problems.append("class token / register tokens")
    if getattr(model, "no_embed_class", False):
        problems.append("no_embed_class=True")
    if getattr(model, "dynamic_img_size", False):
        problems.append("dynamic_img_size=True")
    if getattr(model, "attn_pool", None) is not None:
        problems.append("attention pooling")
    for name in ("norm_pre", "fc_norm"):
        if not isinstance(getattr(model, name, ident()), ident):
            problems.append(name)
    blk = model.blocks[0] if len(model.blocks) else None
    if blk is not None:
        for name in ("ls1", "ls2"):
            if not isinstance(getattr(blk, name, ident()), ident):
                problems.append("layer scale")
                break
        attn = blk.attn
        if not isinstance(getattr(attn, "q_norm", ident()), ident):
            problems.append("q/k norm")
        if not isinstance(getattr(attn, "norm", ident()), ident):
            problems.append("attention output norm")
        act = getattr(blk.mlp, "act", None)
        if type(act) is not torch.nn.GELU or getattr(act, "approximate", "none") != "none":
            problems.append(f"MLP activation {act!r} (need exact GELU)")
        if not isinstance(getattr(blk.mlp, "norm", ident()), ident):
            problems.append("MLP norm")
    if problems:
        raise ValueError(f"model: a TinyViT cannot express {sorted(set(problems))}")
    pe = model.patch_embed
    w = int(model.embed_dim)
    hidden = model.blocks[0].mlp.fc1.out_features if len(model.blocks) else 2 * w
    if hidden % w:
        raise ValueError(f"model: MLP width {hidden} is not a multiple of embed_dim {w}")
    return ViTSpec(
        depth=len(model.blocks),
        width=w,
        heads=int(model.blocks[0].attn.num_heads) if len(model.blocks) else 1,
        mlp_ratio=hidden // w,
        patch=_square(tuple(pe.patch_size), "patch_size"),
        img=_square(tuple(pe.img_size), "img_size"),
        in_chans=int(pe.proj.in_channels),
        qkv_bias=len(model.blocks) == 0 or model.blocks[0].attn.qkv.bias is not None,
        ln_eps=float(model.norm.eps),
    )


def _timm_call(model, x):
    return model(x)


def to_timm(net: TinyViT, *, atol: float = ATOL):
    """A ``timm`` ``VisionTransformer`` with ``net``'s parameters and logits (eval mode)."""
    from functools import partial

    from timm.models.vision_transformer import VisionTransformer

    s = _check_tiny(net).spec
    model = VisionTransformer(
        img_size=s.img,
        patch_size=s.patch,
        in_chans=s.in_chans,
        num_classes=net.n_classes,
        global_pool="token",
        embed_dim=s.width,
        depth=s.depth,
        num_heads=s.heads,
        mlp_ratio=s.mlp_ratio,
        qkv_bias=s.qkv_bias,
        norm_layer=partial(torch.nn.LayerNorm, eps=s.ln_eps),
    )
    _load_exact(model, _timm_names(s.depth, s.qkv_bias), _fuse_qkv(_tiny_to_parts(net), s.depth))
    model.eval()
    _self_check(net, model, _timm_call, "to_timm", atol)
    return model


def from_timm(model, *, atol: float = ATOL) -> TinyViT:
    """The :class:`TinyViT` equal to a ``timm`` ``VisionTransformer`` (see :func:`spec_from_timm`)."""
    spec = spec_from_timm(model)
    parts = _take(model.state_dict(), _timm_names(spec.depth, spec.qkv_bias), "from_timm")
    net = _parts_to_tiny(spec, int(model.num_classes), _split_qkv(parts, spec.depth))
    _self_check(net, model, _timm_call, "from_timm", atol)
    return net
