"""Per-variant resource estimates (paper §4.1, App. B).

For a :class:`Scenario` (batch sizes, prefill and decode lengths, dtype) every block variant gets

* ``param_bytes`` — weight memory (shared by the batch),
* ``kv_bytes`` — KV-cache bytes *per sequence* at the full length
  ``2 * n_kv * head_dim * (prefill_len + decode_len) * bytes_per_element`` (0 without attention),
* ``prefill_s`` / ``decode_s`` — time to prefill ``prefill_len`` tokens and then run
  ``decode_len`` cached decode steps, per batch size.

Backends:

* ``"analytic"`` — deterministic roofline (used by tests);
* ``"measure"`` — wall clock on this machine, *in context* (paper §4.1: costs are measured for
  the real model at the target batch size and sequence length). For every variant v a
  homogeneous decoder with v in all L layers is timed (prefill, then cached decode: embedding,
  residual adds, cache growth, LM head and the per-layer Python dispatch included), as is the
  all-no-op decoder; the block cost is ``c_v = (T_v - T_noop) / L`` and the non-block cost is
  ``T_noop``. Warm-up, then the minimum over round-robin repeats (one call of every model per
  round, so load drifts hit all variants alike) with ``torch.set_num_threads(threads)``;
* ``"measure_subblocks"`` — each distinct attention and FFN subblock timed on its own and a
  block costed as the sum of its two subblocks (|A| + |F| timings, Puzzletron's subblock
  stats). Cheaper, but it misses everything between the subblocks and predicts whole-model time
  poorly on CPU; kept as the control for :func:`validate_costs`.

With identical
parent layers the cost depends only on the variant, so each variant is measured once and
broadcast to every layer (``CostTable.param_bytes`` etc. are still (L, K) so per-layer overrides
are possible). Non-block costs (embedding, final norm, LM head) are kept apart: the MIP subtracts
them from each budget and adds them back to totals (as Puzzletron does).
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from nas_puzzle.config import (
    AttentionConfig,
    BlockConfig,
    DecoderConfig,
    FFNConfig,
    _check_positive_float,
    _check_positive_int,
    _check_seed,
)
from nas_puzzle.model import AttentionSubblock, FFNSubblock, HeteroDecoder, rope_tables

__all__ = [
    "CostTable",
    "RooflineModel",
    "Scenario",
    "estimate",
    "time_round_robin",
    "validate_costs",
    "variant_num_params",
]

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
_BACKENDS = ("analytic", "measure", "measure_subblocks")


@dataclass(frozen=True)
class Scenario:
    """Deployment scenario the costs are measured for.

    Parameters
    ----------
    batch_sizes : tuple of int
        Batch sizes b to tabulate (the MIP solves one b at a time).
    prefill_len : int
        Prompt tokens per sequence.
    decode_len : int
        Generated tokens per sequence.
    dtype : {"float32", "float16", "bfloat16"}
    throughput_tokens : {"total", "generated"}
        Whether throughput counts prefill + generated tokens (paper) or only generated
        (Puzzletron).
    """

    batch_sizes: tuple[int, ...] = (1, 8, 32)
    prefill_len: int = 64
    decode_len: int = 64
    dtype: str = "float32"
    throughput_tokens: str = "total"

    def __post_init__(self) -> None:
        if isinstance(self.batch_sizes, (str, bytes)) or not isinstance(self.batch_sizes, Sequence):
            raise TypeError(f"batch_sizes must be a sequence of ints, got {self.batch_sizes!r}")
        bs = tuple(_check_positive_int(b, "batch_sizes") for b in self.batch_sizes)
        if not bs:
            raise ValueError("batch_sizes must list at least one batch size")
        if len(set(bs)) != len(bs):
            raise ValueError(f"batch_sizes has duplicates: {bs}")
        object.__setattr__(self, "batch_sizes", bs)
        object.__setattr__(
            self, "prefill_len", _check_positive_int(self.prefill_len, "prefill_len")
        )
        d = self.decode_len
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"decode_len must be an int, got {type(d).__name__}")
        if d < 0:
            raise ValueError(f"decode_len must be >= 0, got {d}")
        object.__setattr__(self, "decode_len", int(d))
        if not isinstance(self.dtype, str) or self.dtype not in _DTYPE_BYTES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPE_BYTES)}, got {self.dtype!r}")
        if not isinstance(self.throughput_tokens, str) or self.throughput_tokens not in (
            "total",
            "generated",
        ):
            raise ValueError(
                f"throughput_tokens must be 'total' or 'generated', got {self.throughput_tokens!r}"
            )

    @property
    def seq_len(self) -> int:
        """Total sequence length s = prefill + decode."""
        return self.prefill_len + self.decode_len

    @property
    def tokens_per_sequence(self) -> int:
        """Tokens counted by the throughput constraint."""
        return self.seq_len if self.throughput_tokens == "total" else self.decode_len

    @property
    def bytes_per_element(self) -> int:
        """Bytes of one parameter / cache element."""
        return _DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class RooflineModel:
    """Deterministic cost model: ``max(FLOPs / peak, bytes / bandwidth) + ops * overhead``.

    Defaults are rough 2-core-CPU numbers; only ratios matter for the search.
    """

    peak_flops: float = 5e10
    mem_bandwidth: float = 1e10
    op_overhead_s: float = 1e-5

    def __post_init__(self) -> None:
        for n in ("peak_flops", "mem_bandwidth"):
            object.__setattr__(self, n, _check_positive_float(getattr(self, n), n))
        o = self.op_overhead_s
        if isinstance(o, bool) or not isinstance(o, numbers.Real):
            raise TypeError(f"op_overhead_s must be a number, got {type(o).__name__}")
        if not 0 <= o < math.inf:
            raise ValueError(f"op_overhead_s must be >= 0 and finite, got {o}")
        object.__setattr__(self, "op_overhead_s", float(o))


def variant_num_params(cfg: DecoderConfig, block: BlockConfig) -> int:
    """Parameters of one block variant (norm weights included)."""
    if not isinstance(cfg, DecoderConfig):
        raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
    if not isinstance(block, BlockConfig):
        raise TypeError(
            f"block must be a BlockConfig (BlockConfig.from_name for a name), got {block!r}"
        )
    d, hd, a, f = cfg.d_model, cfg.head_dim, block.attention, block.ffn
    n = 0
    if a.kind == "gqa":
        n += d + 2 * d * cfg.n_heads * hd + 2 * d * a.n_kv_heads * hd
    elif a.kind == "linear":
        n += d + d * d
    if f.kind == "swiglu":
        n += d + 3 * d * f.intermediate
    elif f.kind == "linear":
        n += d + d * d
    return n


def _kv_per_token(cfg: DecoderConfig, block: BlockConfig, elem: int) -> int:
    a = block.attention
    return 2 * a.n_kv_heads * cfg.head_dim * elem if a.kind == "gqa" else 0


def _analytic_block(
    cfg: DecoderConfig, block: BlockConfig, scen: Scenario, b: int, rm: RooflineModel
) -> tuple[float, float]:
    elem = scen.bytes_per_element
    n_params = variant_num_params(cfg, block)
    pbytes = n_params * elem
    matmul_flops = 2 * n_params  # per token (norm weights are negligible)
    kvt = _kv_per_token(cfg, block, elem)
    a, f = block.attention, block.ffn
    attn_coef = 4 * cfg.n_heads * cfg.head_dim if a.kind == "gqa" else 0  # QK^T + AV per key
    ops = {"gqa": 8, "linear": 2, "noop": 0}[a.kind] + {"swiglu": 5, "linear": 2, "noop": 0}[f.kind]
    act = 4 * b * cfg.d_model * elem  # read + write of the residual stream per token
    P, D = scen.prefill_len, scen.decode_len
    flops = b * P * matmul_flops + b * attn_coef * P * (P + 1) / 2
    bytes_ = pbytes + b * P * (kvt + act / b)
    prefill = max(flops / rm.peak_flops, bytes_ / rm.mem_bandwidth) + ops * rm.op_overhead_s
    t = np.arange(P, P + D) + 1.0  # keys visible at each decode step
    flops_d = b * matmul_flops + b * attn_coef * t
    bytes_d = pbytes + b * t * kvt + act
    dec = np.maximum(flops_d / rm.peak_flops, bytes_d / rm.mem_bandwidth) + ops * rm.op_overhead_s
    return float(prefill), float(dec.sum())


def _analytic_non_block(
    cfg: DecoderConfig, scen: Scenario, b: int, rm: RooflineModel
) -> tuple[float, float]:
    elem, d, V = scen.bytes_per_element, cfg.d_model, cfg.vocab_size
    head_bytes = V * d * elem
    P, D = scen.prefill_len, scen.decode_len
    pre = max(2 * b * P * d * V / rm.peak_flops, (head_bytes + b * P * d * elem) / rm.mem_bandwidth)
    step = max(2 * b * d * V / rm.peak_flops, (head_bytes + b * d * elem) / rm.mem_bandwidth)
    return pre + 3 * rm.op_overhead_s, D * (step + 3 * rm.op_overhead_s)


def _subblock_runners(cfg: DecoderConfig, variant: object, scen: Scenario, b: int, dtype):
    """(prefill, decode) closures running one attention or FFN subblock on random inputs."""
    torch.manual_seed(0)
    is_attn = isinstance(variant, AttentionConfig)
    mod = (AttentionSubblock if is_attn else FFNSubblock)(cfg, variant).to(dtype).eval()
    cos, sin = (t.to(dtype) for t in rope_tables(cfg))
    P, D = scen.prefill_len, scen.decode_len
    x = torch.randn(b, P, cfg.d_model, dtype=dtype)
    xs = torch.randn(b, 1, cfg.d_model, dtype=dtype)

    def step(h, t0, cache=None):
        if is_attn:
            delta, cache = mod(h, cos[t0 : t0 + h.shape[1]], sin[t0 : t0 + h.shape[1]], cache)
        else:
            delta = mod(h)
        return (h if delta is None else h + delta), cache

    with torch.inference_mode():
        _, cache0 = step(x, 0)

    def prefill():
        return step(x, 0)

    def decode():
        c = cache0
        for t in range(P, P + D):
            _, c = step(xs, t, c)

    return prefill, decode


def _non_block_runners(cfg: DecoderConfig, scen: Scenario, b: int, dtype):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(cfg.vocab_size, cfg.d_model).to(dtype)
    norm = torch.nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps).to(dtype)
    P, D = scen.prefill_len, scen.decode_len
    tok = torch.randint(0, cfg.vocab_size, (b, P))

    def run(t):
        return norm(emb(t)) @ emb.weight.T

    def decode():
        for _ in range(D):
            run(tok[:, :1])

    return (lambda: run(tok)), decode


def _clock() -> float:
    """CPU seconds of this thread with one intra-op thread (blind to time the VM is descheduled),
    wall seconds otherwise (CPU time summed over threads is not latency)."""
    return time.thread_time() if torch.get_num_threads() == 1 else time.perf_counter()


def _model_runner(model: HeteroDecoder, scen: Scenario, b: int):
    """Closure timing one prefill of ``b`` prompts and the cached decode after it.

    Returns ``(prefill_s, decode_s)`` measured inside one call, so a single round-robin pass
    yields both phases.
    """
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, model.cfg.vocab_size, (b, scen.prefill_len), generator=g)
    model = model.eval()

    def run() -> tuple[float, float]:
        t0 = _clock()
        logits, cache = model.prefill(prompt)
        t1 = _clock()
        for _ in range(scen.decode_len):
            logits, cache = model.decode_step(logits.argmax(-1), cache)
        return t1 - t0, _clock() - t1

    return run


def _check_rel_ci(rel_ci: object) -> float | None:
    if rel_ci is None:
        return None
    if isinstance(rel_ci, bool) or not isinstance(rel_ci, numbers.Real) or not 0 < rel_ci < 1:
        raise ValueError(f"rel_ci must be in (0, 1), got {rel_ci!r}")
    return float(rel_ci)


@torch.inference_mode()
def time_round_robin(
    fns: Sequence,
    repeats: int = 5,
    rel_ci: float | None = None,
    max_repeats: int = 200,
    verbose: bool = False,
    desc: str = "timing",
) -> dict:
    """Time closures interleaved: warm-up, then one call of every closure per round.

    Each closure runs its workload and returns the seconds it measured (a float, or one value
    per phase such as ``(prefill_s, decode_s)``), so what is timed is up to the caller. One
    call of every closure per round means slow drifts in machine load hit them all alike.

    Parameters
    ----------
    fns : sequence of callables
        ``fn() -> float | sequence of float`` (the same number of phases for every closure).
    repeats : int, default=5
        Rounds to run (the minimum number of rounds when ``rel_ci`` is set).
    rel_ci : float, optional
        Keep adding rounds until, for every closure, the 95 % t-interval half-width of its mean
        total time is within ``rel_ci`` of that mean (e.g. 0.05), or ``max_repeats`` is reached.
    max_repeats : int, default=200
    verbose : bool, default=False
    desc : str
        Progress-bar label.

    Returns
    -------
    dict
        ``min`` (n, phases) per-phase minimum over rounds; ``total_min``, ``total_mean`` and
        ``total_ci_rel`` (n,) of the summed phases (the last is the interval half-width over the
        mean); ``rounds`` used and ``converged`` (every closure within ``rel_ci``; True when
        ``rel_ci`` is None).
    """
    from scipy.stats import t as student

    fns = list(fns)
    if not fns:
        raise ValueError("fns must hold at least one closure")
    if not all(callable(fn) for fn in fns):
        raise TypeError("fns must hold callables (closures returning their measured seconds)")
    repeats = _check_positive_int(repeats, "repeats")
    max_repeats = _check_positive_int(max_repeats, "max_repeats")
    rel_ci = _check_rel_ci(rel_ci)
    for fn in fns:  # warm-up
        fn()
    rows: list[np.ndarray] = []
    limit = repeats if rel_ci is None else max(repeats, max_repeats)
    bar = tqdm(total=limit, disable=not verbose, desc=desc)

    def spread(x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        if n < 2:
            return np.full(x.shape[1], np.inf)
        half = student.ppf(0.975, n - 1) * x.std(axis=0, ddof=1) / np.sqrt(n)
        return half / x.mean(axis=0)

    while len(rows) < limit:
        times = [np.atleast_1d(np.asarray(fn(), dtype=float)) for fn in fns]
        if len({t.shape for t in times}) != 1:
            raise ValueError("fns must all return the same number of phase times")
        rows.append(np.stack(times))
        bar.update()
        if rel_ci is not None and len(rows) >= max(repeats, 2):
            if np.all(spread(np.stack(rows).sum(axis=2)) <= rel_ci):
                break
    bar.close()
    t = np.stack(rows)  # (rounds, n, phases)
    tot = t.sum(axis=2)
    ci = spread(tot)
    return {
        "min": t.min(axis=0),
        "total_min": tot.min(axis=0),
        "total_mean": tot.mean(axis=0),
        "total_ci_rel": ci,
        "rounds": len(rows),
        "converged": True if rel_ci is None else bool(np.all(ci <= rel_ci)),
    }


def _time_models(fns: list, repeats: int, verbose: bool, desc: str) -> np.ndarray:
    """Per-phase minimum over round-robin repeats of (prefill, decode) runners, shape (n, 2)."""
    return time_round_robin(fns, repeats, verbose=verbose, desc=desc)["min"]


def _measure_round_robin(fns: list, repeats: int, verbose: bool) -> np.ndarray:
    """Minimum time of each untimed closure over round-robin repeats (see time_round_robin)."""

    def timed(fn):
        def run() -> float:
            t0 = _clock()
            fn()
            return _clock() - t0

        return run

    out = time_round_robin(
        [timed(fn) for fn in fns], repeats, verbose=verbose, desc="cost (measure)"
    )
    return out["min"][:, 0]


def _in_context(cfg, variants, scen, b, dtype, repeats, verbose):
    """Block costs from homogeneous decoders: c_v = (T_v - T_noop) / L per phase."""
    noop = BlockConfig(AttentionConfig("noop"), FFNConfig("noop"))
    distinct = list(dict.fromkeys([noop, *variants]))  # the no-op model is timed once, first
    with torch.random.fork_rng(devices=[]):  # weights are irrelevant to time; caller's RNG kept
        torch.manual_seed(0)
        models = [HeteroDecoder(cfg, [v] * cfg.n_layers).to(dtype) for v in distinct]
    t = _time_models([_model_runner(m, scen, b) for m in models], repeats, verbose, "cost")
    base = t[0]
    # a variant can time a hair under the no-op model (noise); costs stay non-negative
    c = np.maximum(t - base, 0.0) / cfg.n_layers
    c = c[[distinct.index(v) for v in variants]]
    return c[:, 0], c[:, 1], base[0], base[1]


def _cost_array(value: object, name: str, ndim: int | None = None) -> np.ndarray:
    """A float64 copy of a cost, checked finite and non-negative."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be numeric, got {type(value).__name__}") from e
    if isinstance(value, bool) or a.dtype == object:
        raise TypeError(f"{name} must be numeric, got {type(value).__name__}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has NaN or inf entries")
    if np.any(a < 0):
        raise ValueError(f"{name} has negative entries")
    return a


@dataclass
class CostTable:
    """Costs of every (layer, variant) for one scenario.

    Attributes
    ----------
    variants : list of BlockConfig
        Column order (K).
    scenario : Scenario
    param_bytes, kv_bytes, num_params : ndarray, shape (L, K)
        Weight bytes, KV-cache bytes per sequence, parameter count.
    prefill_s, decode_s : ndarray, shape (n_batch_sizes, L, K)
        Seconds per batch for each of ``scenario.batch_sizes``.
    non_block : dict
        ``param_bytes``, ``num_params`` (floats) and ``prefill_s``, ``decode_s`` (per batch size).
    backend : str
    """

    variants: list[BlockConfig]
    scenario: Scenario
    param_bytes: np.ndarray
    kv_bytes: np.ndarray
    num_params: np.ndarray
    prefill_s: np.ndarray
    decode_s: np.ndarray
    non_block: dict = field(default_factory=dict)
    backend: str = "analytic"

    def __post_init__(self) -> None:
        # a table is also built by hand (per-layer overrides, costs from another profiler):
        # every array is copied to float64 and checked against (L, K) and (n_batch_sizes, L, K)
        variants = list(self.variants) if isinstance(self.variants, Sequence) else None
        if not variants or not all(isinstance(v, BlockConfig) for v in variants):
            raise TypeError("variants must be a non-empty sequence of BlockConfig")
        if len(set(variants)) != len(variants):
            raise ValueError("variants has duplicates (a column must name one variant)")
        if not isinstance(self.scenario, Scenario):
            raise TypeError(f"scenario must be a Scenario, got {type(self.scenario).__name__}")
        self.variants = variants
        nb, K = len(self.scenario.batch_sizes), len(variants)
        L = None
        for name in ("param_bytes", "kv_bytes", "num_params", "prefill_s", "decode_s"):
            a = _cost_array(getattr(self, name), name)
            want = 2 if name in ("param_bytes", "kv_bytes", "num_params") else 3
            if a.ndim != want:
                raise ValueError(f"{name} must be {want}-D, got shape {a.shape}")
            L = a.shape[-2] if L is None else L
            shape = (L, K) if want == 2 else (nb, L, K)
            if a.shape != shape or L == 0:
                raise ValueError(
                    f"{name} has shape {a.shape}, expected {shape} "
                    f"(layers x {K} variants{'' if want == 2 else f', {nb} batch sizes first'})"
                )
            setattr(self, name, a)
        nbk = {"param_bytes", "num_params", "prefill_s", "decode_s"}
        if not isinstance(self.non_block, dict):
            raise TypeError(f"non_block must be a dict, got {type(self.non_block).__name__}")
        nbd = {"param_bytes": 0.0, "num_params": 0.0, "prefill_s": np.zeros(nb),
               "decode_s": np.zeros(nb)} | self.non_block  # fmt: skip
        if set(nbd) != nbk:
            raise ValueError(f"non_block has unknown keys {sorted(set(nbd) - nbk)}")
        for k in ("param_bytes", "num_params"):
            nbd[k] = float(_cost_array(nbd[k], f"non_block[{k!r}]", ndim=0))
        for k in ("prefill_s", "decode_s"):
            nbd[k] = _cost_array(nbd[k], f"non_block[{k!r}]", ndim=1)
            if nbd[k].shape != (nb,):
                raise ValueError(f"non_block[{k!r}] must have one value per batch size ({nb})")
        self.non_block = nbd
        if not isinstance(self.backend, str):
            raise TypeError(f"backend must be a str, got {type(self.backend).__name__}")

    @property
    def n_layers(self) -> int:
        """Number of layers L."""
        return self.param_bytes.shape[0]

    def b_index(self, batch_size: int) -> int:
        """Row of ``batch_size`` in the runtime arrays."""
        batch_size = _check_positive_int(batch_size, "batch_size")
        if batch_size not in self.scenario.batch_sizes:
            raise ValueError(
                f"batch_size={batch_size} was not measured; available {self.scenario.batch_sizes}"
            )
        return self.scenario.batch_sizes.index(batch_size)

    def runtime_s(self, batch_size: int) -> np.ndarray:
        """Prefill + decode seconds per (layer, variant), shape (L, K)."""
        k = self.b_index(batch_size)
        return self.prefill_s[k] + self.decode_s[k]

    def non_block_runtime_s(self, batch_size: int) -> float:
        """Seconds spent outside the blocks (embedding, final norm, LM head)."""
        k = self.b_index(batch_size)
        return float(self.non_block["prefill_s"][k] + self.non_block["decode_s"][k])

    def memory_bytes(self, batch_size: int) -> np.ndarray:
        """Weights + ``batch_size`` KV caches per (layer, variant), shape (L, K)."""
        return self.param_bytes + batch_size * self.kv_bytes

    def model_totals(self, indices: Sequence[int], batch_size: int) -> dict[str, float]:
        """Whole-model totals (non-block costs included) of one architecture."""
        idx = np.asarray(indices, dtype=int)
        rows = np.arange(self.n_layers)
        runtime = self.runtime_s(batch_size)[rows, idx].sum() + self.non_block_runtime_s(batch_size)
        params = self.param_bytes[rows, idx].sum() + self.non_block["param_bytes"]
        kv = self.kv_bytes[rows, idx].sum()
        return {
            "runtime_s": float(runtime),
            "latency_s": float(runtime),
            "throughput_tok_s": batch_size * self.scenario.tokens_per_sequence / float(runtime),
            "param_bytes": float(params),
            "kv_bytes": float(kv),
            "memory_bytes": float(params + batch_size * kv),
            "num_params": float(self.num_params[rows, idx].sum() + self.non_block["num_params"]),
        }


def estimate(
    variants: Sequence[BlockConfig] | object,
    cfg: DecoderConfig,
    scenario: Scenario,
    backend: str = "analytic",
    roofline: RooflineModel | None = None,
    threads: int | None = None,
    repeats: int = 5,
    verbose: bool = False,
) -> CostTable:
    """Tabulate costs of every variant for ``scenario``.

    Parameters
    ----------
    variants : sequence of BlockConfig or SearchSpace
        Columns; a ``SearchSpace`` means ``space.variants()``.
    cfg : DecoderConfig
    scenario : Scenario
    backend : {"analytic", "measure", "measure_subblocks"}
        See the module docstring; ``"measure"`` times every variant in context.
    roofline : RooflineModel, optional
        Constants of the analytic backend.
    threads : int, optional
        ``torch.set_num_threads`` while measuring (restored afterwards).
    repeats : int
        Timed repetitions per measurement (the minimum is kept).
    verbose : bool

    Returns
    -------
    CostTable
    """
    if hasattr(variants, "variants") and callable(variants.variants):
        variants = variants.variants()
    if isinstance(variants, str | BlockConfig) or not isinstance(variants, Sequence):
        raise TypeError(f"variants must be a sequence of BlockConfig, got {variants!r}")
    variants = list(variants)
    if not variants or not all(isinstance(v, BlockConfig) for v in variants):
        raise ValueError("variants must be a non-empty sequence of BlockConfig")
    if len(set(variants)) != len(variants):
        raise ValueError("variants has duplicates (a ScoreTable would refuse them)")
    if not isinstance(cfg, DecoderConfig):
        raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    if scenario.seq_len > cfg.max_seq_len:
        raise ValueError(
            f"scenario: prefill_len + decode_len = {scenario.seq_len} exceeds "
            f"max_seq_len={cfg.max_seq_len}"
        )
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
    repeats = _check_positive_int(repeats, "repeats")
    if threads is not None:
        threads = _check_positive_int(threads, "threads")
    if roofline is not None and not isinstance(roofline, RooflineModel):
        raise TypeError(f"roofline must be a RooflineModel, got {type(roofline).__name__}")
    rm = roofline or RooflineModel()
    L, K, nb = cfg.n_layers, len(variants), len(scenario.batch_sizes)
    elem = scenario.bytes_per_element
    nparams = np.array([variant_num_params(cfg, v) for v in variants], dtype=float)
    kv = np.array([_kv_per_token(cfg, v, elem) * scenario.seq_len for v in variants], float)
    pre, dec = np.zeros((nb, K)), np.zeros((nb, K))
    nb_pre, nb_dec = np.zeros(nb), np.zeros(nb)
    old_threads = torch.get_num_threads()
    dtype = getattr(torch, scenario.dtype)
    try:
        if backend != "analytic" and threads is not None:
            torch.set_num_threads(threads)
        for k, b in enumerate(scenario.batch_sizes):
            if backend == "analytic":
                for j, v in enumerate(variants):
                    pre[k, j], dec[k, j] = _analytic_block(cfg, v, scenario, b, rm)
                nb_pre[k], nb_dec[k] = _analytic_non_block(cfg, scenario, b, rm)
                continue
            if backend == "measure":
                pre[k], dec[k], nb_pre[k], nb_dec[k] = _in_context(
                    cfg, variants, scenario, b, dtype, repeats, verbose
                )
                continue
            # block cost = attention subblock + FFN subblock: measure the |A| + |F| distinct
            # subblocks (Puzzletron-style subblock stats) instead of |A| x |F| blocks, which
            # leaves time for more repeats and so less noise on a shared machine
            subs = list(dict.fromkeys([v.attention for v in variants] + [v.ffn for v in variants]))
            fns = []
            for sub in subs:
                fns.extend(_subblock_runners(cfg, sub, scenario, b, dtype))
            fns.extend(_non_block_runners(cfg, scenario, b, dtype))
            if scenario.decode_len == 0:
                fns = [f if i % 2 == 0 else (lambda: None) for i, f in enumerate(fns)]
            t = _measure_round_robin(fns, repeats, verbose)
            pos = {sub: i for i, sub in enumerate(subs)}
            for j, v in enumerate(variants):
                ia, jf = pos[v.attention], pos[v.ffn]
                pre[k, j] = t[2 * ia] + t[2 * jf]
                dec[k, j] = t[2 * ia + 1] + t[2 * jf + 1]
            nb_pre[k], nb_dec[k] = t[-2], t[-1]
    finally:
        torch.set_num_threads(old_threads)
    n_nb = cfg.vocab_size * cfg.d_model * (1 if cfg.tie_embeddings else 2) + cfg.d_model
    return CostTable(
        variants=variants,
        scenario=scenario,
        param_bytes=np.tile(nparams * elem, (L, 1)),
        kv_bytes=np.tile(kv, (L, 1)),
        num_params=np.tile(nparams, (L, 1)),
        prefill_s=np.repeat(pre[:, None, :], L, axis=1),
        decode_s=np.repeat(dec[:, None, :], L, axis=1),
        non_block={
            "param_bytes": float(n_nb * elem),
            "num_params": float(n_nb),
            "prefill_s": nb_pre,
            "decode_s": nb_dec,
        },
        backend=backend,
    )


def validate_costs(
    costs: CostTable,
    cfg: DecoderConfig,
    n_children: int = 10,
    batch_size: int | None = None,
    repeats: int = 5,
    threads: int | None = None,
    seed: int = 0,
    verbose: bool = False,
    rel_ci: float | None = None,
    max_repeats: int = 200,
) -> dict:
    """Check a cost table against measured whole-model time of random children.

    ``n_children`` architectures are drawn uniformly from ``costs.variants`` per layer, built as
    decoders (random weights: time does not depend on their values) and timed round-robin like
    the table (warm-up, minimum over ``repeats``), prefill + cached decode at the table's
    scenario, together with the parent (``cfg.parent_block`` in every layer).

    The table's budgets are fractions of the parent's cost, so the check is on parent-relative
    time: ``rel_err = (pred / pred_parent) / (meas / meas_parent) - 1``. This also cancels the
    machine's speed drift between the table's and this measurement (±30 % over minutes on a
    shared VM); ``abs_rel_err`` keeps the raw ``pred / meas - 1``.

    Parameters
    ----------
    costs : CostTable
    cfg : DecoderConfig
        Shape the table was measured for.
    n_children : int, default=10
    batch_size : int, optional
        One of ``costs.scenario.batch_sizes`` (default: the first).
    repeats : int, default=5
    threads : int, optional
        ``torch.set_num_threads`` while timing (restored afterwards).
    seed : int, default=0
    verbose : bool, default=False
    rel_ci : float, optional
        Repeat the round-robin until every model's 95 % interval of its mean time is within
        ``rel_ci`` of the mean (see :func:`time_round_robin`), at least ``repeats`` and at most
        ``max_repeats`` rounds.
    max_repeats : int, default=200

    Returns
    -------
    dict
        ``predicted_s``, ``measured_s`` (n_children,), ``rel_err`` (parent-relative, see
        above), ``abs_rel_err``, ``max_abs_rel_err`` (of ``rel_err``), ``spearman`` (predicted
        vs measured), ``names`` (per-child layer names), ``parent_predicted_s``,
        ``parent_measured_s``, ``kv_monotone`` (for every FFN variant, table cost never rises
        as KV heads fall), ``rounds`` (round-robin rounds run), ``ci_rel`` (per child, the
        interval half-width over the mean) and ``converged`` (all within ``rel_ci``).
    """
    from scipy.stats import spearmanr

    if not isinstance(costs, CostTable):
        raise TypeError(f"costs must be a CostTable, got {type(costs).__name__}")
    if not isinstance(cfg, DecoderConfig):
        raise TypeError(f"cfg must be a DecoderConfig, got {type(cfg).__name__}")
    if cfg.parent_block not in costs.variants:
        raise ValueError("costs.variants must contain cfg.parent_block (the reference model)")
    if costs.n_layers != cfg.n_layers:
        raise ValueError(f"costs has {costs.n_layers} layers, cfg has n_layers={cfg.n_layers}")
    n_children = _check_positive_int(n_children, "n_children")
    repeats = _check_positive_int(repeats, "repeats")
    max_repeats = _check_positive_int(max_repeats, "max_repeats")
    rel_ci = _check_rel_ci(rel_ci)
    if n_children < 2:
        raise ValueError(f"n_children must be >= 2 for a rank correlation, got {n_children}")
    if threads is not None:
        threads = _check_positive_int(threads, "threads")
    seed = _check_seed(seed)
    b = costs.scenario.batch_sizes[0] if batch_size is None else batch_size
    costs.b_index(b)  # raises for an unmeasured batch size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(costs.variants), size=(n_children, cfg.n_layers))
    idx = np.vstack([np.full(cfg.n_layers, costs.variants.index(cfg.parent_block)), idx])
    pred = np.array([costs.model_totals(row, b)["runtime_s"] for row in idx])
    dtype = getattr(torch, costs.scenario.dtype)
    old = torch.get_num_threads()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        with torch.random.fork_rng(devices=[]):  # leave the caller's RNG as it was
            torch.manual_seed(seed)
            models = [HeteroDecoder(cfg, [costs.variants[j] for j in row]) for row in idx]
        fns = [_model_runner(m.to(dtype), costs.scenario, b) for m in models]
        timed = time_round_robin(fns, repeats, rel_ci, max_repeats, verbose, "validate costs")
        meas = timed["min"].sum(axis=1)
    finally:
        torch.set_num_threads(old)
    rt = costs.runtime_s(b).mean(axis=0)
    kv_ok = True
    for f in {v.ffn for v in costs.variants}:
        gqa = sorted(
            (v.attention.n_kv_heads, rt[j])
            for j, v in enumerate(costs.variants)
            if v.ffn == f and v.attention.kind == "gqa"
        )
        kv_ok &= all(a[1] <= b_[1] for a, b_ in itertools.pairwise(gqa))
    rel = (pred[1:] / pred[0]) / (meas[1:] / meas[0]) - 1.0
    return {
        "predicted_s": pred[1:],
        "measured_s": meas[1:],
        "rel_err": rel,
        "abs_rel_err": pred[1:] / meas[1:] - 1.0,
        "max_abs_rel_err": float(np.abs(rel).max()),
        "spearman": float(spearmanr(pred[1:], meas[1:]).statistic),
        "names": [[costs.variants[j].name for j in row] for row in idx[1:]],
        "parent_predicted_s": float(pred[0]),
        "parent_measured_s": float(meas[0]),
        "kv_monotone": bool(kv_ok),
        "rounds": timed["rounds"],
        "ci_rel": timed["total_ci_rel"][1:],
        "converged": timed["converged"],
    }
