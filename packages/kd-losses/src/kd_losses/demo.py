"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

import torch

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Distill a tiny LM with FKL and BDL, with and without DA-KD data updating.

    A small teacher transformer is trained on a generated corpus (:func:`make_corpus`), then a
    ~4x smaller student is distilled four ways; the table reports validation NLL / accuracy
    and the teacher forward passes spent (in sequences).

    Parameters
    ----------
    seed : int, default=0
        Seed for the data and the models.

    Returns
    -------
    str
        A plain-text table of the demo's results.
    """
    from kd_losses.data import make_corpus
    from kd_losses.tiny_lm import TinyLM
    from kd_losses.training import distill, evaluate_lm, train_lm

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is faster than two on a busy machine
    try:
        return _run(seed, make_corpus, TinyLM, distill, evaluate_lm, train_lm)
    finally:
        torch.set_num_threads(threads)


def _run(seed, make_corpus, TinyLM, distill, evaluate_lm, train_lm) -> str:  # type: ignore[no-untyped-def]
    torch.manual_seed(seed)
    tokens, _ = make_corpus(
        320, seq_len=20, vocab_size=32, n_markov=2, copy_frac=0.3, stride_frac=0.3, seed=seed
    )
    train, val = tokens[:256], tokens[256:]
    teacher = TinyLM(32, d_model=48, n_layers=2, n_heads=4, max_len=32)
    train_lm(teacher, train, epochs=6, batch_size=32, lr=1e-2, seed=seed)
    t_loss, t_acc = evaluate_lm(teacher, val)
    init = TinyLM(32, d_model=24, n_layers=1, n_heads=4, max_len=32).state_dict()
    rows = [f"{'method':<14}{'val NLL':>9}{'val acc':>9}{'teacher fwd':>13}{'ratio':>7}"]
    rows.append(f"{'teacher':<14}{t_loss:>9.3f}{t_acc:>9.3f}{'-':>13}{'-':>7}")
    base_cost = None
    for loss in ("fkl", "bdl"):
        for aware in (False, True):
            student = TinyLM(32, d_model=24, n_layers=1, n_heads=4, max_len=32)
            student.load_state_dict(init)
            res = distill(
                student,
                teacher,
                train,
                loss=loss,
                epochs=3,
                batch_size=32,
                lr=1e-2,
                difficulty_aware=aware,
                val_tokens=val,
                seed=seed,
            )
            base_cost = base_cost or res.teacher_forwards
            h = res.history[-1]
            name = f"{loss}+DA-KD" if aware else loss
            rows.append(
                f"{name:<14}{h['val_loss']:>9.3f}{h['val_acc']:>9.3f}"
                f"{res.teacher_forwards:>13d}{res.teacher_forwards / base_cost:>7.2f}"
            )
    return "\n".join(rows)
