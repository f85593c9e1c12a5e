"""Short demo of the package's main job, used by ``aware-ml demo``."""

from __future__ import annotations

__all__ = ["demo"]

STAGE2_STEPS = 600


def demo(seed: int = 0) -> str:
    """A small ancestry, TAL (stage 1 with KD, stage 2 with task layers) and GHN (stage 1 with
    cross-entropy only) on two tasks; untrained accuracy of a held-out descendant from each.

    Returns
    -------
    str
    """
    import warnings

    import torch

    from learngene.baselines import GHN, RandInit
    from learngene.data import make_mini_decathlon, make_proxy_task
    from learngene.tal import TAL
    from learngene.training import evaluate_init, task_embedding, train_ancestry
    from learngene.vit import ViTSpace

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            proxy = make_proxy_task(seed, n_per_class=10, n_test_per_class=2)
            tasks = make_mini_decathlon(seed, 300, 200, names=["digits-parity", "counting"])
            space = ViTSpace(depth=(1, 2), width=(32, 48), heads=(2,))
            train, held = space.split(2, seed=seed)
            anc = train_ancestry(
                proxy, depth=2, width=64, heads=2, head_hidden=16, epochs=1, verbose=0, seed=seed
            )
            E = {k: task_embedding(anc, t) for k, t in tasks.items()}
            kw = dict(
                hid=32,
                layers=2,
                heads=4,
                lora_r=8,
                max_shape=128,
                task_dim=16,
                random_state=seed,
                verbose=0,
            )
            s1 = dict(steps=10, meta_batch=1, batch_size=32, lr=1e-3)
            tal = TAL(**kw).fit_stage1(proxy, anc, train, **s1)
            tal.fit_stage2(
                tasks, E, train, steps=STAGE2_STEPS, meta_batch=1, batch_size=32, lr=1e-3
            )
            ghn = GHN(**kw).fit(proxy, train, **s1)
            lines = [
                "learngene demo: accuracy of untrained ViTs (2 held-out specs: "
                + ", ".join(f"depth {a.depth} width {a.width}" for a in held)
                + f") initialised by random init, GHN and TAL ({STAGE2_STEPS} multi-task steps)",
                f"{'task':<15}{'chance':>8}{'RandInit':>10}{'GHN':>8}{'TAL':>8}",
            ]
            for name, t in tasks.items():
                acc = [
                    sum(evaluate_init(m.predict(a, E[name], t.n_classes), t) for a in held)
                    / len(held)
                    for m in (RandInit(seed), ghn, tal)
                ]
                cells = "".join(f"{a:>{w}.2f}" for a, w in zip(acc, (10, 8, 8), strict=True))
                lines.append(f"{name:<15}{1 / t.n_classes:>8.2f}{cells}")
            lines.append(
                "over 3 seeds and 7 tasks TAL is +18.7 points over GHN with 2400 + 3000 hypernetwork steps "
                "(paper +24): tools/bench/tal_bench.py"
            )
            return "\n".join(lines)
    finally:
        torch.set_num_threads(old)
