"""The pareto-merge CLI: mergekit-style YAML in, a loadable Hugging Face directory out."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import pareto_merge as pm
from pareto_merge.cli import main, merge_from_config

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")


def _llama(seed, base=None):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
                                   num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=1, max_position_embeddings=32)  # fmt: skip
    model = transformers.LlamaForCausalLM(cfg).eval()
    if base is not None:  # a "fine-tuned" model: the base plus a task-specific shift
        with torch.no_grad():
            for p, q in zip(model.parameters(), base.parameters(), strict=True):
                p.copy_(q + 0.05 * torch.randn_like(q))
    return model


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    base = _llama(0)
    vocab = {f"w{i}": i for i in range(32)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="w0"))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w0")
    for name, model in (("base", base), ("a", _llama(1, base)), ("b", _llama(2, base))):
        model.save_pretrained(root / name, max_shard_size="20KB")  # 2+ shards each
        assert (root / name / "model.safetensors.index.json").is_file()
    fast.save_pretrained(root / "base")
    return root


def _write(root, config, name="merge.yml"):
    import yaml

    path = root / name
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _params(model):
    return {k: v.detach() for k, v in model.state_dict().items()}


def test_task_arithmetic_round_trip(checkpoints, tmp_path):
    cfg = {"merge_method": "task_arithmetic", "base_model": "base",
           "models": [{"model": "a", "parameters": {"weight": 0.4}},
                      {"model": "b", "parameters": {"weight": 0.3}}]}  # fmt: skip
    out = tmp_path / "merged"
    assert main([_write(checkpoints, cfg), str(out), "--max-shard-size", "10KB"]) == 0
    merged = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    base, a, b = (pm.load_state_dict(checkpoints / n) for n in ("base", "a", "b"))
    for k, v in _params(merged).items():
        if k in base:
            want = base[k] + 0.4 * (a[k] - base[k]) + 0.3 * (b[k] - base[k])
            torch.testing.assert_close(v, want, rtol=1e-6, atol=1e-6)
    # tokenizer, config and the merge recipe travel with the weights
    assert transformers.AutoTokenizer.from_pretrained(out).vocab_size == 32
    assert json.loads((out / "config.json").read_text())["vocab_size"] == 32
    assert (out / "pareto_merge_config.yml").is_file()
    assert len([f for f in os.listdir(out) if f.endswith(".safetensors")]) >= 2
    ids = torch.tensor([[1, 5, 7, 2]])
    ref = _llama(0)
    ref.load_state_dict(_params(merged))
    torch.testing.assert_close(merged(ids).logits, ref(ids).logits)


def test_lazy_state_dict_reads_what_load_state_dict_reads(checkpoints, tmp_path):
    for name in ("base", "a"):
        lazy, eager = pm.LazyStateDict(checkpoints / name), pm.load_state_dict(checkpoints / name)
        assert list(lazy) == list(eager) and len(lazy) == len(eager)
        assert all(torch.equal(lazy[k], eager[k]) for k in eager)
    pm.save_state_dict(eager, tmp_path / "one.safetensors")
    one = pm.LazyStateDict(tmp_path / "one.safetensors")
    assert list(one) == list(eager)  # the saved key order, not safetensors' sorted one
    with pytest.raises(KeyError):
        one["nope"]
    with pytest.raises(ValueError, match="no safetensors"):
        pm.LazyStateDict(tmp_path / "missing")


def test_per_tensor_merges_equal_whole_model_merges(checkpoints):
    base, a, b = (pm.load_state_dict(checkpoints / n) for n in ("base", "a", "b"))
    cases = [
        ({"merge_method": "task_arithmetic"}, pm.task_arithmetic(base, [a, b], scale=0.3)),
        ({"merge_method": "ties", "parameters": {"density": 0.3, "scale": 0.7}},
         pm.ties_merge(base, [a, b], density=0.3, scale=0.7, scope="tensor")),
        ({"merge_method": "ties", "parameters": {"density": 0.3, "scope": "model"}},
         pm.ties_merge(base, [a, b], density=0.3, scope="model")),
        ({"merge_method": "task_arithmetic",
          "models": [{"model": "a", "parameters": {"weight": 0.2}},
                     {"model": "b", "parameters": {"weight": 0.5}}]},
         pm.weighted_task_arithmetic(base, [a, b], [0.2 / 0.7, 0.5 / 0.7], scale=0.35)),
    ]  # fmt: skip
    for patch, want in cases:
        cfg = {"base_model": "base", "models": [{"model": "a"}, {"model": "b"}], **patch}
        got = merge_from_config(cfg, checkpoints)
        assert list(got) == list(want)
        for k in want:  # mergekit's order of operations: equal to float32 rounding
            torch.testing.assert_close(got[k], want[k], rtol=1e-6, atol=1e-7)


def test_linear_ties_and_dtype(checkpoints):
    lin = merge_from_config({"merge_method": "linear", "base_model": "base",
                             "models": [{"model": "a"}, {"model": "b"}]}, checkpoints)  # fmt: skip
    a, b = (pm.load_state_dict(checkpoints / n) for n in ("a", "b"))
    k = next(iter(a))
    torch.testing.assert_close(lin[k], (a[k] + b[k]) / 2)
    cfg = {"merge_method": "ties", "base_model": "base", "out_dtype": "bfloat16",
           "parameters": {"density": 0.5, "scale": 1.0},
           "models": [{"model": "a"}, {"model": "b"}]}  # fmt: skip
    ties = merge_from_config(cfg, checkpoints)  # computed in float32, written in bfloat16
    base = pm.load_state_dict(checkpoints / "base")
    want = pm.ties_merge(base, [a, b], density=0.5, scale=1.0, scope="tensor")
    assert all(v.dtype == torch.bfloat16 for v in ties.values() if v.is_floating_point())
    torch.testing.assert_close(ties[k], want[k].to(torch.bfloat16))
    # mergekit's dtype is the dtype the merge computes in: the inputs are cast first
    low = merge_from_config({**cfg, "dtype": "bfloat16", "out_dtype": None}, checkpoints)
    cast = [{n: v.bfloat16() for n, v in sd.items()} for sd in (base, a, b)]
    want = pm.ties_merge(cast[0], cast[1:], density=0.5, scale=1.0, scope="tensor")
    torch.testing.assert_close(low[k], want[k], rtol=1e-2, atol=1e-2)


def test_pareto_merger_saved_and_merged_by_preference(checkpoints, tmp_path):
    base, a, b = (pm.load_state_dict(checkpoints / n) for n in ("base", "a", "b"))
    key = "model.layers.0.mlp.up_proj.weight"

    def objective(target):
        return lambda params: ((params[key] - target[key]) ** 2).mean()

    merger = pm.ParetoMerger(base, [a, b], rank=2, n_steps=5, lr=1e-2, random_state=0)
    merger.fit([objective(a), objective(b)])
    merger.save(tmp_path / "merger.safetensors")
    again = pm.ParetoMerger.load(tmp_path / "merger.safetensors", base, [a, b])
    for pref in ([0.8, 0.2], [0.3, 0.7]):
        m1, m2 = merger.merge(pref), again.merge(pref)
        assert all(torch.equal(m1[n], m2[n]) for n in m1)
    cfg = {"merge_method": "pareto", "base_model": str(checkpoints / "base"),
           "merger": str(tmp_path / "merger.safetensors"), "preference": [0.8, 0.2],
           "models": [{"model": str(checkpoints / "a")}, {"model": str(checkpoints / "b")}]}  # fmt: skip
    out = tmp_path / "pareto"
    assert main([_write(tmp_path, cfg), str(out)]) == 0
    got = pm.load_state_dict(out)
    want = merger.merge([0.8, 0.2])
    assert all(torch.equal(got[n], want[n]) for n in want)
    with pytest.raises(ValueError, match="tasks"):
        pm.ParetoMerger.load(tmp_path / "merger.safetensors", base, [a])
    with pytest.raises(ValueError, match=r"ParetoMerger\.save"):
        pm.save_state_dict(base, tmp_path / "plain.safetensors")
        pm.ParetoMerger.load(tmp_path / "plain.safetensors", base, [a, b])


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"merge_method": "dare"}, "merge_method"),
        ({"typo_key": 1}, "unknown keys"),
        ({"models": [{"model": "a", "parameters": {"wieght": 1}}, {"model": "b"}]}, "unknown"),
        ({"models": [{"model": "a", "parameters": {"weight": 1}}, {"model": "b"}]}, "every model"),
        (
            {
                "models": [
                    {"model": "a", "parameters": {"weight": -1}},
                    {"model": "b", "parameters": {"weight": 1}},
                ]
            },
            ">= 0",
        ),
        ({"parameters": {"density": 0.5}}, "unknown keys"),
        ({"preference": [0.5, 0.5]}, "only used"),
        ({"dtype": "float128"}, "dtype"),
        ({"models": []}, "non-empty"),
    ],
)
def test_bad_configs_name_the_problem(checkpoints, patch, match):
    cfg = {"merge_method": "task_arithmetic", "base_model": "base",
           "models": [{"model": "a"}, {"model": "b"}], **patch}  # fmt: skip
    with pytest.raises(ValueError, match=match):
        merge_from_config(cfg, checkpoints)


def test_overflow_is_refused(checkpoints):
    cfg = {"merge_method": "task_arithmetic", "base_model": "base", "dtype": "float16",
           "models": [{"model": "a", "parameters": {"weight": 1e6}},
                      {"model": "b", "parameters": {"weight": 1e6}}]}  # fmt: skip
    with pytest.raises(ValueError, match="not finite"):
        merge_from_config(cfg, checkpoints)


def test_console_script_and_refusal_to_overwrite(checkpoints, tmp_path):
    cfg = {
        "merge_method": "linear",
        "base_model": "base",
        "models": [{"model": "a"}, {"model": "b"}],
    }
    path = _write(checkpoints, cfg, "lin.yml")
    out = tmp_path / "o"
    run = [sys.executable, "-m", "pareto_merge.cli", path, str(out)]
    assert subprocess.run(run, capture_output=True, text=True).returncode == 0
    again = subprocess.run(run, capture_output=True, text=True)
    assert again.returncode != 0 and "not empty" in again.stderr
    np.testing.assert_array_equal(
        sorted(pm.load_state_dict(out)), sorted(pm.load_state_dict(checkpoints / "a"))
    )


_MEM = r"""
import os, sys, torch
from pareto_merge.cli import main
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
torch.ones(1) + 1  # one-time allocations before the baseline
open("/proc/self/clear_refs", "w").write("5")
base = status("VmRSS")
if sys.argv[1] == "lazy":
    main([sys.argv[2], sys.argv[3], "--max-shard-size", "20MB"])
else:  # the whole-model path: every checkpoint read at once, then the same merge and save
    import pareto_merge as pm
    models = [pm.load_state_dict(os.path.join(os.path.dirname(sys.argv[2]), n)) for n in "bxy"]
    merged = pm.task_arithmetic(models[0], models[1:], scale=0.3)
    pm.save_state_dict(merged, sys.argv[3], max_shard_bytes=20 * 10**6)
print("PEAK", status("VmHWM") - base)
"""


def test_lazy_merge_holds_one_model_not_all(tmp_path):
    """Three 64 MB checkpoints (4 x 16 MB tensors, 20 MB shards): the tensor-by-tensor merge
    holds the merged model plus a few tensors (the inputs, task vectors and sums of one name,
    and one shard's copy at save time), the whole-model path every model at once."""
    g = torch.Generator().manual_seed(0)
    for name in "bxy":
        sd = {f"w{i}": torch.randn(2048, 2048, generator=g) for i in range(4)}
        pm.save_state_dict(sd, tmp_path / name, max_shard_bytes=20 * 10**6)
    cfg = _write(tmp_path, {"merge_method": "task_arithmetic", "base_model": "b",
                            "models": [{"model": "x"}, {"model": "y"}]})  # fmt: skip
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}  # freed blocks leave the RSS
    peaks = {}
    for mode in ("lazy", "eager"):
        out = subprocess.run(
            [sys.executable, "-c", _MEM, mode, cfg, str(tmp_path / mode)],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        peaks[mode] = float(out.stdout.split("PEAK")[1])
    got = {m: pm.load_state_dict(tmp_path / m) for m in peaks}
    for k in got["eager"]:
        torch.testing.assert_close(got["lazy"][k], got["eager"][k], rtol=1e-6, atol=1e-6)
    model_mb, tensor_mb = 64, 16
    assert peaks["lazy"] < model_mb + 8 * tensor_mb, peaks  # measured 166 MB here
    assert peaks["lazy"] < 0.5 * peaks["eager"], peaks  # measured 453 MB here


def _mergekit_ties_loop(base, tensors, weights, densities, normalize=True, lam=1.0):
    """mergekit's generalized task arithmetic (ties), written out element by element."""
    flat_b = base.flatten().double()
    deltas = []
    for t, d in zip(tensors, densities, strict=True):
        v = t.flatten().double() - flat_b
        k = max(1, int(d * v.numel())) if d < 1 else v.numel()
        keep = set(v.abs().argsort(descending=True)[:k].tolist())
        deltas.append([float(x) if i in keep else 0.0 for i, x in enumerate(v)])
    out = []
    for j in range(flat_b.numel()):
        wd = [w * dl[j] for w, dl in zip(weights, deltas, strict=True)]
        sign = 1.0 if sum(wd) >= 0 else -1.0
        agree = [(x > 0) - (x < 0) == sign for x in wd]
        mixed = sum(x for x, a in zip(wd, agree, strict=True) if a)
        div = sum(w for w, a in zip(weights, agree, strict=True) if a) or 1.0
        out.append((mixed / div if normalize else mixed) * lam + float(flat_b[j]))
    return torch.tensor(out).view_as(base)


@pytest.mark.parametrize("normalize", [True, False])
def test_mergekit_ties_recipe_per_model_density_and_weight(checkpoints, normalize):
    # mergekit's own TIES recipe (per-model density and weight, normalize, int8_mask, lambda)
    # was rejected; it is read as mergekit reads it now
    cfg = {"merge_method": "ties", "base_model": "base",
           "models": [{"model": "a", "parameters": {"density": 0.3, "weight": 0.7}},
                      {"model": "b", "parameters": {"density": 0.8, "weight": 0.4}}],
           "parameters": {"normalize": normalize, "int8_mask": True, "lambda": 0.9}}  # fmt: skip
    got = merge_from_config(cfg, checkpoints)
    base, a, b = (pm.load_state_dict(checkpoints / n) for n in ("base", "a", "b"))
    for k in ("model.layers.0.self_attn.k_proj.weight", "model.norm.weight"):
        want = _mergekit_ties_loop(base[k], [a[k], b[k]], [0.7, 0.4], [0.3, 0.8], normalize, 0.9)
        torch.testing.assert_close(got[k], want.float(), rtol=1e-5, atol=1e-6)
    # a top-level density applies to every model, a model's own overrides it
    top = merge_from_config({**cfg, "models": [{"model": "a", "parameters": {"weight": 0.7}},
                                               {"model": "b", "parameters": {"weight": 0.4,
                                                                             "density": 0.8}}],
                             "parameters": {**cfg["parameters"], "density": 0.3}}, checkpoints)  # fmt: skip
    assert all(torch.equal(top[k], got[k]) for k in got)


def test_task_arithmetic_and_linear_follow_mergekit_normalize(checkpoints):
    base, a, b = (pm.load_state_dict(checkpoints / n) for n in ("base", "a", "b"))
    k = "model.layers.1.mlp.up_proj.weight"
    models = [{"model": "a", "parameters": {"weight": 0.6}},
              {"model": "b", "parameters": {"weight": 0.2}}]  # fmt: skip
    ta = {"merge_method": "task_arithmetic", "base_model": "base", "models": models}
    tau = 0.6 * (a[k] - base[k]) + 0.2 * (b[k] - base[k])
    torch.testing.assert_close(merge_from_config(ta, checkpoints)[k], base[k] + tau)
    norm = merge_from_config({**ta, "parameters": {"normalize": True, "lambda": 2.0}}, checkpoints)
    torch.testing.assert_close(norm[k], base[k] + 2.0 * tau / 0.8)
    lin = {"merge_method": "linear", "base_model": "base", "models": models}
    torch.testing.assert_close(
        merge_from_config(lin, checkpoints)[k], (0.6 * a[k] + 0.2 * b[k]) / 0.8
    )
    raw = merge_from_config({**lin, "parameters": {"normalize": False}}, checkpoints)
    torch.testing.assert_close(raw[k], 0.6 * a[k] + 0.2 * b[k])


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"slices": []}, "slices"),
        ({"tokenizer_source": "union"}, "union"),
        ({"tokenizer": {"source": "base"}}, "tokenizer"),
        ({"chat_template": "chatml"}, "chat_template"),
        ({"parameters": {"density": [0.1, 0.5]}}, "per-layer"),
        ({"parameters": {"density": [{"filter": "mlp", "value": 0.3}, {"value": 0.5}]}},
         "per-layer"),
        ({"parameters": {}}, "needs 'density'"),
        ({"parameters": {"density": 0.5, "lambda": 1.0, "scale": 1.0}}, "not both"),
        ({"parameters": {"density": 0.5, "normalize": "yes"}}, "normalize"),
        ({"parameters": {"density": 1.5}}, "density"),
        ({"out_dtype": "int8", "parameters": {"density": 0.5}}, "out_dtype"),
        ({"models": [{"model": "a", "parameters": {"density": 0.5}}, {"model": "b"}]},
         "every model"),
    ],
)  # fmt: skip
def test_recipes_mergekit_would_read_differently_raise(checkpoints, patch, match):
    cfg = {"merge_method": "ties", "base_model": "base",
           "models": [{"model": "a"}, {"model": "b"}], **patch}  # fmt: skip
    with pytest.raises(ValueError, match=match):
        merge_from_config(cfg, checkpoints)


def test_mixed_dtype_checkpoints_are_cast_with_a_warning(checkpoints, tmp_path):
    # a bfloat16 fine-tune beside float32 ones: mergekit casts; this was refused
    b16 = {k: v.bfloat16() if v.is_floating_point() else v
           for k, v in pm.load_state_dict(checkpoints / "b").items()}  # fmt: skip
    pm.save_state_dict(b16, tmp_path / "b16", max_shard_bytes=20_000)
    cfg = {"merge_method": "task_arithmetic", "base_model": str(checkpoints / "base"),
           "models": [{"model": str(checkpoints / "a"), "parameters": {"weight": 0.5}},
                      {"model": str(tmp_path / "b16"), "parameters": {"weight": 0.5}}]}  # fmt: skip
    with pytest.warns(UserWarning, match=r"models\[1\]: holds torch.bfloat16"):
        got = merge_from_config(cfg)
    base, a = (pm.load_state_dict(checkpoints / n) for n in ("base", "a"))
    k = next(iter(base))
    want = base[k] + 0.5 * (a[k] - base[k]) + 0.5 * (b16[k].float() - base[k])
    assert got[k].dtype == torch.float32
    torch.testing.assert_close(got[k], want)


def test_tokenizer_source_names_the_model_whose_tokenizer_is_copied(checkpoints, tmp_path):
    import shutil

    src = tmp_path / "a_tok"
    shutil.copytree(checkpoints / "a", src)
    (src / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 7}))
    (src / "tokenizer.json").write_bytes((checkpoints / "base" / "tokenizer.json").read_bytes())
    cfg = {"merge_method": "linear", "base_model": str(checkpoints / "base"),
           "models": [{"model": str(src)}, {"model": str(checkpoints / "b")}],
           "tokenizer_source": str(src)}  # fmt: skip
    out = tmp_path / "out"
    assert main([_write(tmp_path, cfg), str(out)]) == 0
    assert json.loads((out / "tokenizer_config.json").read_text()) == {"model_max_length": 7}
