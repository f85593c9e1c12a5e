"""Benchmark for kd-losses: DA-KD vs full-data distillation with every loss, and loss kernels.

Part A trains a tiny teacher LM on the generated corpus of ``kd_losses.make_corpus`` and
distills a ~4x smaller student with each loss, with and without DA-KD data updating; it prints
validation NLL / next-token accuracy against teacher forward passes spent (sequences), with
ratios to full-data forward KL.

Part B times one forward+backward of FKL and BDL at vocab 32K-128K against a naive
probability-space PyTorch implementation, and reports the memory saved for backward.

    uv run python tools/bench/kd_bench.py            # default (~5 min on 2 idle cores)
    uv run python tools/bench/kd_bench.py --quick
"""

from __future__ import annotations

import argparse
import time

import torch

import kd_losses as K


def part_a(quick: bool, seed: int) -> None:
    n_train, epochs = (384, 3) if quick else (768, 4)
    losses = ("fkl", "skl", "bdl") if quick else K.LOSS_NAMES
    torch.manual_seed(seed)
    tokens, _ = K.make_corpus(
        n_train + 128,
        seq_len=32,
        vocab_size=48,
        n_markov=2,
        copy_frac=0.3,
        stride_frac=0.3,
        seed=seed,
    )
    train, val = tokens[:n_train], tokens[n_train:]
    teacher = K.TinyLM(48, d_model=96, n_layers=4, n_heads=4, max_len=32)
    student_cfg = dict(d_model=64, n_layers=2, n_heads=4, max_len=32)
    init = K.TinyLM(48, **student_cfg).state_dict()  # type: ignore[arg-type]
    n_t = sum(p.numel() for p in teacher.parameters())
    n_s = sum(p.numel() for p in K.TinyLM(48, **student_cfg).parameters())  # type: ignore[arg-type]
    t0 = time.perf_counter()
    K.train_lm(teacher, train, epochs=2 * epochs + 2, batch_size=32, lr=5e-3, seed=seed)
    t_loss, t_acc = K.evaluate_lm(teacher, val)
    print(
        f"teacher {n_t / 1e3:.0f}K params, student {n_s / 1e3:.0f}K ({n_t / n_s:.1f}x smaller); "
        f"teacher trained in {time.perf_counter() - t0:.0f}s; {n_train} train / 128 val seqs\n"
    )
    header = (
        f"{'loss':<6}{'DA-KD':>6}{'val NLL':>9}{'val acc':>9}{'teacher fwd':>13}"
        f"{'fwd ratio':>10}{'NLL ratio':>10}{'time s':>8}"
    )
    print(header)
    print("-" * len(header))
    print(f"{'teacher':<12}{t_loss:>9.3f}{t_acc:>9.3f}")
    ref = None
    for name in losses:
        for aware in (False, True):
            student = K.TinyLM(48, **student_cfg)  # type: ignore[arg-type]
            student.load_state_dict(init)
            t0 = time.perf_counter()
            res = K.distill(
                student,
                teacher,
                train,
                loss=name,
                epochs=epochs,
                batch_size=32,
                lr=5e-3,
                difficulty_aware=aware,
                val_tokens=val,
                seed=seed,
            )
            dt = time.perf_counter() - t0
            h = res.history[-1]
            if ref is None:
                ref = (h["val_loss"], res.teacher_forwards)
            print(
                f"{name:<6}{'yes' if aware else 'no':>6}{h['val_loss']:>9.3f}{h['val_acc']:>9.3f}"
                f"{res.teacher_forwards:>13d}{res.teacher_forwards / ref[1]:>10.2f}"
                f"{h['val_loss'] / ref[0]:>10.3f}{dt:>8.1f}",
                flush=True,
            )


def _naive(name: str, s: torch.Tensor, t: torch.Tensor, lam: float = 0.1) -> torch.Tensor:
    q = torch.softmax(s.float(), -1)
    p = torch.softmax(t.float(), -1)
    if name == "fkl":
        return (p * (p.log() - q.log())).sum(-1).mean()
    m1 = lam * p + (1 - lam) * q
    m2 = lam * q + (1 - lam) * p
    return ((p * (p.log() - m1.log())).sum(-1) + (q * (q.log() - m2.log())).sum(-1)).mean()


def _measure(fn, s: torch.Tensor, t: torch.Tensor, repeats: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    saved: dict[int, int] = {}

    def pack(x: torch.Tensor) -> torch.Tensor:
        saved[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
        return x

    times = []
    for r in range(repeats + 1):
        x = s.detach().clone().requires_grad_(True)
        t0 = time.perf_counter()
        if r == 0:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda y: y):
                out = fn(x, t)
        else:
            out = fn(x, t)
        out.backward()
        if r:
            times.append(time.perf_counter() - t0)
    # the inputs themselves are not extra memory
    saved.pop(s.untyped_storage().data_ptr(), None)
    saved.pop(t.untyped_storage().data_ptr(), None)
    return sorted(times)[len(times) // 2], sum(saved.values()) / 2**20


def part_b(quick: bool, seed: int) -> None:
    n_tok = 64 if quick else 128
    vocabs = (32_000, 128_000) if quick else (32_000, 64_000, 128_000)
    print(f"\nloss forward+backward, {n_tok} tokens (median of 3), bf16 logits N(0, 4^2)")
    header = (
        f"{'loss':<5}{'vocab':>8}{'impl':>14}{'time ms':>9}{'saved MiB':>11}"
        f"{'time ratio':>11}{'mem ratio':>10}"
    )
    print(header)
    print("-" * len(header))
    g = torch.Generator().manual_seed(seed)
    for vocab in vocabs:
        s = (4 * torch.randn(n_tok, vocab, generator=g)).bfloat16()
        t = (4 * torch.randn(n_tok, vocab, generator=g)).bfloat16()
        for name in ("fkl", "bdl"):
            impls = {
                "naive": lambda a, b, n=name: _naive(n, a, b),
                "kd_losses": lambda a, b, n=name: K.distill_loss(n, a, b),
                "kd_losses c16": lambda a, b, n=name: K.distill_loss(n, a, b, chunk_size=16),
            }
            base = None
            for label, fn in impls.items():
                ms, mib = _measure(fn, s, t, repeats=3)
                base = base or (ms, mib)
                print(
                    f"{name:<5}{vocab:>8}{label:>14}{ms * 1e3:>9.1f}{mib:>11.1f}"
                    f"{ms / base[0]:>11.2f}{mib / max(base[1], 1e-9):>10.2f}",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer losses, less data")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--skip-a", action="store_true", help="only the loss kernel timing")
    ap.add_argument("--skip-b", action="store_true", help="only the distillation table")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if not args.skip_a:
        part_a(args.quick, args.seed)
    if not args.skip_b:
        part_b(args.quick, args.seed)


if __name__ == "__main__":
    main()
