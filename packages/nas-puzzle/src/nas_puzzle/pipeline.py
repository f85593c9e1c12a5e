"""One-object Puzzle pipeline: library -> scores -> costs -> MIP -> child -> GKD (spec §2.8).

Steps 1-2 (library, scores) are done once; :meth:`Puzzle.measure` / :meth:`Puzzle.search`
can be re-run for any new scenario or budget ("train once, adapt on demand").
"""

from __future__ import annotations

import numbers

from torch import Tensor

from nas_puzzle.assemble import realize
from nas_puzzle.bld import BlockLibrary, build_library
from nas_puzzle.cost import CostTable, Scenario, estimate
from nas_puzzle.data import as_tokens
from nas_puzzle.gkd import uptrain
from nas_puzzle.mip import Constraints, Solution, solve, sweep_batch_sizes
from nas_puzzle.model import HeteroDecoder
from nas_puzzle.scoring import ScoreTable, replace_one_block
from nas_puzzle.search_space import SearchSpace

__all__ = ["Puzzle"]


class Puzzle:
    """Chainable driver of the whole method.

    Parameters
    ----------
    parent : HeteroDecoder
        Trained homogeneous parent.
    space : SearchSpace, optional
        Default ``SearchSpace.paper_default(parent.cfg)``.
    data, val_data : str or Tensor (n,)
        Distillation / uptraining text and held-out scoring text.
    scenario : Scenario, optional
        Default ``Scenario(batch_sizes=(8,), prefill_len, decode_len = max_seq_len // 2)``.
    seed : int
    verbose : bool

    Examples
    --------
    >>> pz = Puzzle(parent, data=train, val_data=val)                     # doctest: +SKIP
    >>> child = pz.build_library().score().measure().search(cons).realize().uptrain(steps=300)
    """

    def __init__(
        self,
        parent: HeteroDecoder,
        space: SearchSpace | None = None,
        data: str | Tensor | None = None,
        val_data: str | Tensor | None = None,
        scenario: Scenario | None = None,
        seed: int = 0,
        verbose: bool = False,
    ) -> None:
        if not isinstance(parent, HeteroDecoder):
            raise TypeError(f"parent must be a HeteroDecoder, got {type(parent).__name__}")
        if data is None or val_data is None:
            raise ValueError("data and val_data are required")
        for name, toks in (("data", data), ("val_data", val_data)):
            n = as_tokens(toks, name).numel()  # names the argument: dtype, ndim, empty
            if n < 2:
                raise ValueError(f"{name} holds {n} token: next-token scoring needs at least 2")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        seed = int(seed)
        self.parent = parent
        self.space = space or SearchSpace.paper_default(parent.cfg)
        half = parent.cfg.max_seq_len // 2
        self.scenario = scenario or Scenario(batch_sizes=(8,), prefill_len=half, decode_len=half)
        self.data, self.val_data, self.seed, self.verbose = data, val_data, seed, verbose
        self.library: BlockLibrary | None = None
        self.scores: ScoreTable | None = None
        self.costs: CostTable | None = None
        self.solution: Solution | None = None
        self.child: HeteroDecoder | None = None

    def _need(self, attr: str, step: str) -> None:
        if getattr(self, attr) is None:
            raise RuntimeError(f"call {step}() first")

    def build_library(self, **kwargs) -> Puzzle:
        """Run :func:`~nas_puzzle.bld.build_library` (keyword arguments are passed on)."""
        kwargs.setdefault("seed", self.seed)
        kwargs.setdefault("verbose", self.verbose)
        self.library = build_library(self.parent, self.space, self.data, **kwargs)
        return self

    def score(self, **kwargs) -> Puzzle:
        """Replace-1-block scores on ``val_data``."""
        self._need("library", "build_library")
        kwargs.setdefault("verbose", self.verbose)
        self.scores = replace_one_block(self.parent, self.library, self.val_data, **kwargs)
        return self

    def measure(self, backend: str = "analytic", **kwargs) -> Puzzle:
        """Per-variant costs for ``self.scenario``."""
        self.costs = estimate(self.space, self.parent.cfg, self.scenario, backend=backend, **kwargs)
        return self

    def search(self, cons: Constraints, batch_size: int | None = None, **kwargs) -> Puzzle:
        """MIP for ``cons``; with several scenario batch sizes and none given, keep the best."""
        self._need("scores", "score")
        self._need("costs", "measure")
        if batch_size is None and len(self.scenario.batch_sizes) > 1:
            self.solution = sweep_batch_sizes(self.scores, self.costs, cons, **kwargs)
        else:
            self.solution = solve(self.scores, self.costs, cons, batch_size=batch_size, **kwargs)
        return self

    def realize(self) -> Puzzle:
        """Assemble the child of the last search."""
        self._need("solution", "search")
        self.child = realize(self.parent, self.library, self.solution)
        return self

    def uptrain(self, **kwargs) -> HeteroDecoder:
        """GKD of the realized child; returns (and stores) the uptrained child."""
        self._need("child", "realize")
        kwargs.setdefault("seed", self.seed)
        kwargs.setdefault("verbose", self.verbose)
        self.child = uptrain(self.child, self.parent, self.data, **kwargs)
        return self.child
