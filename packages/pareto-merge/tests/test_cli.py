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
        assert list(got) == list(want) and all(torch.equal(got[k], want[k]) for k in want)


def test_linear_ties_and_dtype(checkpoints):
    lin = merge_from_config({"merge_method": "linear", "base_model": "base",
                             "models": [{"model": "a"}, {"model": "b"}]}, checkpoints)  # fmt: skip
    a, b = (pm.load_state_dict(checkpoints / n) for n in ("a", "b"))
    k = next(iter(a))
    torch.testing.assert_close(lin[k], (a[k] + b[k]) / 2)
    ties = merge_from_config({"merge_method": "ties", "base_model": "base", "dtype": "bfloat16",
                              "parameters": {"density": 0.5, "scale": 1.0},
                              "models": [{"model": "a"}, {"model": "b"}]}, checkpoints)  # fmt: skip
    base = pm.load_state_dict(checkpoints / "base")
    want = pm.ties_merge(base, [a, b], density=0.5, scale=1.0, scope="tensor")
    assert all(v.dtype == torch.bfloat16 for v in ties.values() if v.is_floating_point())
    torch.testing.assert_close(ties[k], want[k].to(torch.bfloat16))


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
    assert all(torch.equal(got["lazy"][k], got["eager"][k]) for k in got["eager"])
    model_mb, tensor_mb = 64, 16
    assert peaks["lazy"] < model_mb + 8 * tensor_mb, peaks  # measured 166 MB here
    assert peaks["lazy"] < 0.5 * peaks["eager"], peaks  # measured 453 MB here
