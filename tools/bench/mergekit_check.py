"""pareto-merge's recipes against mergekit itself, on the same sharded checkpoints, and memory.

mergekit cannot join the workspace lock (its pins conflict with the workspace's), so this script
runs with it added for the run: ``uv run --with mergekit python tools/bench/mergekit_check.py``.
Three tiny random Llama checkpoints (a base and two fine-tunes, each in at least 4 safetensors
shards) are merged by mergekit's ``run_merge`` and by ``pareto_merge.cli.merge_from_config``
from the same recipe; every merged tensor is compared (largest absolute difference, and that
difference relative to the tensor's largest magnitude). Recipes: ``linear`` and
``task_arithmetic`` with and without ``normalize`` and ``lambda``; ``ties`` at densities
0.1-0.9 with per-model weights, the same per-model densities in one recipe, ``normalize`` both
ways and ``int8_mask``. Writes ``results/pareto-merge/mergekit.json``.

Memory (``--memory``, no mergekit needed): peak resident memory of the ``pareto-merge`` command
above its start, on three 64 MB checkpoints (four 16 MB tensors, or 32 of 2 MB) in 20 MB
shards, for task arithmetic and TIES, against one model plus its largest tensor. Writes
``results/pareto-merge/merge_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from record import Run

import pareto_merge as pm
from pareto_merge.cli import merge_from_config

DENSITIES = (0.1, 0.3, 0.5, 0.7, 0.9)


def _checkpoints(root: pathlib.Path) -> None:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=32)  # fmt: skip
    base = transformers.LlamaForCausalLM(cfg)
    base.save_pretrained(root / "base", max_shard_size="20KB")
    for i, name in enumerate(("a", "b")):
        torch.manual_seed(10 + i)
        tuned = transformers.LlamaForCausalLM(cfg)
        tuned.load_state_dict(base.state_dict())
        with torch.no_grad():
            for p in tuned.parameters():
                p.add_(0.05 * torch.randn_like(p))
        tuned.save_pretrained(root / name, max_shard_size="20KB")
    shards = len(list((root / "base").glob("*.safetensors")))
    assert shards >= 4, shards


def _recipes() -> list[tuple[str, dict]]:
    two = lambda wa, wb, **extra: [  # noqa: E731
        {"model": "a", "parameters": {"weight": wa, **extra.get("a", {})}},
        {"model": "b", "parameters": {"weight": wb, **extra.get("b", {})}},
    ]
    out = [
        ("linear", {"merge_method": "linear", "models": two(0.6, 0.2)}),
        ("linear, normalize false",
         {"merge_method": "linear", "models": two(0.6, 0.2), "parameters": {"normalize": False}}),
        ("task_arithmetic", {"merge_method": "task_arithmetic", "models": two(0.6, 0.2)}),
        ("task_arithmetic, normalize, lambda 1.5",
         {"merge_method": "task_arithmetic", "models": two(0.6, 0.2),
          "parameters": {"normalize": True, "lambda": 1.5}}),
    ]  # fmt: skip
    for d in DENSITIES:
        out.append((f"ties, density {d}, weights 0.7/0.4",
                    {"merge_method": "ties", "models": two(0.7, 0.4),
                     "parameters": {"density": d}}))  # fmt: skip
    out += [
        ("ties, per-model density 0.2/0.8, int8_mask",
         {"merge_method": "ties", "models": two(0.7, 0.4, a={"density": 0.2}, b={"density": 0.8}),
          "parameters": {"int8_mask": True}}),
        ("ties, density 0.5, normalize false, lambda 0.8",
         {"merge_method": "ties", "models": two(1.0, 1.0),
          "parameters": {"density": 0.5, "normalize": False, "lambda": 0.8}}),
    ]  # fmt: skip
    for _, r in out:
        if r["merge_method"] != "linear":  # mergekit's linear takes a base_model as an input
            r["base_model"] = "base"
        r["dtype"] = "float32"
    return out


def _mergekit(recipe: dict, root: pathlib.Path, out: pathlib.Path) -> dict[str, torch.Tensor]:
    from mergekit.config import MergeConfiguration
    from mergekit.merge import MergeOptions, run_merge

    absolute = json.loads(json.dumps(recipe))
    if "base_model" in recipe:
        absolute["base_model"] = str(root / recipe["base_model"])
    for m in absolute["models"]:
        m["model"] = str(root / m["model"])
    opts = MergeOptions(
        copy_tokenizer=False, write_model_card=False, quiet=True, lazy_unpickle=False
    )
    run_merge(MergeConfiguration.model_validate(absolute), str(out), options=opts)
    return pm.load_state_dict(out)


def compare(run: Run, root: pathlib.Path) -> None:
    from importlib.metadata import version

    import mergekit  # noqa: F401  (fails early, with the reason, when it is not installed)

    rows, per = [], {}
    for name, recipe in _recipes():
        theirs = _mergekit(recipe, root, root / f"mk-{len(rows)}")
        ours = merge_from_config(recipe, root)
        assert set(theirs) == set(ours), sorted(set(theirs) ^ set(ours))[:5]
        absd = max(float((ours[k].double() - theirs[k].double()).abs().max()) for k in theirs)
        rel = max(
            float((ours[k].double() - theirs[k].double()).abs().max()
                  / theirs[k].double().abs().max().clamp_min(1e-30))
            for k in theirs
        )  # fmt: skip
        rows.append([name, len(theirs), absd, rel])
        per[name] = {"max_abs": absd, "max_rel": rel}
        print(f"{name}: {absd:.2e} ({rel:.2e})", flush=True)
    worst = max(r[3] for r in rows)
    run.table(
        "mergekit", ["recipe", "tensors", "max |ours − mergekit|", "max relative"], rows,
        fmt=[None, "d", ".1e", ".1e"], per_seed=per,
        title=f"pareto-merge recipes vs mergekit {version('mergekit')}, float32",
        notes=[f"Tiny random Llama base and two fine-tunes (base + 0.05 N(0, 1) per weight), "
               f"each in >= 4 safetensors shards; mergekit {version('mergekit')}'s run_merge and "
               "pareto_merge.cli.merge_from_config on the same recipe (dtype float32); worst "
               f"relative difference {worst:.1e} (target 1e-6)."],
        headline=f"mergekit recipes: worst relative difference {worst:.1e} over "
                 f"{len(rows)} recipes (linear, task arithmetic, TIES at densities 0.1-0.9)",
    )  # fmt: skip


_MEM = r"""
import sys
from pareto_merge.cli import main
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
import torch; torch.ones(1) + 1  # one-time allocations before the baseline
open("/proc/self/clear_refs", "w").write("5")
base = status("VmRSS")
main([sys.argv[1], sys.argv[2], "--max-shard-size", "20MB"])
print(status("VmHWM") - base)
"""


def memory(run: Run, root: pathlib.Path) -> None:
    rows = []
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}  # freed blocks leave the resident set
    # 64 MB models: four 16 MB tensors (a tensor a quarter of the model) or 32 of 2 MB
    for n_tensors, side in ((4, 2048), (32, 724)):
        folder = root / f"t{n_tensors}"
        g = torch.Generator().manual_seed(0)
        for name in "bxy":
            sd = {f"w{i}": torch.randn(side, side, generator=g) for i in range(n_tensors)}
            pm.save_state_dict(sd, folder / name, max_shard_bytes=20 * 10**6)
        shards = len(list((folder / "b").glob("*.safetensors")))
        tensor_mb = side * side * 4 / 2**20
        model_mb = n_tensors * tensor_mb
        recipes = {
            "task_arithmetic": {"merge_method": "task_arithmetic", "base_model": "b",
                                "models": [{"model": "x", "parameters": {"weight": 0.5}},
                                           {"model": "y", "parameters": {"weight": 0.5}}]},
            "ties, density 0.5": {"merge_method": "ties", "base_model": "b",
                                  "parameters": {"density": 0.5},
                                  "models": [{"model": "x"}, {"model": "y"}]},
        }  # fmt: skip
        for name, recipe in recipes.items():
            tag = name.split(",")[0]
            cfg = folder / f"{tag}.json"
            cfg.write_text(json.dumps(recipe))
            out = folder / f"out-{tag}"
            peak = float(subprocess.run([sys.executable, "-c", _MEM, str(cfg), str(out)],
                                        env=env, capture_output=True, text=True, check=True
                                        ).stdout.strip().splitlines()[-1])  # fmt: skip
            bound = model_mb + tensor_mb
            rows.append([name, f"{n_tensors} x {tensor_mb:.0f} MB", shards, peak,
                         peak / model_mb, peak / bound])  # fmt: skip
    ta = [r[5] for r in rows if r[0] == "task_arithmetic"]
    ti = [r[5] for r in rows if r[0] != "task_arithmetic"]
    run.table(
        "merge_memory",
        ["recipe", "tensors per model", "shards per model", "peak MB", "peak / one model",
         "peak / (model + largest tensor)"],
        rows, fmt=[None, None, "d", ".0f", ".2f", ".2f"],
        notes=["Three 64 MB checkpoints (float32 tensors, 20 MB shards); peak resident memory of "
               "the pareto-merge command above its start, glibc's mmap threshold fixed (freed "
               "blocks leave the resident set). Target: <= 1.1 x (one model + its largest "
               "tensor)."],
        headline=f"merge peak memory / (one model + largest tensor): task arithmetic "
                 f"{ta[0]:.2f} / {ta[1]:.2f}, TIES {ti[0]:.2f} / {ti[1]:.2f} (4 x 16 MB / "
                 "32 x 2 MB tensors)",
    )  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memory", action="store_true", help="the memory table (no mergekit)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        if a.memory:
            memory(Run("pareto-merge"), root)
        else:
            _checkpoints(root)
            compare(Run("pareto-merge", uv_with=["mergekit"]), root)


if __name__ == "__main__":
    main()
