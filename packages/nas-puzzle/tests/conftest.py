import pytest
import torch

import nas_puzzle as npz

# tiny models: one intra-op thread avoids OpenMP spin-waits on a shared 2-core runner
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_cfg() -> npz.DecoderConfig:
    return npz.DecoderConfig(
        d_model=16, n_layers=2, n_heads=4, n_kv_heads=4, ffn_intermediate=32, max_seq_len=16
    )


@pytest.fixture(scope="session")
def corpus() -> tuple[torch.Tensor, torch.Tensor]:
    tr, va, _ = npz.split_tokens(npz.toy_corpus(20_000, seed=1))
    return tr, va


@pytest.fixture(scope="session")
def parent(tiny_cfg, corpus) -> npz.HeteroDecoder:
    # a few steps so the blocks are not at their random init, still fast
    return npz.train_parent(tiny_cfg, corpus[0], steps=15, batch_size=4, seq_len=16, seed=0)


@pytest.fixture(scope="session")
def space(tiny_cfg) -> npz.SearchSpace:
    return npz.SearchSpace.paper_default(tiny_cfg, ffn_ratios=(1.0, 0.5, 0.25), round_to=8)


@pytest.fixture(scope="session")
def library(parent, space, corpus) -> npz.BlockLibrary:
    return npz.build_library(parent, space, corpus[0], steps=30, batch_size=4, seq_len=16, seed=0)
