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


def _tiny_llama(width, seed):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=41, hidden_size=width, intermediate_size=2 * width,
                                   num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1, max_position_embeddings=32)  # fmt: skip
    return transformers.LlamaForCausalLM(cfg)


class _Ragged(torch.utils.data.Dataset):
    """Rows with different numbers of kept targets (masks and -100 labels), so the mean of
    micro-batch means differs from the mean over one large batch."""

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 41, (4, 10), generator=g)
        self.att = torch.ones_like(self.ids)
        self.att[0, 3:] = 0
        self.att[2, 7:] = 0
        self.labels = self.ids.clone()
        self.labels[1, :5] = -100

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": self.att[i], "labels": self.labels[i]}


def _one_step(tmp_path, batch, accumulation):
    student, teacher = _tiny_llama(16, 1), _tiny_llama(24, 0)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / f"ga{accumulation}"), per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation, max_steps=1, learning_rate=0.5, optim="sgd",
        lr_scheduler_type="constant", logging_steps=1, report_to=[], save_strategy="no",
        use_cpu=True, seed=0, disable_tqdm=True, dataloader_drop_last=False,
    )  # fmt: skip
    trainer = KDTrainer(model=student, args=args, train_dataset=_Ragged(), teacher=teacher,
                        kd_loss="fkl", ce_weight=0.5)  # fmt: skip
    trainer.train()
    loss = next(h["loss"] for h in trainer.state.log_history if "loss" in h)
    return loss, {k: v.detach().clone() for k, v in student.named_parameters()}, trainer


def test_gradient_accumulation_equals_one_large_batch(tmp_path):
    # GA=2 once gave exactly 2x the update and the logged loss
    loss1, p1, _ = _one_step(tmp_path, 4, 1)
    loss2, p2, _ = _one_step(tmp_path, 2, 2)
    assert loss2 == pytest.approx(loss1, rel=1e-5)
    moved = max(float((p1[k] - _tiny_llama(16, 1).state_dict()[k]).abs().max()) for k in p1)
    assert moved > 1e-3
    for k in p1:
        torch.testing.assert_close(p2[k], p1[k], atol=1e-6, rtol=1e-5)
    # the one-batch loss is the mean over every kept target of the four rows
    batch = {
        k: torch.stack([_Ragged()[i][k] for i in range(4)])
        for k in ("input_ids", "attention_mask", "labels")
    }
    s0, t0 = _tiny_llama(16, 1), _tiny_llama(24, 0)
    want = kd_loss_for_causal_lm(s0, t0, batch, loss="fkl", ce_weight=0.5)
    assert loss1 == pytest.approx(float(want.detach()), rel=1e-4)


def test_evaluate_and_predict(tmp_path):
    _, _, trainer = _one_step(tmp_path, 4, 1)
    metrics = trainer.evaluate(eval_dataset=_Ragged())  # once a TypeError
    batch = {
        k: torch.stack([_Ragged()[i][k] for i in range(4)])
        for k in ("input_ids", "attention_mask", "labels")
    }
    want = kd_loss_for_causal_lm(trainer.model, trainer.teacher, batch, loss="fkl", ce_weight=0.5)
    assert metrics["eval_loss"] == pytest.approx(float(want), rel=1e-4)
    pred = trainer.predict(_Ragged())
    assert pred.predictions.shape == (4, 10, 41) and pred.label_ids.shape == (4, 10)


def _family(name, **extra):
    torch.manual_seed(0)
    common = dict(vocab_size=37, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)  # fmt: skip
    if name == "gemma2":
        common["head_dim"] = 8
    cfg = getattr(transformers, {"llama": "LlamaConfig", "qwen2": "Qwen2Config",
                                 "gemma2": "Gemma2Config", "granite": "GraniteConfig"}[name])(
        **common, **extra)  # fmt: skip
    cls = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
           "gemma2": "Gemma2ForCausalLM", "granite": "GraniteForCausalLM"}[name]  # fmt: skip
    return getattr(transformers, cls)(cfg).eval()


@pytest.mark.parametrize(
    ("name", "extra"),
    [("llama", {}), ("qwen2", {}), ("granite", {"logits_scaling": 8.0}),
     ("gemma2", {"final_logit_softcapping": None}), ("llama", {"tie_word_embeddings": True})],
)  # fmt: skip
def test_fused_path_reads_each_family_head(name, extra):
    # Granite's logits_scaling once made the loss 63x off, silently
    from kd_losses import forward_kl

    s, t = _family(name, **extra), _family(name, **extra)
    with torch.no_grad():
        for p in t.parameters():
            p.add_(0.05 * torch.randn_like(p))
    ids = torch.randint(0, 37, (2, 9))
    att = torch.ones_like(ids)
    att[1, -3:] = 0
    batch = {"input_ids": ids, "attention_mask": att}
    got = kd_loss_for_causal_lm(s, t, batch, loss="fkl", ce_weight=0.3)
    zs = s(input_ids=ids, attention_mask=att).logits[:, :-1]
    zt = t(input_ids=ids, attention_mask=att).logits[:, :-1].detach()
    keep = att[:, 1:].bool()
    ce = torch.nn.functional.cross_entropy(zs[keep], ids[:, 1:][keep])
    torch.testing.assert_close(got, forward_kl(zs, zt, mask=keep) + 0.3 * ce, atol=1e-5, rtol=1e-5)


def test_heads_the_fused_path_cannot_reproduce_raise():
    from kd_losses.hf import UnsupportedHeadError

    s = _family("gemma2")  # final_logit_softcapping=30 by default
    batch = {"input_ids": torch.randint(0, 37, (2, 6))}
    with pytest.raises(UnsupportedHeadError, match="final_logit_softcapping"):
        kd_loss_for_causal_lm(s, _family("llama"), batch)
    odd = _family("llama")
    odd.lm_head.forward = lambda h: torch.nn.functional.linear(h, odd.lm_head.weight) * 2.0
    with pytest.raises(UnsupportedHeadError, match="differ from lm_head"):
        kd_loss_for_causal_lm(odd, _family("llama"), batch)


def _trainer(tmp_path, name, steps, **kw):
    student, teacher = _tiny_llama(16, 1), _tiny_llama(24, 0)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / name), per_device_train_batch_size=2, max_steps=steps,
        learning_rate=1e-2, lr_scheduler_type="linear", logging_steps=1, report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, **kw,
    )  # fmt: skip
    return KDTrainer(model=student, args=args, train_dataset=_Ragged(), teacher=teacher,
                     kd_loss="bdl", ce_weight=0.5)  # fmt: skip


def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(tmp_path):
    full = _trainer(tmp_path, "full", 4, save_strategy="no")
    full.train()
    first = _trainer(tmp_path, "part", 4, save_strategy="steps", save_steps=2)
    first.train()  # writes checkpoint-2 and checkpoint-4
    resumed = _trainer(tmp_path, "part", 4, save_strategy="no")
    resumed.train(resume_from_checkpoint=str(tmp_path / "part" / "checkpoint-2"))
    assert resumed.state.global_step == 4
    want = dict(full.model.named_parameters())
    for k, v in resumed.model.named_parameters():
        torch.testing.assert_close(v, want[k], atol=1e-6, rtol=1e-5)  # Adam state restored too
    losses = [h["loss"] for h in resumed.state.log_history if "loss" in h]
    full_losses = [h["loss"] for h in full.state.log_history if "loss" in h]
    assert losses[-2:] == pytest.approx(full_losses[-2:], rel=1e-5)


def test_bf16_mixed_precision_training_runs_the_fused_head(tmp_path):
    # autocast's bfloat16 activations with float32 master weights (TrainingArguments(bf16=True))
    fp32 = _trainer(tmp_path, "fp32", 2, save_strategy="no")
    fp32.train()
    bf16 = _trainer(tmp_path, "bf16", 2, save_strategy="no", bf16=True)
    bf16.train()
    a = [h["loss"] for h in fp32.state.log_history if "loss" in h]
    b = [h["loss"] for h in bf16.state.log_history if "loss" in h]
    assert all(torch.isfinite(torch.tensor(b)))
    assert b == pytest.approx(a, rel=5e-2)  # bfloat16 rounding of the activations only
