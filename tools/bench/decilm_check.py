"""A Puzzle child exported in NVIDIA's DeciLM layout, loaded by an independent reader of it.

mlx-lm's ``nemotron-nas`` model is a port of NVIDIA's ``modeling_decilm.py`` (the code the
released Llama-3_1-Nemotron-51B / Llama-3_3-Nemotron-Super-49B checkpoints load with). The script
builds heterogeneous children (GQA with several KV-head counts, SwiGLU of several widths, linear
and no-op subblocks, tied and untied heads), writes each with ``nas_puzzle.to_decilm``, loads the
directory with ``mlx_lm.utils.load_model`` (strict: every weight consumed) and compares its
logits with the child's on the same tokens. mlx is not in the workspace lock, so the script adds
it for the run::

    uv run --with "mlx[cpu]" --with mlx-lm python tools/bench/decilm_check.py

Writes ``results/nas-puzzle/decilm.json``.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from record import Run

import nas_puzzle as npz
from nas_puzzle.config import AttentionConfig, BlockConfig, DecoderConfig, FFNConfig


def _children():
    a = lambda k=None: AttentionConfig("gqa", k) if k else None  # noqa: E731
    out = []
    for tied in (True, False):
        cfg = DecoderConfig(vocab_size=101, d_model=128, n_layers=5, n_heads=8, n_kv_heads=8,
                            ffn_intermediate=512, max_seq_len=64, rope_theta=10000.0,
                            tie_embeddings=tied)  # fmt: skip
        blocks = [
            BlockConfig(a(8), FFNConfig("swiglu", 512)),
            BlockConfig(a(2), FFNConfig("swiglu", 256)),
            BlockConfig(AttentionConfig("linear"), FFNConfig("swiglu", 768)),
            BlockConfig(AttentionConfig("noop"), FFNConfig("linear")),
            BlockConfig(a(4), FFNConfig("noop")),
        ]
        out.append((f"5 layers (gqa 8/2/4, linear, no-op; swiglu 512/256/768, linear, no-op), "
                    f"{'tied' if tied else 'untied'} head", cfg, blocks))  # fmt: skip
    return out


def main() -> None:
    from importlib.metadata import version

    import mlx.core as mx
    from mlx_lm.utils import load_model

    run = Run("nas-puzzle", uv_with=['"mlx[cpu]"', "mlx-lm"])
    rows, per = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, cfg, blocks) in enumerate(_children()):
            torch.manual_seed(i)
            child = npz.HeteroDecoder(cfg, blocks).eval()
            path = pathlib.Path(tmp) / f"child{i}"
            npz.to_decilm(child, path)
            model, _ = load_model(path, strict=True)
            ids = torch.randint(
                0, cfg.vocab_size, (2, 17), generator=torch.Generator().manual_seed(7)
            )
            with torch.no_grad():
                want = child(ids)[0].double().numpy()
            got = np.array(model(mx.array(ids.numpy())).astype(mx.float32)).astype(np.float64)
            d = float(np.abs(got - want).max())
            rel = d / float(np.abs(want).max())
            back = npz.from_decilm(path)
            with torch.no_grad():
                rt = float((back(ids)[0] - child(ids)[0]).abs().max())
            rows.append([name, d, rel, rt])
            per[name] = {"mlx_max_abs": d, "mlx_max_rel": rel, "round_trip_max_abs": rt}
            print(name, d, rel, rt, flush=True)
    worst = max(r[2] for r in rows)
    run.table(
        "decilm", ["child", "max |mlx-lm − child|", "max relative", "from_decilm round trip"],
        rows, fmt=[None, ".1e", ".1e", ".1e"], per_seed=per,
        title=f"to_decilm exports loaded by mlx-lm {version('mlx-lm')} (nemotron-nas), float32",
        notes=[f"mlx-lm {version('mlx-lm')}'s nemotron-nas model (a port of NVIDIA's "
               "modeling_decilm.py) loads each export strictly (every weight consumed) and its "
               "logits are compared with the child's on the same tokens (float32 on both sides); "
               f"worst relative difference {worst:.1e}."],
        headline=f"DeciLM export read by mlx-lm's nemotron-nas: worst relative logit "
                 f"difference {worst:.1e}",
    )  # fmt: skip


if __name__ == "__main__":
    main()
