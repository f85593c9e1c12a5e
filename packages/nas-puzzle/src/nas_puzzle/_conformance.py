"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import numpy as np
import torch

import nas_puzzle as npz
from nas_puzzle import DecoderConfig, HeteroDecoder, kl_to_parent, normalized_mse_loss
from nas_puzzle.model import FFNSubblock

CFG = DecoderConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, head_dim=8,
                    ffn_intermediate=32, max_seq_len=16)  # fmt: skip


def _model():
    torch.manual_seed(0)
    return HeteroDecoder(CFG).eval()


_M = None


def _logits(tokens):
    global _M
    _M = _M or _model()
    with torch.no_grad():
        return _M(torch.as_tensor(tokens))[0].numpy()


def _kl(child_logits, parent_logits):
    return kl_to_parent(torch.as_tensor(child_logits), torch.as_tensor(parent_logits)).item()


def _nmse(input, target):
    return normalized_mse_loss(torch.as_tensor(input), torch.as_tensor(target)).item()


def _llama(**overrides):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
        attention_bias=False, **overrides,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(cfg).eval()


_HF: dict = {}


def _from_hf(tokens):
    """Logits of the parent ``from_hf`` reads out of a tiny random LlamaForCausalLM."""
    if "parent" not in _HF:
        _HF["llama"] = _llama()
        _HF["parent"] = npz.from_hf(_HF["llama"])
    with torch.no_grad():
        return _HF["parent"](torch.as_tensor(tokens))[0].numpy()


def _llama_logits(tokens):
    _from_hf(tokens[:1])
    with torch.no_grad():
        return _HF["llama"](torch.as_tensor(tokens)).logits.numpy()


def _child():
    torch.manual_seed(1)
    blocks = [npz.BlockConfig.from_name("gqa1/ffn16"), npz.BlockConfig.from_name("linear/noop")]
    return HeteroDecoder(CFG, blocks).eval()


def _write_child(folder):
    path = folder / "child"
    npz.to_hf(_child()).save_pretrained(path)
    return path


def _read_hf(path):
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(path).eval()


_TOKS = torch.arange(20).reshape(2, 10) % 32


def _same_logits(a, b) -> bool:
    with torch.no_grad():
        return bool(torch.allclose(a(_TOKS).logits, b(_TOKS).logits, atol=1e-6))


def _check_child(model) -> None:
    with torch.no_grad():
        diff = (model(_TOKS).logits - _child()(_TOKS)[0]).abs().max().item()
    assert diff < 1e-5, f"reloaded child's logits differ from the HeteroDecoder's by {diff}"


def _export_hf(model, folder):
    model.save_pretrained(folder)
    return folder


def _safetensors_error():
    from safetensors import SafetensorError

    return SafetensorError


def _drop(name):
    return lambda path: (path / name).unlink()


def _truncate(name):
    def go(path):
        data = (path / name).read_bytes()
        (path / name).write_bytes(data[: len(data) // 2])

    return go


# the DeciLM layout: head width d / heads and FFN widths that are multiples of 256
_DCFG = DecoderConfig(vocab_size=32, d_model=32, n_layers=2, n_heads=2, n_kv_heads=2,
                      ffn_intermediate=256, max_seq_len=16)  # fmt: skip


def _decilm_child():
    from nas_puzzle.config import AttentionConfig, BlockConfig, FFNConfig

    torch.manual_seed(0)
    blocks = [BlockConfig(AttentionConfig("gqa", 1), FFNConfig("swiglu", 256)),
              BlockConfig(AttentionConfig("linear"), FFNConfig("noop"))]  # fmt: skip
    return HeteroDecoder(_DCFG, blocks).eval()


def _write_decilm(folder):
    npz.to_decilm(_decilm_child(), folder / "decilm")
    return folder / "decilm"


def _same_child(a, b) -> bool:
    with torch.no_grad():
        return bool(torch.allclose(a(_TOKS)[0], b(_TOKS)[0], atol=1e-6))


def _check_decilm(model) -> None:
    assert _same_child(model, _decilm_child()), "the read child differs from the written one"


def _export_decilm(model, folder):
    npz.to_decilm(model, folder)
    return folder


def _edit_config(edit):
    def go(path):
        import json

        cfg = json.loads((path / "config.json").read_text())
        edit(cfg)
        (path / "config.json").write_text(json.dumps(cfg))

    return go


def _retype(model_type):
    return _edit_config(lambda c: c.update(model_type=model_type))


def _window(n):
    return _edit_config(lambda c: c["block_configs"][0]["attention"].update(window_length=n))


def _drop_tensor(name):
    def go(path):
        from safetensors.torch import load_file, save_file

        sd = load_file(path / "model.safetensors")
        del sd[name]
        save_file(sd, path / "model.safetensors")

    return go


torch.manual_seed(0)
_PARENT = HeteroDecoder(CFG).eval()


def _puzzle(data, val_data, seed=0):
    """The chained driver end to end on a tiny parent: the realized child's logits."""
    parent = copy.deepcopy(_PARENT)  # built outside any device context, like a user's model
    space = npz.SearchSpace.paper_default(CFG, ffn_ratios=(1.0, 0.5), round_to=8)
    space = space.restrict(attention=["gqa1", "noop"], ffn=["ffn16", "noop"])
    pz = npz.Puzzle(parent, space, data=data, val_data=val_data, seed=seed,
                    scenario=npz.Scenario(batch_sizes=(1,), prefill_len=8, decode_len=8))  # fmt: skip
    pz.build_library(steps=2, batch_size=2, seq_len=8).score(max_windows=2, seq_len=8).measure()
    full = pz.costs.model_totals([0] * CFG.n_layers, 1)
    pz.search(npz.Constraints(memory_max_bytes=0.8 * full["memory_bytes"])).realize()
    with torch.no_grad():
        return pz.child(_TOKS.to(next(parent.parameters()).device))[0].float().cpu().numpy()


def _split(data, fractions=(0.8, 0.2)):
    return npz.split_tokens(data, fractions)


def _windows(data, seq_len=4, max_windows=None):
    return npz.eval_windows(data, seq_len, max_windows)


def _cos(child, parent):
    return npz.cosine_hidden_loss([child], [parent])


def _gkd(child_logits, parent_logits, child_hidden, parent_hidden, targets=None, w_cos=1.0,
         w_kl=1.0, w_lm=0.0):  # fmt: skip
    t = None if targets is None else torch.as_tensor(targets)
    return npz.gkd_loss(torch.as_tensor(child_logits), torch.as_tensor(parent_logits),
                        [torch.as_tensor(child_hidden)], [torch.as_tensor(parent_hidden)],
                        targets=t, w_cos=w_cos, w_kl=w_kl, w_lm=w_lm).item()  # fmt: skip


def _ce(logits, targets):
    return torch.nn.functional.cross_entropy(
        torch.as_tensor(logits), torch.as_tensor(targets)
    ).item()


def _infer(drop_layer_1_ffn=False):
    torch.manual_seed(0)
    blocks = [npz.BlockConfig.from_name("gqa1/ffn16"), npz.BlockConfig.from_name("linear/noop")]
    sd = HeteroDecoder(CFG, blocks).state_dict()
    if drop_layer_1_ffn:
        sd = {k: v for k, v in sd.items() if not k.startswith("blocks.0.ffn")}
    return [b.name for b in npz.infer_block_configs(CFG, sd)]


def entries() -> list[dict]:
    rng = np.random.default_rng(0)
    toks = rng.integers(0, 32, size=(3, 10))
    a, b = rng.normal(size=(6, 32)).astype(np.float32), rng.normal(size=(6, 32)).astype(np.float32)
    corpus = npz.split_tokens(npz.toy_corpus(1_500, seed=1))
    corpus = [torch.as_tensor(c) % CFG.vocab_size for c in corpus]  # byte ids into the vocabulary
    return [
        {"name": "HeteroDecoder.forward", "call": _logits, "kwargs": {"tokens": toks},
         "arrays": {"tokens": {"kind": "labels", "ndim": 2}}, "rows": [["tokens"]],
         "order": "equivariant",
         "known": [{"kwargs": {"tokens": np.array([[1, 40]])}, "raises": ["tokens"], "check": None,
                    "why": "a token id outside the vocabulary"}]},
        {"name": "kl_to_parent", "call": _kl, "kwargs": {"child_logits": a, "parent_logits": b},
         "arrays": {"child_logits": {"kind": "float", "ndim": (2, 3)},
                    "parent_logits": {"kind": "float", "ndim": (2, 3)}},
         "rows": [["child_logits", "parent_logits"]], "order": "invariant",
         "known": [{"kwargs": {"child_logits": a, "parent_logits": a}, "check": lambda v: abs(v) < 1e-6,
                    "why": "KL of a distribution to itself"}]},
        {"name": "normalized_mse_loss", "call": _nmse, "kwargs": {"input": a, "target": b},
         "arrays": {"input": {"kind": "float", "ndim": (2, 3)}, "target": {"kind": "float", "ndim": (2, 3)}},
         "rows": [["input", "target"]], "order": "invariant",
         "known": [{"kwargs": {"input": np.zeros((2, 4), np.float32), "target": np.ones((2, 4), np.float32)},
                    "check": lambda v: abs(v - 1.0) < 1e-6, "why": "||0 - t||^2 / ||t||^2 = 1"}]},
        {"name": "split_tokens", "call": _split, "kwargs": {"data": corpus[1]},
         "arrays": {"data": {"kind": "labels", "ndim": 1}},
         "params": {"fractions": {"bad": [(0.0, 1.0), (0.5, 0.6), (float("nan"), 1.0)]}},
         "known": [{"kwargs": {"data": torch.arange(10)},
                    "check": lambda parts: [p.tolist() for p in parts] == [list(range(8)), [8, 9]],
                    "why": "contiguous 80/20 split"}]},
        {"name": "eval_windows", "call": _windows, "kwargs": {"data": corpus[1]},
         "arrays": {"data": {"kind": "labels", "ndim": 1}},
         "params": {"seq_len": {"type": "int", "bad": [0]}, "max_windows": {"type": "int", "bad": [0], "good": 2}},
         "known": [{"kwargs": {"data": torch.arange(9)},
                    "check": lambda w: w.tolist() == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]],
                    "why": "non-overlapping windows sharing their boundary token"}]},
        {"name": "cosine_hidden_loss", "call": _cos,
         "kwargs": {"child": torch.as_tensor(a), "parent": torch.as_tensor(b)},
         "known": [{"kwargs": {"child": torch.as_tensor(a), "parent": torch.as_tensor(a)},
                    "check": lambda v: abs(float(v)) < 1e-6, "why": "identical hidden states"}]},
        {"name": "gkd_loss", "call": _gkd,
         "kwargs": {"child_logits": a, "parent_logits": b, "child_hidden": b[:, :8],
                    "parent_hidden": a[:, :8], "targets": np.arange(6) % 32, "w_lm": 0.5},
         "arrays": {"child_logits": {"kind": "float", "ndim": 2},
                    "parent_logits": {"kind": "float", "ndim": 2},
                    "child_hidden": {"kind": "float", "ndim": 2},
                    "parent_hidden": {"kind": "float", "ndim": 2},
                    "targets": {"kind": "labels", "ndim": 1}},
         "rows": [["child_logits", "parent_logits", "child_hidden", "parent_hidden", "targets"]],
         "order": "invariant",
         "params": {"w_cos": {"type": "float", "bad": [-1.0, float("nan"), float("inf")]},
                    "w_kl": {"type": "float", "bad": [-1.0, float("nan")]},
                    "w_lm": {"type": "float", "bad": [-0.5, float("inf")]}},
         "known": [{"kwargs": {"child_logits": a, "parent_logits": a, "child_hidden": a,
                               "parent_hidden": a, "w_lm": 0.0},
                    "check": lambda v: abs(v) < 1e-6, "why": "a child equal to its parent"},
                   {"kwargs": {"child_logits": a, "parent_logits": b, "child_hidden": a,
                               "parent_hidden": b, "targets": np.arange(6), "w_cos": 0.0,
                               "w_kl": 0.0, "w_lm": 1.0},
                    "check": lambda v: abs(v - _ce(a, np.arange(6))) < 1e-6,
                    "why": "w_lm alone is the next-token cross-entropy"},
                   {"kwargs": {"child_logits": a, "parent_logits": b, "child_hidden": a,
                               "parent_hidden": b, "targets": np.arange(6) + 40},
                    "raises": ["targets"], "why": "a target outside the vocabulary"},
                   {"kwargs": {"child_logits": a, "parent_logits": b, "child_hidden": a,
                               "parent_hidden": b, "w_cos": 0.0, "w_kl": 0.0, "w_lm": 0.0},
                    "raises": ["w_cos"], "why": "all weights 0"}]},
        {"name": "infer_block_configs", "call": _infer, "kwargs": {},
         "grid": {"drop_layer_1_ffn": [True]},
         "known": [{"kwargs": {}, "check": lambda names: names == ["gqa1/ffn16", "linear/noop"],
                    "why": "the variants read back off the state_dict"},
                   {"kwargs": {"drop_layer_1_ffn": True}, "check": lambda names: names[0].endswith("noop"),
                    "why": "a missing FFN reads as a removed (no-op) subblock"}]},
        {"name": "from_hf", "call": _from_hf, "kwargs": {"tokens": toks},
         "arrays": {"tokens": {"kind": "labels", "ndim": 2}}, "rows": [["tokens"]],
         "order": "equivariant",
         "known": [{"kwargs": {"tokens": toks},
                    "check": lambda out: np.abs(out - _llama_logits(toks)).max() < 1e-5,
                    "why": "the parent gives the LlamaForCausalLM's logits"},
                   {"kwargs": {"tokens": np.array([[1, 70]])}, "raises": ["tokens"],
                    "why": "a token id outside the vocabulary"}]},
        {"name": "to_hf", "kind": "loader", "write": _write_child, "read": _read_hf,
         "check": _check_child, "export": _export_hf, "same": _same_logits,
         "corrupt": [("no-config", _drop("config.json")),
                     ("no-weights", _drop("model.safetensors")),
                     ("truncated-weights", _truncate("model.safetensors"))],
         "errors": (ValueError, OSError, _safetensors_error())},
        {"name": "to_decilm", "kind": "loader", "write": _write_decilm, "read": npz.from_decilm,
         "check": _check_decilm, "export": _export_decilm, "same": _same_child,
         "corrupt": [("no-config", _drop("config.json")),
                     ("no-weights", _drop("model.safetensors")),
                     ("truncated-weights", _truncate("model.safetensors")),
                     ("not-decilm", _retype("llama"))],
         "errors": (ValueError, OSError, _safetensors_error())},
        {"name": "from_decilm", "kind": "loader", "write": _write_decilm, "read": npz.from_decilm,
         "check": _check_decilm,
         "corrupt": [("missing-weight", _drop_tensor("model.layers.0.mlp.up_proj.weight")),
                     ("window-length", _window(64))],
         "errors": (ValueError, OSError, _safetensors_error())},
        {"name": "Puzzle", "call": _puzzle, "kwargs": {"data": corpus[0], "val_data": corpus[1]},
         "modules": lambda: [_PARENT],
         "arrays": {"data": {"kind": "labels", "ndim": 1}, "val_data": {"kind": "labels", "ndim": 1}},
         "rows": [["data"], ["val_data"]], "min_rows": 20,
         "params": {"seed": {"type": "int", "bad": [True]}}},
        *_mip_entries(),
        *_unit_entries(),
        *_config_entries(),
        *_budget_entries(),
        *_space_entries(),
        *_tokenizer_entries(),
        *_cost_entries(),
        *_library_entries(),
        *_assembly_entries(),
        *_run_entries(),
        *_data_entries(corpus[1]),
    ]  # fmt: skip


def _mip_tables():
    """Analytic costs of a 3-layer model and random scores, 6 variants per layer."""
    cfg = DecoderConfig(d_model=32, n_layers=3, n_heads=4, n_kv_heads=4, ffn_intermediate=64,
                        max_seq_len=32)  # fmt: skip
    space = npz.SearchSpace.from_names(cfg, ["gqa4", "gqa1", "noop"], ["ffn64", "ffn16"])
    costs = npz.estimate(
        space, cfg, npz.Scenario(batch_sizes=(1, 8), prefill_len=16, decode_len=16)
    )
    kl = np.random.default_rng(0).random((cfg.n_layers, len(space.variants())))
    kl[:, 0] = 0.0
    rng = np.random.default_rng(1)  # two more metrics, for the objective grid
    lm, acc = kl + rng.random(kl.shape), 1.0 - kl
    scores = npz.ScoreTable(space.variants(), {"kl": kl, "lm_loss": lm, "top1_acc": acc})
    cons = npz.Constraints(
        latency_max_s=0.6 * costs.model_totals([0] * cfg.n_layers, 8)["runtime_s"]
    )
    return scores, costs, cons


def _grouped(obj, rows, lo, hi, solver="highs", time_limit_s=60.0, max_overlap=None):
    prev = [np.zeros(len(obj), int)] if max_overlap is not None else ()
    return npz.solve_grouped(obj, rows, lo, hi, previous=prev, max_overlap=max_overlap,
                             solver=solver, time_limit_s=time_limit_s)[0]  # fmt: skip


def _brute_best(obj, rows, lo, hi) -> float:
    import itertools

    best = np.inf
    for pick in itertools.product(range(obj.shape[1]), repeat=obj.shape[0]):
        x = np.zeros_like(obj)
        x[np.arange(len(pick)), pick] = 1
        tot = (rows * x).sum((1, 2))
        if np.all(tot >= lo - 1e-9) and np.all(tot <= hi + 1e-9):
            best = min(best, obj[np.arange(len(pick)), pick].sum())
    return best


def _solve(alpha=None, batch_size=8, objective="kl", solver="highs", time_limit_s=60.0):
    scores, costs, cons = _mip_tables()
    prev = [np.zeros(costs.param_bytes.shape[0], int)] if alpha is not None else ()
    sol = npz.solve(scores, costs, cons, objective=objective, batch_size=batch_size, solver=solver,
                    time_limit_s=time_limit_s, previous=prev, alpha=alpha)  # fmt: skip
    return sol.indices, sol.objective


def _solve_many(n=3, alpha=0.7):
    scores, costs, cons = _mip_tables()
    return np.stack(
        [s.indices for s in npz.solve_many(scores, costs, cons, n=n, alpha=alpha, batch_size=8)]
    )


def _library(ms_budget=5.0, objective="metrics.kl_div", minimize=True, solver="highs"):
    lib = {
        "L0": {"a": {"stats": {"ms": 3.0}, "metrics": {"kl_div": 0.0}},
               "b": {"stats": {"ms": 1.0}, "metrics": {"kl_div": 0.5}}},
        "L1": {"a": {"stats": {"ms": 3.0}, "metrics": {"kl_div": 0.0}},
               "b": {"stats": {"ms": 2.0}, "metrics": {"kl_div": 0.1}},
               "c": {"stats": {"ms": 0.5}, "metrics": {"kl_div": 0.9}}},
    }  # fmt: skip
    out = npz.solve_library_dict(lib, objective=objective, constraints={"stats.ms": ms_budget},
                                 minimize=minimize, solver=solver)  # fmt: skip
    return out["objective"], [out["choices"][k] for k in ("L0", "L1")]


def _mip_entries() -> list[dict]:
    rng = np.random.default_rng(3)
    obj = rng.random((3, 4))
    rows = rng.random((2, 3, 4))
    lo, hi = np.array([-np.inf, 0.5]), np.array([1.6, np.inf])
    kw = {"obj": obj, "rows": rows, "lo": lo, "hi": hi}
    best = _brute_best(obj, rows, lo, hi)
    scores, costs, cons = _mip_tables()
    brute = npz.solve(scores, costs, cons, batch_size=8, solver="brute").objective
    return [
        {"name": "solve_grouped", "call": _grouped, "kwargs": kw,
         "arrays": {"obj": {"kind": "float", "ndim": 2}, "rows": {"kind": "float", "ndim": 3},
                    "lo": {"kind": "float", "ndim": 1, "inf_ok": True},
                    "hi": {"kind": "float", "ndim": 1, "inf_ok": True}},
         "params": {"solver": {"type": "str", "bad": ["gurobi"]},
                    "time_limit_s": {"type": "float", "bad": [0.0, float("nan")]},
                    "max_overlap": {"type": "int", "bad": [-1, 4], "good": 2}},
         "known": [{"kwargs": kw, "check": lambda i: abs(obj[np.arange(3), i].sum() - best) < 1e-9,
                    "why": "the optimum of an enumerated 3-layer, 4-variant instance"},
                   {"kwargs": {**kw, "solver": "brute"},
                    "check": lambda i: abs(obj[np.arange(3), i].sum() - best) < 1e-9,
                    "why": "the brute-force solver on the same instance"}],
         "grid": {"solver": ["brute", "cvxpy"]}},
        {"name": "solve", "call": _solve, "kwargs": {},
         "params": {"alpha": {"type": "float", "bad": [-0.1, 1.5, float("nan")], "good": 0.7},
                    "batch_size": {"type": "int", "bad": [4]},
                    "objective": {"type": "str", "bad": ["bleu"]},
                    "solver": {"type": "str", "bad": ["gurobi"]},
                    "time_limit_s": {"type": "float", "bad": [-1.0]}},
         "known": [{"kwargs": {}, "check": lambda r: abs(r[1] - brute) < 1e-12,
                    "why": "HiGHS reaches the brute-force optimum under a 60 % latency budget"}],
         "grid": {"solver": ["brute"], "objective": ["lm_loss", "top1_acc"]}},
        {"name": "solve_many", "call": _solve_many, "kwargs": {},
         "params": {"n": {"type": "int", "bad": [0, -1]},
                    "alpha": {"type": "float", "bad": [-0.1, 1.5, float("nan")]}},
         "known": [{"kwargs": {"n": 3, "alpha": 0.7},
                    "check": lambda s: all((s[i] == s[j]).sum() <= 2 for i in range(len(s))
                                           for j in range(i)),
                    "why": "every pair of the diverse solutions shares at most floor(0.7 * 3) layers"}]},
        {"name": "solve_library_dict", "call": _library, "kwargs": {},
         "grid": {"solver": ["brute"], "minimize": [False], "objective": ["stats.ms"]},
         "params": {"objective": {"type": "str", "bad": ["metrics.mmlu"]},
                    "solver": {"type": "str", "bad": ["gurobi"]}},
         "known": [{"kwargs": {}, "check": lambda r: r[1] == ["a", "b"] and abs(r[0] - 0.1) < 1e-12,
                    "why": "the 5 ms menu: keep L0, the cheaper L1 variant (kl 0.1)"},
                   {"kwargs": {"ms_budget": 1.0}, "raises": ["stats.ms"], "check": None,
                    "why": "infeasible: the error gives the smallest total, 1.5 ms"},
                   {"kwargs": {"ms_budget": float("nan")}, "raises": ["constraints"], "check": None,
                    "why": "a NaN budget"}]},
    ]  # fmt: skip


def _ffn():
    torch.manual_seed(0)
    return FFNSubblock(CFG, npz.BlockConfig.from_name("gqa1/ffn16").ffn).double().eval()


_FFN = _ffn()


def _contribution(x):
    return npz.channel_contribution(_FFN, x)


def _init_ffn(calib, ffn="ffn8", parent=None):
    """The child FFN initialised from _FFN (width 16) and its delta on fixed hidden states."""
    variant = npz.BlockConfig.from_name(f"gqa1/{ffn}").ffn
    child = npz.init_ffn(_FFN if parent is None else parent, variant, calib)
    ref = next(child.parameters(), _FFN.down_proj.weight)
    x = _randn(6, 9, device="cpu").view(2, 3, -1).to(device=ref.device, dtype=ref.dtype)
    with torch.no_grad():
        return child(x)


_ATTN = None


def _attn_parent():
    """A 2-KV-head GQA parent subblock (CFG: 2 query heads of 8), float64, built once."""
    global _ATTN
    if _ATTN is None:
        from nas_puzzle.model import AttentionSubblock

        torch.manual_seed(1)
        variant = npz.BlockConfig.from_name("gqa2/ffn16").attention
        _ATTN = AttentionSubblock(CFG, variant).double().eval()
    return _ATTN


def _attn_delta(module, t):
    from nas_puzzle.model import rope_tables

    x = _randn(2 * t, 5).view(2, t, -1)
    cos, sin = rope_tables(CFG)
    with torch.no_grad():
        return module(x, cos[:t].double(), sin[:t].double())[0]


def _init_attn(attn="gqa1", t=3, parent=None):
    """The child attention initialised from the parent and its delta on t tokens."""
    variant = npz.BlockConfig.from_name(f"{attn}/ffn16").attention
    return _attn_delta(npz.init_attention(_attn_parent() if parent is None else parent, variant), t)


def _ffn_delta():
    x = _randn(6, 9).view(2, 3, -1)
    with torch.no_grad():
        return _FFN(x)


def _randn(n, seed, dtype=torch.float64, device=None):
    return torch.randn(n, CFG.d_model, dtype=dtype, device=device,
                       generator=torch.Generator().manual_seed(seed))  # fmt: skip


@torch.no_grad()
def _contribution_by_hand(x):
    """``mean_t |silu(g_t) u_t|_k * ||W_down[:, k]||``, one token and one channel at a time."""
    h = _FFN.norm(x)
    g, u, W = _FFN.gate_proj.weight, _FFN.up_proj.weight, _FFN.down_proj.weight
    out = torch.zeros(W.shape[1], dtype=torch.float64)
    for k in range(W.shape[1]):
        vals = [abs(torch.nn.functional.silu(g[k] @ h[t]) * (u[k] @ h[t])) for t in range(len(h))]
        out[k] = sum(vals) / len(h) * W[:, k].norm()
    return out


def _count_units(space=None, mode="decoupled"):
    if space is None:
        space = npz.SearchSpace.paper_default(npz.DecoderConfig())
    return npz.count_units(space, mode)


def _block_params(name):
    block = npz.BlockConfig.from_name(name)
    return sum(p.numel() for p in HeteroDecoder(CFG, [block, block]).blocks[0].parameters())


def _has_block_params(name, n):
    return n == _block_params(name)


def _variant_params(block=None, cfg=CFG):
    return npz.variant_num_params(cfg, npz.BlockConfig.from_name("gqa1/ffn16") if block is None
                                  else block)  # fmt: skip


def _unit_entries() -> list[dict]:
    blocks = ("gqa1/ffn16", "gqa1/linear", "linear/noop", "noop/ffn8", "noop/noop")
    return [
        {"name": "init_attention", "call": _init_attn, "kwargs": {},
         "grid": {"attn": ["linear", "noop"]},
         "known": [{"kwargs": {"attn": "gqa2"},
                    "check": lambda out: torch.allclose(out, _attn_delta(_attn_parent(), 3),
                                                        atol=1e-12),
                    "why": "the parent's own KV heads copy the parent"},
                   {"kwargs": {"attn": "linear", "t": 1},
                    "check": lambda out: torch.allclose(out, _attn_delta(_attn_parent(), 1),
                                                        atol=1e-12),
                    "why": "W_o W_v is exact attention when a token sees only itself (App. A)"},
                   {"kwargs": {"parent": object()}, "raises": ["parent"],
                    "why": "a parent that is not an AttentionSubblock"}]},
        {"name": "init_ffn", "call": _init_ffn, "kwargs": {"calib": _randn(7, 3)},
         "modules": lambda: [_FFN],
         "arrays": {"calib": {"kind": "float", "ndim": (1, 2, 3)}}, "rows": [["calib"]],
         "order": "invariant", "grid": {"ffn": ["linear"]},
         "known": [{"kwargs": {"calib": _randn(7, 3), "ffn": "ffn16"},
                    "check": lambda out: torch.allclose(out, _ffn_delta(), atol=1e-12),
                    "why": "the parent's own width copies the parent"},
                   {"kwargs": {"calib": _randn(7, 3), "ffn": "noop"},
                    "check": lambda out: out is None, "why": "a removed FFN adds nothing"},
                   {"kwargs": {"calib": _randn(7, 3), "parent": object()}, "raises": ["parent"],
                    "why": "a parent that is not an FFNSubblock"}]},
        {"name": "channel_contribution", "call": _contribution, "kwargs": {"x": _randn(7, 3)},
         "modules": lambda: [_FFN],
         "arrays": {"x": {"kind": "float", "ndim": (1, 2, 3)}}, "rows": [["x"]],
         "order": "invariant",
         "known": [{"kwargs": {"x": _randn(3, 4)},
                    "check": lambda s: torch.allclose(s, _contribution_by_hand(_randn(3, 4)),
                                                      atol=1e-12),
                    "why": "mean |X_k| x ||W_down[:, k]|| token by token, channel by channel"},
                   {"kwargs": {"x": _randn(3, 4, torch.float32)},
                    "check": lambda s: s.dtype == torch.float64 and s.shape == (16,),
                    "why": "float32 inputs are cast to the subblock's float64"},
                   {"kwargs": {"x": torch.zeros(3, 5, dtype=torch.float64)}, "raises": ["x"],
                    "check": None, "why": "a width other than d_model"}]},
        {"name": "count_units", "call": _count_units, "kwargs": {},
         "params": {"mode": {"type": "str", "bad": ["hybrid"]}}, "grid": {"mode": ["coupled"]},
         "known": [{"kwargs": {}, "check": lambda n: n == (6 - 2 + 9 - 2) * 6,
                    "why": "paper menu decoupled: (m - 2 + n - 2) L = 66 (spec A5)"},
                   {"kwargs": {"mode": "coupled"}, "check": lambda n: n == 6 * 9 * 6 - 2 * 6,
                    "why": "coupled: m n L - 2 L = 312"},
                   {"kwargs": {"mode": "init_only"}, "check": lambda n: n == 0,
                    "why": "init-only trains nothing"},
                   {"kwargs": {"space": CFG}, "raises": ["space"], "check": None,
                    "why": "a DecoderConfig is not a SearchSpace"}]},
        {"name": "variant_num_params", "call": _variant_params, "kwargs": {},
         "known": [{"kwargs": {"block": npz.BlockConfig.from_name(b)},
                    "check": functools.partial(_has_block_params, b),
                    "why": f"{b}: the parameters of the built DecoderBlock"} for b in blocks]
                  + [{"kwargs": {"block": "gqa1/ffn16"}, "raises": ["block"], "check": None,
                      "why": "a name, not a BlockConfig"},
                     {"kwargs": {"cfg": None}, "raises": ["cfg"], "check": None,
                      "why": "no DecoderConfig"}]},
    ]  # fmt: skip


def _two_batches(data, batch_size=4, seq_len=8, seed=0):
    it = npz.batch_iter(data, batch_size, seq_len, seed)  # arguments are checked here
    return torch.stack([next(it), next(it)])


def _are_windows_of(b, data):
    """Every row is ``data[s : s + seq_len + 1]`` for some start ``s``."""
    n = b.shape[-1]
    wins = data.unfold(0, n, 1)
    return all(bool((wins == row).all(1).any()) for row in b.reshape(-1, n))


_EVAL: dict = {}


def _eval_models():
    """The parent and a child, built once (outside the device contract's meta context)."""
    global _M
    _M = _M or _model()
    _EVAL.setdefault("child", _child())
    return [_M, _EVAL["child"]]


def _evaluate(val_data, seq_len=8, max_windows=64, batch_size=32, parent=None):
    model, child = _eval_models()
    return npz.evaluate(child, model if parent is None else parent, val_data, seq_len,
                        max_windows, batch_size)  # fmt: skip


def _data_entries(tokens) -> list[dict]:
    return [
        {"name": "evaluate", "call": _evaluate, "kwargs": {"val_data": tokens},
         "modules": _eval_models,
         "arrays": {"val_data": {"kind": "labels", "ndim": 1}}, "min_rows": 9,
         "params": {"batch_size": {"type": "int", "bad": [0, -1]},
                    "max_windows": {"type": "int", "bad": [0]},
                    "seq_len": {"type": "int", "bad": [0, 17]}},
         "known": [{"kwargs": {"val_data": tokens, "parent": _child()},
                    "check": lambda r: abs(r["kl_to_parent"]) < 1e-6 and r["acc_retained"] == 1
                    and r["lm_loss"] == r["parent_lm_loss"],
                    "why": "a child scored against itself: KL 0, all accuracy retained"},
                   {"kwargs": {"val_data": tokens, "batch_size": 1},
                    "check": lambda r: all(abs(r[k] - _evaluate(tokens)[k]) < 1e-5 for k in r),
                    "why": "the batch size does not change the token-weighted means"},
                   {"kwargs": {"val_data": tokens, "parent": torch.nn.Linear(2, 2)},
                    "raises": ["parent"], "check": None, "why": "not a HeteroDecoder"}]},
        {"name": "toy_corpus", "call": npz.toy_corpus, "kwargs": {"n_bytes": 400},
         "params": {"n_bytes": {"type": "int", "bad": [0, -5]},
                    "seed": {"type": "int", "bad": [-1]}},
         "known": [{"kwargs": {"n_bytes": 777}, "check": lambda t: len(t) == 777 and t.isascii(),
                    "why": "exactly n_bytes ASCII characters"},
                   {"kwargs": {"n_bytes": 400, "seed": 5},
                    "check": lambda t: t != npz.toy_corpus(400, seed=0),
                    "why": "the seed changes the text"},
                   {"kwargs": {"n_bytes": 400, "mix": (1.0, -1.0, 0.0)}, "raises": ["mix"],
                    "check": None, "why": "a negative mixture weight"}]},
        {"name": "batch_iter", "call": _two_batches, "kwargs": {"data": tokens},
         "arrays": {"data": {"kind": "labels", "ndim": 1}}, "min_rows": 9,
         "params": {"batch_size": {"type": "int", "bad": [0, -2]},
                    "seq_len": {"type": "int", "bad": [0]}, "seed": {"type": "int", "bad": []}},
         "known": [{"kwargs": {"data": tokens},
                    "check": lambda b: b.shape == (2, 4, 9) and _are_windows_of(b, tokens),
                    "why": "two batches of contiguous seq_len + 1 windows of data"},
                   {"kwargs": {"data": tokens, "seed": 1},
                    "check": lambda b: not torch.equal(b, _two_batches(tokens)),
                    "why": "another seed, other windows"},
                   {"kwargs": {"data": tokens[:8]}, "raises": ["seq_len"], "check": None,
                    "why": "8 tokens cannot hold one 9-token window"}]},
    ]  # fmt: skip


def _fields(cls, **kw):
    """A config built from keyword arguments, as the plain dict of its (normalised) fields."""
    cfg = cls(**kw)
    return {"name": cfg.name} if cls is npz.BlockConfig else dataclasses.asdict(cfg)


def _block(**kw):
    return _fields(npz.BlockConfig, **kw)


def _config_entries() -> list[dict]:
    dec = {"vocab_size": 32, "d_model": 16, "n_layers": 2, "n_heads": 2, "n_kv_heads": 1}
    ints = {k: {"type": "int", "bad": [0, -1], "good": v} for k, v in dec.items()}
    ints["n_kv_heads"]["bad"] = [0, 3]
    pos = {"type": "float", "bad": [0.0, -1.0, float("nan"), float("inf")]}
    return [
        {"name": "DecoderConfig", "call": functools.partial(_fields, npz.DecoderConfig),
         "kwargs": dec,
         "params": {**ints, "head_dim": {"type": "int", "bad": [0, 5], "good": 8},
                    "ffn_intermediate": {"type": "int", "bad": [0], "good": 32},
                    "max_seq_len": {"type": "int", "bad": [0], "good": 16},
                    "rope_theta": {**pos, "good": 500.0}, "norm_eps": {**pos, "good": 1e-6},
                    "tie_embeddings": {"bad": ["yes", 1]}},
         "known": [{"kwargs": dec, "check": lambda f: f["head_dim"] == 8,
                    "why": "head_dim defaults to d_model // n_heads"},
                   {"kwargs": {**dec, "n_heads": 3, "n_kv_heads": 3}, "raises": ["n_heads"],
                    "check": None, "why": "16 is not divisible by 3 heads and no head_dim"},
                   {"kwargs": {**dec, "n_heads": 3, "n_kv_heads": 3, "head_dim": 4},
                    "check": lambda f: f["head_dim"] == 4,
                    "why": "an explicit head_dim lifts the divisibility rule"}]},
        {"name": "AttentionConfig", "call": functools.partial(_fields, npz.AttentionConfig),
         "kwargs": {"kind": "gqa", "n_kv_heads": 2},
         "params": {"kind": {"bad": ["mha", "GQA"]},
                    "n_kv_heads": {"type": "int", "bad": [0, -2], "good": 2}},
         "known": [{"kwargs": {"kind": "gqa", "n_kv_heads": None}, "raises": ["n_kv_heads"], "check": None,
                    "why": "grouped-query attention needs its number of KV heads"},
                   {"kwargs": {"kind": "linear", "n_kv_heads": 2}, "raises": ["n_kv_heads"],
                    "check": None, "why": "a linear subblock has no KV heads"},
                   {"kwargs": {"kind": "gqa", "n_kv_heads": 4},
                    "check": lambda f: npz.AttentionConfig.from_name("gqa4")
                    == npz.AttentionConfig(**f),
                    "why": "the short name parses back to the same config"}]},
        {"name": "FFNConfig", "call": functools.partial(_fields, npz.FFNConfig),
         "kwargs": {"kind": "swiglu", "intermediate": 16},
         "params": {"kind": {"bad": ["gelu", "SwiGLU"]},
                    "intermediate": {"type": "int", "bad": [0, -16], "good": 16}},
         "known": [{"kwargs": {"kind": "swiglu", "intermediate": None}, "raises": ["intermediate"], "check": None,
                    "why": "a SwiGLU needs its width"},
                   {"kwargs": {"kind": "noop", "intermediate": 8}, "raises": ["intermediate"],
                    "check": None, "why": "a skipped FFN has no width"},
                   {"kwargs": {"kind": "swiglu", "intermediate": 24},
                    "check": lambda f: npz.FFNConfig.from_name("ffn24") == npz.FFNConfig(**f),
                    "why": "the short name parses back to the same config"}]},
        {"name": "BlockConfig", "call": _block,
         "kwargs": {"attention": npz.AttentionConfig("gqa", 2), "ffn": npz.FFNConfig("noop")},
         "params": {"attention": {"bad": ["gqa2", None]}, "ffn": {"bad": ["ffn16", None]}},
         "known": [{"kwargs": {"attention": npz.AttentionConfig("linear"),
                               "ffn": npz.FFNConfig("swiglu", 8)},
                    "check": lambda f: f["name"] == "linear/ffn8"
                    and npz.BlockConfig.from_name("linear/ffn8").name == "linear/ffn8",
                    "why": "name and from_name are inverse"}]},
    ]  # fmt: skip


def _scenario(**kw):
    sc = npz.Scenario(**kw)
    return {"batch_sizes": list(sc.batch_sizes), "seq_len": sc.seq_len,
            "tokens_per_sequence": sc.tokens_per_sequence, "bytes": sc.bytes_per_element}  # fmt: skip


def _roofline(**kw):
    """Analytic runtime of two blocks under the given roofline constants, shape (L, 2)."""
    blocks = [npz.BlockConfig.from_name("gqa1/ffn16"), npz.BlockConfig.from_name("linear/noop")]
    scen = npz.Scenario((1, 2), prefill_len=4, decode_len=4)
    table = npz.estimate(blocks, CFG, scen, roofline=npz.RooflineModel(**kw))
    return np.stack([table.runtime_s(1), table.runtime_s(2)])


def _constraints(**kw):
    c = npz.Constraints(**kw)
    return {k: v for k, v in dataclasses.asdict(c).items() if k != "extra"} | dict(c.extra)


def _budget_entries() -> list[dict]:
    pos = [0.0, -1.0, float("nan"), float("inf")]
    rl = {"peak_flops": 1e9, "mem_bandwidth": 1e8, "op_overhead_s": 1e-6}
    return [
        {"name": "Scenario", "call": _scenario,
         "kwargs": {"batch_sizes": (1, 4), "prefill_len": 6, "decode_len": 2},
         "params": {"batch_sizes": {"bad": [(), (1, 1), (0, 2), (1.5,), "14", (True,)]},
                    "prefill_len": {"type": "int", "bad": [0, 1.5], "good": 6},
                    "decode_len": {"type": "int", "bad": [-1, 2.0], "good": 2},
                    "dtype": {"bad": ["fp16", "int8"]},
                    "throughput_tokens": {"bad": ["all"]}},
         "known": [{"kwargs": {"batch_sizes": [np.int64(2), 8], "prefill_len": 6, "decode_len": 2,
                               "throughput_tokens": "generated", "dtype": "bfloat16"},
                    "check": lambda r: r == {"batch_sizes": [2, 8], "seq_len": 8,
                                             "tokens_per_sequence": 2, "bytes": 2},
                    "why": "numpy batch sizes kept as ints; only generated tokens counted"},
                   {"kwargs": {"batch_sizes": (1,), "prefill_len": 6, "decode_len": 0},
                    "check": lambda r: r["tokens_per_sequence"] == 6,
                    "why": "a prefill-only scenario counts its prompt tokens"}]},
        {"name": "RooflineModel", "call": _roofline, "kwargs": rl,
         "params": {"peak_flops": {"type": "float", "bad": pos},
                    "mem_bandwidth": {"type": "float", "bad": pos},
                    "op_overhead_s": {"type": "float", "bad": [-1e-6, float("nan"), float("inf")]}},
         "known": [{"kwargs": {"peak_flops": 2e9, "mem_bandwidth": 2e8, "op_overhead_s": 0.0},
                    "check": lambda r: np.allclose(
                        2 * r, _roofline(peak_flops=1e9, mem_bandwidth=1e8, op_overhead_s=0.0),
                        rtol=1e-12),
                    "why": "twice the compute and bandwidth halve every roofline time"},
                   {"kwargs": {**rl, "peak_flops": "1e9"}, "raises": ["peak_flops"],
                    "check": None, "why": "a string, not a number"}]},
        {"name": "Constraints", "call": _constraints,
         "kwargs": {"memory_max_bytes": 1e6, "latency_max_s": 0.5},
         "params": {"memory_max_bytes": {"type": "float", "bad": pos, "good": 1e6},
                    "throughput_min_tok_s": {"type": "float", "bad": pos, "good": 10.0},
                    "latency_max_s": {"type": "float", "bad": pos, "good": 0.5},
                    "extra": {"bad": [{"flops": (0, 1)}, {"num_params": (5, 1)},
                                      {"num_params": (True, None)}, {"kv_bytes": 3},
                                      [("num_params", (0, 1))]]}},
         "known": [{"kwargs": {"memory_max_bytes": None, "extra": {"num_params": (None, 1e5)}},
                    "check": lambda r: r["memory_max_bytes"] is None
                    and r["num_params"] == (None, 1e5),
                    "why": "None leaves a budget open; one-sided extra ranges are kept"}]},
    ]  # fmt: skip


def _space(attention, ffn):
    """Variant names of a SearchSpace over CFG (n_kv_heads 1, ffn_intermediate 32)."""
    return [v.name for v in npz.SearchSpace(CFG, attention, ffn).variants()]


def _paper_space(cfg=CFG, **kw):
    return [v.name for v in npz.SearchSpace.paper_default(cfg, **kw).variants()]


_GQA8 = DecoderConfig(vocab_size=32, d_model=64, n_heads=8, n_kv_heads=8, ffn_intermediate=256)


def _scores(kl, lm_loss=None, variants=("gqa1/ffn32", "gqa1/noop", "linear/ffn16")):
    values = {"kl": kl} if lm_loss is None else {"kl": kl, "lm_loss": lm_loss}
    table = npz.ScoreTable(variants, values)
    return {"kl": table["kl"], "n_layers": table.n_layers,
            "names": [v.name for v in table.variants]}  # fmt: skip


def _dict_untouched():
    kl = np.zeros((2, 1), np.float32)
    values = {"kl": kl}
    npz.ScoreTable(["gqa1/ffn32"], values)
    return values["kl"] is kl and kl.dtype == np.float32


def _space_entries() -> list[dict]:
    A, F = (npz.AttentionConfig("gqa", 1), npz.AttentionConfig("noop")), (
        npz.FFNConfig("swiglu", 32), npz.FFNConfig("swiglu", 8))  # fmt: skip
    kl = np.random.default_rng(4).random((2, 3))
    return [
        {"name": "SearchSpace", "call": _space, "kwargs": {"attention": A, "ffn": F},
         "params": {"attention": {"bad": [(), (npz.AttentionConfig("noop"),), ("gqa1",),
                                          (*A, npz.AttentionConfig("gqa", 2)), A + A[:1]]},
                    "ffn": {"bad": [(), (npz.FFNConfig("swiglu", 8),),
                                    (*F, npz.FFNConfig("swiglu", 64)), F + F[:1]]}},
         "known": [{"kwargs": {"attention": A, "ffn": F},
                    "check": lambda r: r == ["gqa1/ffn32", "gqa1/ffn8", "noop/ffn32", "noop/ffn8"],
                    "why": "variants are attention-major, A x F"}]},
        {"name": "SearchSpace.paper_default", "call": _paper_space, "kwargs": {},
         "params": {"round_to": {"type": "int", "bad": [0, -8, 8.0], "good": 8},
                    "attn_kv_heads": {"bad": [(1.5,), (0,), "1", (True,)]},
                    "ffn_ratios": {"bad": [(0.0,), (1.5,), (float("nan"),), "0.5"]},
                    "include_linear": {"bad": ["no", 0]}, "include_noop": {"bad": [None]}},
         "known": [{"kwargs": {"cfg": _GQA8}, "check": lambda r: len(r) == 54,
                    "why": "6 attention x 9 FFN variants for an 8-KV-head parent (paper §4)"},
                   {"kwargs": {}, "check": lambda r: len(r) == 18 and r[0] == "gqa1/ffn32",
                    "why": "ratios rounded to multiples of 8 and merged: 3 attention x 6 FFN"},
                   {"kwargs": {"cfg": "CFG"}, "raises": ["cfg"], "check": None,
                    "why": "not a DecoderConfig"}]},
        {"name": "ScoreTable", "call": _scores, "kwargs": {"kl": kl},
         "arrays": {"kl": {"kind": "float", "ndim": 2}}, "rows": [["kl"]],
         "order": "equivariant",
         "params": {"variants": {"bad": [(), "gqa1/ffn32", ("gqa1/ffn32", "gqa1/ffn32", "noop/noop"),
                                         ("gqa1/ffn32", 3, "noop/noop")]}},
         "known": [{"kwargs": {"kl": kl, "lm_loss": kl[:1]}, "raises": ["lm_loss"], "check": None,
                    "why": "metrics disagree on the number of layers"},
                   {"kwargs": {"kl": kl[:, :2]}, "raises": ["kl"], "check": None,
                    "why": "two columns for three variants"},
                   {"kwargs": {"kl": kl}, "check": lambda r: _dict_untouched(),
                    "why": "the caller's dict keeps its own array (the table holds a copy)"}]},
    ]  # fmt: skip


def _decode(tokens):
    return npz.ByteTokenizer().decode(tokens)


def _encode(text):
    return npz.ByteTokenizer().encode(text).numpy()


def _tokenizer_entries() -> list[dict]:
    ids = np.array(list("héllo".encode()))
    return [
        {"name": "ByteTokenizer.decode", "call": _decode, "kwargs": {"tokens": ids},
         "arrays": {"tokens": {"kind": "labels", "ndim": 1}},
         "known": [{"kwargs": {"tokens": np.array([300, 104])}, "raises": ["tokens"],
                    "check": None, "why": "300 is not a byte (it wrapped to ',')"},
                   {"kwargs": {"tokens": np.array([-1])}, "raises": ["tokens"], "check": None,
                    "why": "a negative id"},
                   {"kwargs": {"tokens": ids}, "check": lambda t: t == "héllo",
                    "why": "UTF-8 bytes decode to the text"}]},
        {"name": "ByteTokenizer.encode", "call": _encode, "kwargs": {"text": "héllo"},
         "known": [{"kwargs": {"text": "é"}, "check": lambda t: t.tolist() == [195, 169],
                    "why": "two UTF-8 bytes"},
                   {"kwargs": {"text": b"abc"}, "raises": ["text"], "check": None,
                    "why": "bytes, not str"}]},
    ]  # fmt: skip


_SCEN = npz.Scenario((1, 2), prefill_len=4, decode_len=4)
_VARS = [npz.BlockConfig.from_name(n) for n in ("gqa1/ffn32", "gqa1/noop", "linear/ffn16")]


def _estimate(variants=_VARS, cfg=CFG, scenario=_SCEN, **kw):
    return npz.estimate(variants, cfg, scenario, **kw)


def _table(**kw):
    """A CostTable built by hand over three variants, two layers and two batch sizes."""
    base = dataclasses.asdict(_estimate())
    base.pop("variants"), base.pop("scenario")
    fields = {**base, **kw}
    t = npz.CostTable(_VARS, _SCEN, **fields)
    return {"runtime_s": t.runtime_s(2), "memory_bytes": t.memory_bytes(2),
            "totals": t.model_totals([0, 1], 1)}  # fmt: skip


def _table_keeps_caller_array():
    pb = np.ones((2, 3), np.float32)
    t = npz.CostTable(_VARS, _SCEN, pb, pb, pb, np.ones((2, 2, 3)), np.ones((2, 2, 3)))
    t.param_bytes[0, 0] = 5.0
    return pb[0, 0] == 1.0 and t.param_bytes.dtype == np.float64


def _validate(n_children=2, repeats=1, **kw):
    costs = _estimate(variants=[CFG.parent_block, *_VARS[1:]])
    r = npz.validate_costs(costs, CFG, n_children=n_children, repeats=repeats, **kw)
    return {k: r[k] for k in ("predicted_s", "names", "parent_predicted_s", "kv_monotone")}


def _round_robin(n=2, **kw):
    calls = []

    def fn(i):
        def run():
            calls.append(i)
            return (0.5 + i, 1.0)

        return run

    r = npz.time_round_robin([fn(i) for i in range(n)], **kw)
    return {"min": r["min"], "rounds": r["rounds"], "calls": calls}


def _cost_entries() -> list[dict]:
    nonneg = [-1.0]
    return [
        {"name": "estimate", "call": _estimate, "kwargs": {},
         "params": {"backend": {"type": "str", "bad": ["roofline", 3]},
                    "repeats": {"type": "int", "bad": [0, "5", 2.5], "good": 5},
                    "threads": {"type": "int", "bad": [0, "2"], "good": 1},
                    "roofline": {"bad": ["fast", {"peak_flops": 1e9}]},
                    "variants": {"bad": [[], "gqa1/ffn32", _VARS[0], [_VARS[0], _VARS[0]],
                                         ["gqa1/ffn32"]]}},
         "known": [{"kwargs": {"variants": npz.SearchSpace.paper_default(CFG)},
                    "check": lambda t: len(t.variants) == 18 and t.prefill_s.shape == (2, 2, 18),
                    "why": "a SearchSpace means its variants; (batch sizes, L, K) runtimes"},
                   {"kwargs": {}, "check": lambda t: t.kv_bytes[0, 0] == 2 * 1 * 8 * 8 * 4
                    and t.kv_bytes[0, 2] == 0,
                    "why": "KV bytes 2 n_kv head_dim s bytes per sequence; linear attention none"},
                   {"kwargs": {"scenario": npz.Scenario((1,), prefill_len=16, decode_len=4)},
                    "raises": ["scenario"], "check": None, "why": "20 tokens > max_seq_len 16"},
                   {"kwargs": {"cfg": dataclasses.asdict(CFG)}, "raises": ["cfg"], "check": None,
                    "why": "a dict, not a DecoderConfig"}]},
        {"name": "CostTable", "call": _table, "kwargs": {},
         "params": {"param_bytes": {"bad": [np.ones((2, 2)), -np.ones((2, 3)),
                                            np.full((2, 3), np.nan), "big"]},
                    "prefill_s": {"bad": [np.ones((2, 3)), np.ones((3, 2, 3)),
                                          np.full((2, 2, 3), np.inf)]},
                    "decode_s": {"bad": [np.ones((2, 1, 3)), -np.ones((2, 2, 3))]},
                    "kv_bytes": {"bad": [np.ones((1, 3))]},
                    "num_params": {"bad": [np.ones(3)]},
                    "non_block": {"bad": [{"flops": 1.0}, {"prefill_s": [1.0]}, [1.0],
                                          {"param_bytes": nonneg[0]}]},
                    "backend": {"bad": [None]}},
         "known": [{"kwargs": {"prefill_s": np.zeros((2, 2, 3)), "decode_s": np.ones((2, 2, 3)),
                               "non_block": {"param_bytes": 0.0, "num_params": 0.0,
                                             "prefill_s": [0.0, 0.0], "decode_s": [0.0, 0.0]}},
                    "check": lambda r: np.all(r["runtime_s"] == 1.0)
                    and r["totals"]["runtime_s"] == 2.0,
                    "why": "prefill + decode per layer; two layers of 1 s and no non-block time"},
                   {"kwargs": {}, "check": lambda r: _table_keeps_caller_array(),
                    "why": "the table holds float64 copies, never the caller's arrays"}]},
        {"name": "validate_costs", "call": _validate, "kwargs": {},
         "params": {"n_children": {"type": "int", "bad": [1, 0, 2.0]},
                    "repeats": {"type": "int", "bad": [0]},
                    "max_repeats": {"type": "int", "bad": [0], "good": 200},
                    "threads": {"type": "int", "bad": [0, "1"], "good": 1},
                    "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                    "batch_size": {"type": "int", "bad": [3, 0], "good": 1},
                    "rel_ci": {"type": "float", "bad": [0.0, 1.0, float("nan")], "good": 0.5}},
         "known": [{"kwargs": {"n_children": 3},
                    "check": lambda r: len(r["names"]) == 3 and r["kv_monotone"]
                    and all(len(n) == CFG.n_layers for n in r["names"]),
                    "why": "three random children of two layers; fewer KV heads never cost more"},
                   {"kwargs": {"seed": 1},
                    "check": lambda r: r["names"] != _validate()["names"],
                    "why": "the seed draws other children"}]},
        {"name": "time_round_robin", "call": _round_robin, "kwargs": {},
         "params": {"repeats": {"type": "int", "bad": [0, 1.5], "good": 5},
                    "max_repeats": {"type": "int", "bad": [0], "good": 200},
                    "rel_ci": {"type": "float", "bad": [0.0, 1.5, float("nan")], "good": 0.5}},
         "known": [{"kwargs": {"n": 3, "repeats": 2},
                    "check": lambda r: r["calls"] == [0, 1, 2] * 3 and r["rounds"] == 2
                    and np.array_equal(r["min"], [[0.5, 1.0], [1.5, 1.0], [2.5, 1.0]]),
                    "why": "one warm-up round, then one call of every closure per round"},
                   {"kwargs": {"n": 2, "rel_ci": 0.1},
                    "check": lambda r: r["rounds"] == 5,
                    "why": "constant times converge once the minimum of repeats=5 rounds is run"},
                   {"kwargs": {"n": 0}, "raises": ["fns"], "check": None,
                    "why": "nothing to time"}]},
    ]  # fmt: skip


def _activations(tokens, parent=None):
    global _M
    _M = _M or _model()
    ins, mids = npz.parent_activations(_M if parent is None else parent, tokens)
    return {"inputs": torch.stack(ins, 1), "mids": torch.stack(mids, 1)}  # (B, L + 1 | L, T, d)


def _ends_in_logits(r, tokens):
    with torch.no_grad():
        want = _M(tokens)[0]
        return torch.allclose(_M.logits(r["inputs"][:, -1]), want, atol=1e-6) and torch.equal(
            r["inputs"][:, 0], _M.embed(tokens)
        )


_BLD_SPACE = npz.SearchSpace(CFG, (npz.AttentionConfig("gqa", 1), npz.AttentionConfig("noop")),
                             (npz.FFNConfig("swiglu", 32), npz.FFNConfig("swiglu", 8)))  # fmt: skip


_M64: list = []


def _parent64():
    """A float64 parent: two AdamW steps amplify float32 rounding past the shadow check's 1e-5."""
    if not _M64:
        _M64.append(_model().double())
    return _M64[0]


def _bld(
    data,
    steps=2,
    batch_size=2,
    calib_windows=2,
    seq_len=8,
    mode="decoupled",
    loss="normalized_mse",
    reduction="batch",
    target="block",
    select="trained",
    **kw,
):
    lib = npz.build_library(_parent64(), _BLD_SPACE, data, mode, steps, batch_size=batch_size,
                            calib_windows=calib_windows, seq_len=seq_len, loss=loss,
                            reduction=reduction, target=target, select=select, **kw)  # fmt: skip
    return {"entries": lib.entries, "log": lib.training_log, "mode": lib.mode}


def _init_entries_equal_init(r):
    """With steps=0 every entry is its training-free initialisation: gqa1 copies the parent."""
    return all(torch.equal(r["entries"][f"{i}|attention|gqa1"][k], v)
               for i, b in enumerate(_parent64().blocks) for k, v in b.attn.state_dict().items())  # fmt: skip


def _lib_fields(**kw):
    base = _bld(torch.arange(40) % CFG.vocab_size, steps=0)
    lib = npz.BlockLibrary(**{"cfg": CFG, "space": _BLD_SPACE, "entries": base["entries"]} | kw)
    return {"entries": lib.entries, "mode": lib.mode}


def _drop_key(r):
    return {k: v for k, v in r.items() if k != "0|ffn|ffn8"}


def _write_library(folder):
    lib = npz.BlockLibrary(CFG, _BLD_SPACE, _lib_fields()["entries"], [{"layer": 0}], "init_only")
    lib.save(folder / "library.pt")
    return folder / "library.pt"


def _check_library(lib):
    want = _lib_fields()["entries"]
    assert lib.mode == "init_only" and lib.training_log == [{"layer": 0}]
    assert set(lib.entries) == set(want)
    assert all(torch.equal(lib.entries[k][n], t) for k in want for n, t in want[k].items())
    blk = lib.block(1, "gqa1/ffn8")
    w = want["1|ffn|ffn8"]["down_proj.weight"]
    assert torch.equal(blk.ffn.state_dict()["down_proj.weight"], w)


def _export_library(lib, folder):
    folder.mkdir(parents=True, exist_ok=True)
    lib.save(folder / "again.pt")
    return folder / "again.pt"


def _same_library(a, b):
    return (
        a.mode == b.mode
        and a.training_log == b.training_log
        and set(a.entries) == set(b.entries)
        and all(torch.equal(a.entries[k][n], t) for k in a.entries for n, t in a.entries[k].items())
    )


def _index_edit(edit):
    def mutate(path):
        idx = path.with_suffix(path.suffix + ".json")
        import json

        idx.write_text(json.dumps(edit(json.loads(idx.read_text()))))

    return mutate


def _reshape_entry(path):
    e = torch.load(path, weights_only=True)
    e["0|ffn|ffn8"] = {k: v[:1] for k, v in e["0|ffn|ffn8"].items()}
    torch.save(e, path)


def _library_entries() -> list[dict]:
    toks = torch.randint(0, CFG.vocab_size, (3, 6), generator=torch.Generator().manual_seed(2))
    data = torch.arange(60) * 7 % CFG.vocab_size
    return [
        {"name": "parent_activations", "call": _activations, "kwargs": {"tokens": toks},
         "modules": lambda: [_eval_models()[0]],
         "arrays": {"tokens": {"kind": "labels", "ndim": 2}}, "rows": [["tokens"]],
         "order": "equivariant",
         "known": [{"kwargs": {"tokens": toks},
                    "check": lambda r: r["inputs"].shape == (3, 3, 6, 16)
                    and r["mids"].shape == (3, 2, 6, 16) and _ends_in_logits(r, toks),
                    "why": "L + 1 layer inputs from the embedding to the state the LM head reads"},
                   {"kwargs": {"tokens": toks + CFG.vocab_size}, "raises": ["tokens"],
                    "check": None, "why": "ids outside the vocabulary"},
                   {"kwargs": {"tokens": toks, "parent": torch.nn.Linear(2, 2)},
                    "raises": ["parent"], "check": None, "why": "not a HeteroDecoder"}]},
        {"name": "build_library", "call": _bld, "kwargs": {"data": data},
         "modules": lambda: [_parent64()],
         "arrays": {"data": {"kind": "labels", "ndim": 1}}, "min_rows": 9,
         "params": {"steps": {"type": "int", "bad": [-1, 1.5]},
                    "lr": {"type": "float", "bad": [0.0, -1e-3, float("nan"), "1e-3"], "good": 1e-3},
                    "batch_size": {"type": "int", "bad": [0, 1.5, "2"]},
                    "calib_windows": {"type": "int", "bad": [0, 2.0]},
                    "seq_len": {"type": "int", "bad": [0, 17, 4.5]},
                    "seed": {"type": "int", "bad": [-1, 0.5], "good": 0},
                    "mode": {"type": "str", "bad": ["joint", None]},
                    "loss": {"type": "str", "bad": ["l1"]},
                    "reduction": {"type": "str", "bad": ["sum"]},
                    "target": {"type": "str", "bad": ["residual"]},
                    "select": {"type": "str", "bad": ["best"]},
                    "verbose": {"bad": ["yes"]}, "distributed": {"bad": ["no", True]}},
         "grid": {"mode": ["coupled", "init_only"], "target": ["delta"], "loss": ["mse"],
                  "reduction": ["per_token"], "select": ["best_of_init"]},
         "known": [{"kwargs": {"data": data, "steps": 0},
                    "check": lambda r: _init_entries_equal_init(r) and len(r["entries"]) == 8,
                    "why": "2 layers x (2 attention + 2 FFN) entries; gqa1 copies the parent"},
                   {"kwargs": {"data": data, "mode": "coupled"},
                    "check": lambda r: sum("|block|" in k for k in r["entries"]) == 2 * 3
                    and len(r["log"]) == 6,
                    "why": "coupled BLD trains the 2 x 2 - 1 non-parent blocks of each layer"},
                   {"kwargs": {"data": data + CFG.vocab_size}, "raises": ["data"],
                    "check": None, "why": "token ids outside the vocabulary"},
                   {"kwargs": {"data": "text"}, "raises": ["data"], "check": None,
                    "why": "bytes of text exceed this 32-token vocabulary"}]},
        {"name": "BlockLibrary", "call": _lib_fields, "kwargs": {},
         "params": {"mode": {"bad": ["joint", 3]}, "training_log": {"bad": [{}, None]},
                    "cfg": {"bad": [dataclasses.asdict(CFG)]},
                    "space": {"bad": [npz.SearchSpace.paper_default(_GQA8), "space"]}},
         "known": [{"kwargs": {"entries": {}}, "raises": ["entries"], "check": None,
                    "why": "no subblocks: every layer's menu must be present"},
                   {"kwargs": {"entries": _drop_key(_lib_fields()["entries"])},
                    "raises": ["entries"], "check": None, "why": "layer 0's ffn8 is missing"},
                   {"kwargs": {"entries": _lib_fields()["entries"]
                               | {"5|ffn|ffn8": _lib_fields()["entries"]["0|ffn|ffn8"]}},
                    "raises": ["entries"], "check": None, "why": "a layer the parent lacks"},
                   {"kwargs": {"entries": _lib_fields()["entries"]
                               | {"0|ffn|ffn8": _lib_fields()["entries"]["0|ffn|ffn32"]}},
                    "raises": ["entries"], "check": None,
                    "why": "ffn32 weights stored under ffn8 (shapes differ)"}]},
        {"name": "BlockLibrary.load", "kind": "loader", "write": _write_library,
         "read": npz.BlockLibrary.load, "check": _check_library, "export": _export_library,
         "same": _same_library,
         "corrupt": ["truncate", "empty",
                     ("no-index", lambda p: p.with_suffix(".pt.json").unlink()),
                     ("index-extra-key", _index_edit(lambda d: d | {"steps": 3})),
                     ("index-bad-cfg", _index_edit(lambda d: d | {"cfg": {"d_model": 16}})),
                     ("index-unknown-variant", _index_edit(lambda d: d | {"ffn": ["ffn7"]})),
                     ("entry-shape", _reshape_entry)]},
    ]  # fmt: skip


_LIB: list = []


def _lib64():
    """An init-only library (training-free initialisations) of the float64 parent, built once."""
    if not _LIB:
        data = torch.arange(60) * 7 % CFG.vocab_size
        _LIB.append(npz.build_library(_parent64(), _BLD_SPACE, data, "init_only", 0,
                                      batch_size=2, calib_windows=2, seq_len=8))  # fmt: skip
    return _LIB[0]


def _realize(tokens, choice=("gqa1/ffn8", "noop/ffn32"), parent=None, lib=None):
    child = npz.realize(_parent64() if parent is None else parent,
                        _lib64() if lib is None else lib, choice)  # fmt: skip
    with torch.no_grad():
        return child(tokens)[0]


def _parent_logits(tokens):
    with torch.no_grad():
        return _parent64()(tokens)[0]


def _rob(val_data, metrics=("kl", "lm_loss"), variants=None, seq_len=8, max_windows=4, **kw):
    t = npz.replace_one_block(_parent64(), _lib64(), val_data, metrics, variants, seq_len,
                              max_windows, **kw)  # fmt: skip
    return {"values": {m: t[m] for m in t.values}, "names": [v.name for v in t.variants]}


def _parent_row_is_zero(r):
    j = r["names"].index(CFG.parent_block.name)
    return np.allclose(r["values"]["kl"][:, j], 0.0, atol=1e-12)


def _mode_kept():
    p = _parent64().train()
    _rob(torch.arange(40) % CFG.vocab_size)
    kept = p.training
    p.eval()
    return kept


def _assembly_entries() -> list[dict]:
    toks = torch.randint(0, CFG.vocab_size, (2, 6), generator=torch.Generator().manual_seed(3))
    val = torch.arange(80) * 5 % CFG.vocab_size
    parent = (CFG.parent_block.name,) * CFG.n_layers
    return [
        {"name": "realize", "call": _realize, "kwargs": {"tokens": toks},
         "modules": lambda: [_parent64()],
         "arrays": {"tokens": {"kind": "labels", "ndim": 2}}, "rows": [["tokens"]],
         "order": "equivariant",
         "params": {"choice": {"bad": ["gqa1/ffn8", ("gqa1/ffn8",), ("gqa1/ffn8", 3),
                                       ("gqa1/ffn8", "gqa1/ffn16"), ("gqa1/ffn8", "gqa/x")]}},
         "known": [{"kwargs": {"tokens": toks, "choice": parent},
                    "check": lambda y: torch.allclose(y, _parent_logits(toks), atol=1e-12),
                    "why": "the parent's own blocks, copied from an init-only library, are the parent"},
                   {"kwargs": {"tokens": toks, "choice": [npz.BlockConfig.from_name(n)
                                                          for n in parent]},
                    "check": lambda y: y.dtype == torch.float64,
                    "why": "BlockConfigs work as names do; the float64 library stays float64"},
                   {"kwargs": {"tokens": toks, "lib": "library"}, "raises": ["lib"],
                    "check": None, "why": "not a BlockLibrary"}]},
        {"name": "replace_one_block", "call": _rob, "kwargs": {"val_data": val},
         "modules": lambda: [_parent64()],
         "arrays": {"val_data": {"kind": "labels", "ndim": 1}}, "min_rows": 9,
         "params": {"metrics": {"bad": ["kl", (), ("kl", "kl"), ("mmlu",)]},
                    "variants": {"bad": ["gqa1/ffn8", ("gqa1/ffn16",), (), ("noop/ffn8", 3),
                                         ("noop/ffn8", "noop/ffn8")]},
                    "seq_len": {"type": "int", "bad": [0, 17, 4.5]},
                    "max_windows": {"type": "int", "bad": [0, -1], "good": 4},
                    "verbose": {"bad": ["yes", None]}},
         "known": [{"kwargs": {"val_data": val},
                    "check": lambda r: r["values"]["kl"].shape == (2, 4)
                    and _parent_row_is_zero(r) and np.all(r["values"]["kl"] >= -1e-12),
                    "why": "KL >= 0, and 0 where the parent block replaces itself"},
                   {"kwargs": {"val_data": val, "variants": ("noop/ffn8", "gqa1/ffn32")},
                    "check": lambda r: r["names"] == ["noop/ffn8", "gqa1/ffn32"]
                    and np.allclose(r["values"]["kl"][:, 1], 0.0, atol=1e-12),
                    "why": "columns in the order asked for"},
                   {"kwargs": {"val_data": val + CFG.vocab_size}, "raises": ["val_data"],
                    "check": None, "why": "token ids outside the vocabulary"},
                   {"kwargs": {"val_data": val}, "check": lambda r: _mode_kept(),
                    "why": "a parent in train mode is left in train mode"}]},
    ]  # fmt: skip


def _decode_with(layers, length):
    """One decode step on a hand-built KVCache after a 5-token prefill of the child."""
    child = _eval_models()[1]
    with torch.no_grad():
        token = _PROMPT[1].to(child.embed.weight.device)
        return child.decode_step(token, npz.KVCache(layers, length))[0]


_PROMPT = (torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]]), torch.tensor([2, 7]))


def _prefill_cache():
    with torch.no_grad():
        return _eval_models()[1].prefill(_PROMPT[0])[1]


def _full_last(logits):
    with torch.no_grad():
        want = _eval_models()[1](torch.cat([_PROMPT[0], _PROMPT[1][:, None]], 1))[0][:, -1]
    return torch.allclose(logits, want, atol=1e-5)


def _throughput(batch_size=2, prefill_len=4, decode_len=3, repeats=1, threads=None, seed=0,
                model=None):  # fmt: skip
    m = _eval_models()[1] if model is None else model
    r = npz.measure_throughput(m, batch_size, prefill_len, decode_len, repeats, threads, seed)
    return {k: r[k] for k in ("kv_cache_bytes", "param_bytes")} | {"ok": r["tokens_per_s"] > 0}


def _sweep(batch_sizes=None, objective="kl"):
    scores, costs, cons = _mip_tables()
    sol = npz.sweep_batch_sizes(scores, costs, cons, batch_sizes, objective=objective)
    return {"indices": sol.indices, "batch_size": sol.batch_size, "objective": sol.objective}


def _each_alone_no_better(r):
    scores, costs, cons = _mip_tables()
    for b in costs.scenario.batch_sizes:
        try:
            sol = npz.solve(scores, costs, cons, batch_size=b)
        except npz.InfeasibleError:
            continue
        if sol.objective < r["objective"] - 1e-12:
            return False
    return True


def _train(data, steps=2, lr=3e-3, batch_size=2, seq_len=8, weight_decay=0.01, seed=0, **kw):
    m = npz.train_parent(CFG, data, steps, lr, batch_size, seq_len, weight_decay, seed, **kw)
    return {k: v for k, v in m.state_dict().items() if k.startswith(("embed", "norm"))}


def _uptrain(data, steps=2, lr=3e-4, batch_size=2, seq_len=8, w_cos=1.0, w_kl=1.0, w_lm=0.0,
             seed=0, **kw):  # fmt: skip
    parent = _parent64()
    child = npz.realize(parent, _lib64(), ("gqa1/ffn8", "noop/ffn32"))
    out = npz.uptrain(child, parent, data, steps, lr, batch_size, seq_len, w_cos, w_kl, w_lm,
                      seed, **kw)  # fmt: skip
    return {k: v for k, v in out.state_dict().items() if "ffn" in k}


def _uptrain_keeps_parent_mode():
    p = _parent64().train()
    _uptrain(torch.arange(40) % CFG.vocab_size, steps=1)
    kept = p.training
    p.eval()
    return kept


def _run_entries() -> list[dict]:
    data = torch.arange(60) * 7 % CFG.vocab_size
    ints = {"type": "int", "bad": [0, 1.5, "2"]}
    return [
        {"name": "KVCache", "call": _decode_with, "modules": lambda: [_eval_models()[1]],
         "kwargs": {"layers": _prefill_cache().layers, "length": 5},
         "params": {"length": {"type": "int", "bad": [3, -1, 5.0]},
                    "layers": {"bad": ["kv", [None, None], [_prefill_cache().layers[0]],
                                       [(_prefill_cache().layers[0][0],), None]]}},
         "known": [{"kwargs": {"layers": _prefill_cache().layers, "length": 5},
                    "check": _full_last,
                    "why": "a cached step equals the uncached forward's last position"},
                   {"kwargs": {"layers": [tuple(t[:1] for t in _prefill_cache().layers[0]), None],
                               "length": 5}, "raises": ["kv_cache"], "check": None,
                    "why": "a cache of batch 1 for a batch of 2"}]},
        {"name": "measure_throughput", "call": _throughput, "kwargs": {},
         "modules": lambda: [_eval_models()[1]],
         "params": {"batch_size": {**ints, "good": 2}, "prefill_len": {**ints, "good": 4},
                    "decode_len": {"type": "int", "bad": [-1, 1.5, 13], "good": 3},
                    "repeats": {**ints, "good": 1}, "threads": {**ints, "good": 1},
                    "seed": {"type": "int", "bad": [-1], "good": 0}},
         "known": [{"kwargs": {"batch_size": 2, "prefill_len": 4, "decode_len": 3},
                    "check": lambda r: r["kv_cache_bytes"] == 2 * 2 * 1 * 7 * 8 * 4 and r["ok"],
                    "why": "K and V of the one GQA layer: 2 x batch 2 x 1 head x 7 positions x 8"},
                   {"kwargs": {"model": torch.nn.Linear(2, 2)}, "raises": ["model"],
                    "check": None, "why": "not a HeteroDecoder"}]},
        {"name": "sweep_batch_sizes", "call": _sweep, "kwargs": {},
         "grid": {"objective": ["lm_loss", "top1_acc"]},
         "params": {"batch_sizes": {"bad": [(), (3,), "18", 8, (0,), (8.5,)]}},
         "known": [{"kwargs": {}, "check": _each_alone_no_better,
                    "why": "the sweep keeps the best of the per-batch-size optima"},
                   {"kwargs": {"batch_sizes": [np.int64(8)]},
                    "check": lambda r: r["batch_size"] == 8,
                    "why": "one batch size, given as a numpy int"}]},
        {"name": "train_parent", "call": _train, "kwargs": {"data": data},
         "arrays": {"data": {"kind": "labels", "ndim": 1}}, "min_rows": 9,
         "params": {"steps": {"type": "int", "bad": [-1, 1.5]},
                    "lr": {"type": "float", "bad": [0.0, float("nan"), "3e-3"]},
                    "batch_size": {"type": "int", "bad": [0, "2"]},
                    "seq_len": {"type": "int", "bad": [0, 17, 4.5]},
                    "weight_decay": {"type": "float", "bad": [-0.1, float("inf")]},
                    "seed": {"type": "int", "bad": [-1]}, "verbose": {"bad": ["yes"]}},
         "known": [{"kwargs": {"data": data, "steps": 0},
                    "check": lambda r: torch.equal(r["embed.weight"],
                                                   _model().embed.weight.detach()),
                    "why": "no steps: the seed-0 initialisation"},
                   {"kwargs": {"data": data + CFG.vocab_size}, "raises": ["data"], "check": None,
                    "why": "ids outside the vocabulary (an IndexError in the embedding before)"}]},
        {"name": "uptrain", "call": _uptrain, "kwargs": {"data": data},
         "modules": lambda: [_parent64()],
         "arrays": {"data": {"kind": "labels", "ndim": 1}}, "min_rows": 9,
         "params": {"steps": {"type": "int", "bad": [-1]},
                    "lr": {"type": "float", "bad": [0.0, "3e-4"]},
                    "batch_size": {"type": "int", "bad": [0, 2.5]},
                    "seq_len": {"type": "int", "bad": [0, 17]},
                    "w_cos": {"type": "float", "bad": [-1.0, float("nan")]},
                    "w_kl": {"type": "float", "bad": [float("inf")]},
                    "w_lm": {"type": "float", "bad": [-0.5]},
                    "seed": {"type": "int", "bad": [-1]}, "verbose": {"bad": [1]}},
         "known": [{"kwargs": {"data": data, "w_cos": 0.0, "w_kl": 0.0}, "raises": ["w_cos"],
                    "check": None, "why": "every loss weight 0"},
                   {"kwargs": {"data": data, "steps": 0},
                    "check": lambda r: all(torch.equal(v, npz.realize(
                        _parent64(), _lib64(), ("gqa1/ffn8", "noop/ffn32")).state_dict()[k])
                        for k, v in r.items()),
                    "why": "no steps: the child as assembled"},
                   {"kwargs": {"data": data}, "check": lambda r: _uptrain_keeps_parent_mode(),
                    "why": "a parent in train mode stays in train mode"}]},
    ]  # fmt: skip
