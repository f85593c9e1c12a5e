"""Distributed BLD with 2 local gloo processes equals the single-process library."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import nas_puzzle as npz


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _setup():
    cfg = npz.DecoderConfig(
        d_model=16, n_layers=2, n_heads=4, n_kv_heads=4, ffn_intermediate=32, max_seq_len=16
    )
    tr, _, _ = npz.split_tokens(npz.toy_corpus(5_000, seed=1))
    parent = npz.train_parent(cfg, tr, steps=3, batch_size=2, seq_len=16, seed=0)
    space = npz.SearchSpace.paper_default(cfg, ffn_ratios=(1.0, 0.5), round_to=8)
    return parent, space, tr


def _worker(rank: int, world: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        parent, space, tr = _setup()
        lib = npz.build_library(
            parent, space, tr, steps=4, batch_size=2, seq_len=8, seed=0, distributed=True
        )
        if rank == 0:
            lib.save(out)
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed unavailable")
@pytest.mark.filterwarnings("ignore:BLD unit")
def test_two_gloo_ranks_build_the_single_process_library(tmp_path):
    out = str(tmp_path / "dist.pt")
    mp.spawn(_worker, args=(2, _free_port(), out), nprocs=2, join=True)
    parent, space, tr = _setup()
    single = npz.build_library(parent, space, tr, steps=4, batch_size=2, seq_len=8, seed=0)
    multi = npz.BlockLibrary.load(out)
    assert sorted(single.entries) == sorted(multi.entries)
    for k, state in single.entries.items():
        for name, t in state.items():
            torch.testing.assert_close(multi.entries[k][name], t, rtol=0, atol=1e-6)
    assert [r["variant"] for r in single.training_log] == [r["variant"] for r in multi.training_log]
