"""CCA-Attention and Querent-style query-aware region attention.

Drop-in sparse attention operators shaped like ``torch.nn.functional.scaled_dot_product_attention``
with exact dense fallbacks, KV-cache decoding and a model-swap helper.
"""

from sparse_attn.baselines import dense_attention, sink_window_attention, sliding_window_attention
from sparse_attn.cache import (
    CCAKVCache,
    DenseKVCache,
    KVCache,
    SinkWindowKVCache,
    analytic_cache_entries,
)
from sparse_attn.cca import (
    CCAStats,
    cca_attention,
    cca_core_tokens,
    cca_num_visible_cores,
    cca_stats,
    cca_visibility,
)
from sparse_attn.demo import demo
from sparse_attn.hf import CCACacheError, swap_llama_attention
from sparse_attn.mil import ABMIL, MeanPoolMIL, QuerentLayer, QuerentMIL, TransMILStyle, fit_mil
from sparse_attn.models import TinyLlama, TinyLlamaConfig, swap_attention
from sparse_attn.modules import CCAAttention, QuerentAttention, SelfAttention, apply_rope
from sparse_attn.region import (
    RegionScoreEstimator,
    RegionStats,
    attend_selected_regions,
    grid_regions,
    region_attention,
    region_metadata,
)
from sparse_attn.tasks import associative_recall_batch, passkey_batch
from sparse_attn.wsi import Bag, load_feature_bag, make_wsi_bags

__all__ = [
    "ABMIL",
    "Bag",
    "CCAAttention",
    "CCACacheError",
    "CCAKVCache",
    "CCAStats",
    "DenseKVCache",
    "KVCache",
    "MeanPoolMIL",
    "QuerentAttention",
    "QuerentLayer",
    "QuerentMIL",
    "RegionScoreEstimator",
    "RegionStats",
    "SelfAttention",
    "SinkWindowKVCache",
    "TinyLlama",
    "TinyLlamaConfig",
    "TransMILStyle",
    "__version__",
    "analytic_cache_entries",
    "apply_rope",
    "associative_recall_batch",
    "attend_selected_regions",
    "cca_attention",
    "cca_core_tokens",
    "cca_num_visible_cores",
    "cca_stats",
    "cca_visibility",
    "demo",
    "dense_attention",
    "fit_mil",
    "grid_regions",
    "load_feature_bag",
    "make_wsi_bags",
    "passkey_batch",
    "region_attention",
    "region_metadata",
    "sink_window_attention",
    "sliding_window_attention",
    "swap_attention",
    "swap_llama_attention",
]

__version__ = "0.1.0"
