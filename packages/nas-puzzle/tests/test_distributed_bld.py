"""Distributed BLD with 2 local gloo processes equals the single-process library.

The ranks are separate interpreters running a script (as ``torchrun`` would start them), so the
test does not depend on how pytest imports this module.
"""

import os
import socket
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.distributed as dist

import nas_puzzle as npz

SETUP = """
import nas_puzzle as npz
cfg = npz.DecoderConfig(d_model=16, n_layers=2, n_heads=4, n_kv_heads=4, ffn_intermediate=32, max_seq_len=16)
tr, _, _ = npz.split_tokens(npz.toy_corpus(5_000, seed=1))
parent = npz.train_parent(cfg, tr, steps=3, batch_size=2, seq_len=16, seed=0)
space = npz.SearchSpace.paper_default(cfg, ffn_ratios=(1.0, 0.5), round_to=8)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed unavailable")
@pytest.mark.filterwarnings("ignore:BLD unit")
def test_two_gloo_ranks_build_the_single_process_library(tmp_path):
    out = tmp_path / "dist.pt"
    script = tmp_path / "rank.py"
    script.write_text(
        "import os, sys, warnings\nimport torch\nimport torch.distributed as dist\n"
        "warnings.simplefilter('ignore')\ntorch.set_num_threads(1)\n"
        + SETUP
        + textwrap.dedent(
            f"""
            dist.init_process_group("gloo")
            lib = npz.build_library(parent, space, tr, steps=4, batch_size=2, seq_len=8, seed=0,
                                    distributed=True)
            if dist.get_rank() == 0:
                lib.save({str(out)!r})
            dist.destroy_process_group()
            """
        )
    )
    port = str(_free_port())
    procs = []
    for rank in range(2):
        env = dict(
            os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE="2"
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script)], env=env, stderr=subprocess.PIPE, text=True
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    ns: dict = {}
    exec(SETUP, ns)
    single = npz.build_library(
        ns["parent"], ns["space"], ns["tr"], steps=4, batch_size=2, seq_len=8, seed=0
    )
    multi = npz.BlockLibrary.load(out)
    assert sorted(single.entries) == sorted(multi.entries)
    for k, state in single.entries.items():
        for name, t in state.items():
            torch.testing.assert_close(multi.entries[k][name], t, rtol=0, atol=1e-6)
    assert [r["variant"] for r in single.training_log] == [r["variant"] for r in multi.training_log]
