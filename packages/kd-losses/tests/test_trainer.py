"""KDTrainer: a tiny random Llama distilled from a tiny teacher with transformers.Trainer."""

import os
import pathlib
import socket
import subprocess
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from kd_losses.hf import KDTrainer, kd_loss_for_causal_lm  # noqa: E402

SCRIPT = r"""
import sys, torch, transformers
from kd_losses.hf import KDTrainer

def llama(width, layers, seed):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=width, intermediate_size=2 * width,
                                   num_hidden_layers=layers, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg)

class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        base = torch.randint(0, 97, (n, 8), generator=g)
        self.ids = base.repeat(1, 3)  # repeated 8-grams: something to learn
    def __len__(self):
        return len(self.ids)
    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i].clone()}

out, steps = sys.argv[1], int(sys.argv[2])
teacher, student = llama(64, 2, 0), llama(32, 1, 1)
args = transformers.TrainingArguments(output_dir=out, per_device_train_batch_size=8,
                                      max_steps=steps, learning_rate=3e-3, logging_steps=1,
                                      report_to=[], save_strategy="no", use_cpu=True, seed=0,
                                      disable_tqdm=True)
trainer = KDTrainer(model=student, args=args, train_dataset=Tokens(64), teacher=teacher,
                    kd_loss="bdl", kd_loss_kwargs={"lam": 0.1})
trainer.train()
losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
if trainer.is_world_process_zero():
    print("LOSSES", losses[0], losses[-1], len(losses), flush=True)
# tear the process group down before exit: left to the interpreter, gloo's threads can abort
# the process ("terminate called without an active exception") on a busy machine
if torch.distributed.is_available() and torch.distributed.is_initialized():
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path, cmd, attempts=1):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for _ in range(attempts):
        argv = [a.replace("{port}", str(_free_port())) for a in cmd]
        proc = subprocess.run(
            [*argv, str(script), str(tmp_path / "out"), "10"], capture_output=True, text=True,
            timeout=600, cwd=tmp_path, env=env,
        )  # fmt: skip
        # a rank killed by a signal (gloo aborting on a busy machine) is retried on a new port;
        # an ordinary error exit is not
        if proc.returncode == 0 or "exitcode  : -" not in proc.stderr:
            break
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("LOSSES"))
    first, last, n = line.split()[1:]
    return float(first), float(last), int(n)


def test_kd_trainer_loss_falls(tmp_path):
    first, last, n = _run(tmp_path, [sys.executable])
    assert n == 10 and last < first


def test_kd_trainer_two_gloo_processes(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--master_addr=127.0.0.1", "--master_port={port}"]  # fmt: skip
    first, last, n = _run(tmp_path, cmd, attempts=2)
    assert n == 10 and last < first


def test_kd_loss_for_causal_lm_masks_and_matches_the_logits_path():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=31, hidden_size=16, intermediate_size=32,
                                   num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1)  # fmt: skip
    s, t = transformers.LlamaForCausalLM(cfg), transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 31, (2, 9))
    labels = ids.clone()
    labels[0, :4] = -100
    att = torch.ones_like(ids)
    att[1, -2:] = 0
    batch = {"input_ids": ids, "labels": labels, "attention_mask": att}
    got = kd_loss_for_causal_lm(s, t, batch, loss="fkl")
    from kd_losses import forward_kl

    zs = s(input_ids=ids, attention_mask=att).logits[:, :-1]
    zt = t(input_ids=ids, attention_mask=att).logits[:, :-1].detach()
    keep = (labels[:, 1:] != -100) & att[:, 1:].bool()
    torch.testing.assert_close(got, forward_kl(zs, zt, mask=keep), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="teacher"):
        KDTrainer(model=s, args=transformers.TrainingArguments(output_dir=str(pathlib.Path(".")),
                  report_to=[], use_cpu=True))  # fmt: skip
