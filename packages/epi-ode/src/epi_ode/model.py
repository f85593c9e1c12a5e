"""EARTH: a graph neural controlled ODE with latent S/I/R compartments (EANO), a global-trend
state that re-estimates the transmission graph along the solve (GLTG), and a cross-attention
readout (spec §2, the reference code's architecture with its defects switched off)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
import torch.nn.functional as F
import torchcde
import torchdiffeq
from torch import nn

from epi_ode.graph import GLTGraph, sym_normalize
from epi_ode.validation import check_adjacency, check_int

__all__ = ["EARTH", "EARTHField"]

_SOLVERS = ("rk4", "euler", "midpoint", "dopri5")


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):  # bool("no") is True
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


class EARTHField(nn.Module):
    """Vector field of the joint CDE in (h, z, s, i, r): ``d(state)/dtau`` at one time.

    Every component's derivative is a matrix times ``F = f(h) dX/dtau``, so a constant control
    path (``dX/dtau = 0``) freezes the whole state.
    """

    def __init__(self, num_nodes, hidden, channels, a_bar, *, use_eano, use_gltg, infection,
                 dropout, sir_dropout, alpha=1.0, sir_bias=True):  # fmt: skip
        super().__init__()
        num_nodes = check_int(num_nodes, "num_nodes", 1)
        hidden, channels = check_int(hidden, "hidden", 1), check_int(channels, "channels", 1)
        if not isinstance(a_bar, torch.Tensor) or not a_bar.is_floating_point():
            raise TypeError("a_bar must be a float tensor (N, N), the normalised graph")
        if tuple(a_bar.shape) != (num_nodes, num_nodes) or not bool(torch.isfinite(a_bar).all()):
            raise ValueError(f"a_bar must be a finite (num_nodes, num_nodes) = ({num_nodes}, "
                             f"{num_nodes}) tensor, got shape {tuple(a_bar.shape)}")  # fmt: skip
        use_eano, use_gltg = _check_flag(use_eano, "use_eano"), _check_flag(use_gltg, "use_gltg")
        sir_bias = _check_flag(sir_bias, "sir_bias")
        if infection not in ("concat", "mass_action"):
            raise ValueError(f"infection must be 'concat' or 'mass_action', got {infection!r}")
        for name, v in (("dropout", dropout), ("sir_dropout", sir_dropout)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < 1:
                raise ValueError(f"{name} must be in [0, 1), got {v!r}")
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, numbers.Real)
            or not (math.isfinite(alpha) and alpha > 0)
        ):
            raise ValueError(f"alpha must be a positive finite number, got {alpha!r}")
        d, self.c = hidden, channels
        self.num_nodes, self.hidden = num_nodes, hidden
        self.use_eano, self.use_gltg, self.infection = use_eano, use_gltg, infection
        self.dropout, self.sir_dropout = dropout, sir_dropout
        self.f_in = nn.Linear(d, d)
        self.f_out = nn.Linear(d, d * channels)
        self.register_buffer("a_bar", a_bar)
        self.register_buffer("a_f", a_bar.clone())
        n_mat = int(use_gltg) + 3 * int(use_eano)  # compartments with a d x d field matrix
        self.mat_weight = nn.Parameter(torch.empty(n_mat, d, d * d))
        self.mat_bias = nn.Parameter(torch.empty(n_mat, d * d))
        bound = 1.0 / math.sqrt(d)  # nn.Linear's default initialisation, per compartment
        nn.init.uniform_(self.mat_weight, -bound, bound)
        nn.init.uniform_(self.mat_bias, -bound, bound)
        if use_gltg:
            self.graph = GLTGraph(num_nodes, d, alpha)
            self.trend_in = nn.Linear(d, d)
            self.trend_mix = nn.Linear(d, d, bias=False)
        if use_eano:
            # S-I transmission from [s ; A_t i], recovery from i; the reference's SIRLayer
            # declares biases but never adds them (sir_bias=False reproduces it)
            self.phi = nn.Linear(2 * d, d, bias=sir_bias)
            self.psi = nn.Linear(d, d, bias=sir_bias)
            if infection == "mass_action":
                self.beta = nn.Parameter(torch.zeros(d))
        self.control = None  # the torchcde spline of the current batch, set by EARTH
        self.locked_masks: dict[str, torch.Tensor] | None = None  # see EARTH._solve_coeffs

    def _drop(self, x: torch.Tensor, p: float, key: str) -> torch.Tensor:
        """Dropout; with locked masks (adaptive solvers) the same mask at every evaluation."""
        if not self.training or p == 0:
            return x
        if self.locked_masks is None:
            return F.dropout(x, p, True)
        mask = self.locked_masks.get(key)
        if mask is None or mask.shape != x.shape:
            mask = torch.bernoulli(torch.full_like(x, 1 - p)) / (1 - p)
            self.locked_masks[key] = mask
        return x * mask

    def layout(self) -> dict[str, int]:
        names = ["h"] + ["z"] * self.use_gltg + ["s", "i", "r"] * self.use_eano
        return {n: k for k, n in enumerate(names)}

    def transmission_graph(self, z: torch.Tensor | None) -> torch.Tensor:
        """A_t (B, N, N); the static normalised graph without GLTG."""
        if not self.use_gltg:
            return self.a_bar
        return self.graph(z, self.a_bar)

    def compartment_rates(self, s, i, a_t):
        """(phi_s, phi_i, phi_r), each (B, N, d); they sum to zero without dropout."""
        ai = a_t @ i
        if self.infection == "mass_action":
            inf = F.softplus(self.beta) * s * ai
        else:
            inf = self.phi(torch.cat([s, ai], dim=-1))
        rec = self.psi(i)
        out = (-inf, inf - rec, rec)
        return tuple(self._drop(o, self.sir_dropout, f"sir{k}") for k, o in enumerate(out))

    def forward(self, t, y):
        """y (B, N, K, d) -> dy/dtau (B, N, K, d)."""
        if self.control is None:
            raise RuntimeError("control: set field.control to the batch's torchcde spline first "
                               "(EARTH does this in forward)")  # fmt: skip
        want = (self.num_nodes, len(self.layout()), self.hidden)
        if not isinstance(y, torch.Tensor) or y.ndim != 4 or tuple(y.shape[1:]) != want:
            raise ValueError(f"y must be (B, {', '.join(map(str, want))}) = (batch, nodes, "
                             f"states, hidden), got {tuple(getattr(y, 'shape', ()))}")  # fmt: skip
        h = y[..., 0, :]
        dx = self.control.derivative(t)  # (B, N, c)
        fh = torch.tanh(self.f_out(F.relu(self.f_in(h))))
        fh = fh.unflatten(-1, (h.shape[-1], self.c))
        drive = (fh @ dx.unsqueeze(-1)).squeeze(-1)  # F = f(h) dX/dtau, (B, N, d)
        inputs, k = [], 1
        z = None
        if self.use_gltg:
            z = y[..., k, :]
            k += 1
            u = F.relu(self.trend_in(z))
            zt = u + self.a_f @ self.trend_mix(u)
            inputs.append(self._drop(zt, self.dropout, "trend"))
        if self.use_eano:
            s, i = y[..., k, :], y[..., k + 1, :]
            inputs.extend(self.compartment_rates(s, i, self.transmission_graph(z)))
        if not inputs:
            return drive.unsqueeze(-2)
        x = torch.stack(inputs, dim=0).flatten(1, 2)  # (K-1, B*N, d)
        # M_c = tanh(L_c x_c) as (K-1, B*N, d, d); one batched GEMM over the compartments
        m = torch.tanh(torch.baddbmm(self.mat_bias.unsqueeze(1), x, self.mat_weight))
        m = m.unflatten(-1, (h.shape[-1], h.shape[-1]))
        # M_c F as multiply-and-sum: faster than B*N*(K-1) tiny matrix-vector products
        rest = (m * drive.flatten(0, 1)[None, :, None, :]).sum(-1)
        rest = rest.transpose(0, 1).unflatten(0, drive.shape[:2])  # (B, N, K-1, d)
        return torch.cat([drive.unsqueeze(-2), rest], dim=-2)


class EARTH(nn.Module):
    """EARTH forecaster network (one horizon).

    Parameters
    ----------
    num_nodes : int
        Regions N.
    adjacency : array (N, N)
        Static geographic graph (non-negative; isolated nodes get a self-loop).
    hidden : int
        Latent width d (spec default 16 on CPU; the reference uses 128).
    heads : int
        Attention heads of the readout; must divide ``hidden``.
    ar_window : int
        Inputs of the autoregressive skip (the last ``ar_window`` values, shared across regions).
    infection : {"concat", "mass_action"}
        S-I term: the reference's linear map of ``[s ; A_t i]`` or ``softplus(beta) s * (A_t i)``.
    use_eano, use_gltg, use_cross_attention : bool
        Ablation switches of the paper's Table 2.
    dropout, sir_dropout : float in [0, 1)
        Dropout of the trend field and readout; dropout of each compartment rate.
    solver : {"rk4", "euler", "midpoint", "dopri5"}
        torchdiffeq method; fixed-step methods step on the observation grid.
    adjoint : bool
        Back-propagate with torchdiffeq's adjoint (less memory, same gradient to tolerance).
    time_channel : bool
        Keep the time as a control channel (reference) or drive by the values only.
    kv_compartments : tuple of {"s", "i", "r"}
        Tokens the trend attends to (reference: s and i).
    scale : {"model", "head"}
        Attention scores divided by sqrt(hidden) (reference) or sqrt(hidden / heads).
    ar_source : {"values", "time"}
        Autoregressive skip on the last values (intent) or on the time channel (reference bug).
    persistence_init : bool
        Zero the latent readout and set the skip to the last value, so that an untrained model
        forecasts persistence (ours; False keeps PyTorch's default initialisation, as the
        reference does).
    sir_bias : bool
        Biases in the transmission and recovery maps (ours); the reference declares them but
        never adds them (False reproduces it; ``tools/parity/epi-ode.py``).
    rtol, atol : float
        Tolerances of an adaptive solver (``dopri5``); torchdiffeq's defaults (1e-7 / 1e-9)
        make a fit crawl, these (1e-3 / 1e-4) are what adaptive neural-ODE training uses.
        Ignored by the fixed-step solvers.
    n_out : int
        Forecast steps emitted by the readout: 1 (the reference's single horizon, output
        (B, N)) or k (steps 1..k at once, output (B, k, N); ours, for trajectories).
    """

    def __init__(
        self,
        num_nodes: int,
        adjacency,
        hidden: int = 16,
        heads: int = 4,
        ar_window: int = 4,
        infection: str = "concat",
        use_eano: bool = True,
        use_gltg: bool = True,
        use_cross_attention: bool = True,
        dropout: float = 0.5,
        sir_dropout: float = 0.4,
        solver: str = "rk4",
        adjoint: bool = False,
        time_channel: bool = True,
        kv_compartments: tuple[str, ...] = ("s", "i"),
        scale: str = "model",
        ar_source: str = "values",
        persistence_init: bool = True,
        sir_bias: bool = True,
        rtol: float = 1e-3,
        atol: float = 1e-4,
        n_out: int = 1,
    ):
        super().__init__()
        for name, v in (("rtol", rtol), ("atol", atol)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < v < 1:
                raise ValueError(f"{name} must be in (0, 1), got {v!r}")
        self.rtol, self.atol = float(rtol), float(atol)
        self.n_out = check_int(n_out, "n_out", 1)
        self.num_nodes = check_int(num_nodes, "num_nodes", 1)
        self.hidden = check_int(hidden, "hidden", 1)
        self.heads = check_int(heads, "heads", 1)
        if hidden % heads:
            raise ValueError(f"hidden={hidden} must be divisible by heads={heads}")
        self.ar_window = check_int(ar_window, "ar_window", 1)
        for name, v, allowed in (
            ("infection", infection, ("concat", "mass_action")),
            ("solver", solver, _SOLVERS),
            ("scale", scale, ("model", "head")),
            ("ar_source", ar_source, ("values", "time")),
        ):
            if v not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {v!r}")
        for name, v in (("dropout", dropout), ("sir_dropout", sir_dropout)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < 1:
                raise ValueError(f"{name} must be in [0, 1), got {v!r}")
        kv = tuple(kv_compartments)
        if not kv or any(c not in ("s", "i", "r") for c in kv) or len(set(kv)) != len(kv):
            raise ValueError(f"kv_compartments must be distinct names among s, i, r, got {kv}")
        if ar_source == "time" and not time_channel:
            raise ValueError("ar_source='time' needs time_channel=True")
        A = check_adjacency(adjacency, num_nodes)
        self.use_eano = _check_flag(use_eano, "use_eano")
        self.use_gltg = _check_flag(use_gltg, "use_gltg")
        self.use_cross_attention = _check_flag(use_cross_attention, "use_cross_attention")
        self.solver, self.adjoint = solver, _check_flag(adjoint, "adjoint")
        self.time_channel = _check_flag(time_channel, "time_channel")
        self.kv_compartments, self.scale, self.ar_source = kv, scale, ar_source
        self.dropout = float(dropout)
        self.register_buffer("adjacency", torch.as_tensor(A, dtype=torch.float32))
        d, c = hidden, 2 if time_channel else 1
        self.channels = c
        self.field = EARTHField(num_nodes, d, c, sym_normalize(self.adjacency),
                                use_eano=self.use_eano, use_gltg=self.use_gltg,
                                infection=infection, dropout=dropout,
                                sir_dropout=sir_dropout, sir_bias=_check_flag(sir_bias, "sir_bias"))  # fmt: skip
        self.layout = self.field.layout()
        self.initial = nn.Linear(c, len(self.layout) * d)  # one map per latent state
        n_tok = len(kv) if self.use_eano else 1
        if self.use_cross_attention:
            self.q_proj, self.k_proj = nn.Linear(d, d), nn.Linear(d, d)
            self.v_proj, self.o_proj = nn.Linear(d, d), nn.Linear(d, d)
        else:
            self.fuse = nn.Linear((n_tok + 1) * d, d)
        self.out = nn.Linear(2 * d, self.n_out)
        self.ar = nn.Linear(self.ar_window, self.n_out)
        if persistence_init:  # start from y_hat = last value: the latent readout learns a residual
            with torch.no_grad():
                self.out.weight.zero_(), self.out.bias.zero_(), self.ar.bias.zero_()
                self.ar.weight.zero_()
                if ar_source == "values":
                    self.ar.weight[:, -1] = 1.0

    # ------------------------------------------------------------------ graphs
    def set_semantic_graph(self, semantic, normalization: str = "symmetric") -> EARTH:
        """Use the union of the geographic and semantic graphs in the global-trend field.

        ``normalization="symmetric"`` (default): ``D^{-1/2} U D^{-1/2}`` of the binary union U
        (spec §2.4). ``"reference"``: the official code's ``normalize_adj2`` of ``A + (S AND NOT
        A)`` (weights of A kept), which returns ``D^{-1/2} U^T D^{-1/2}`` with D the row sums of
        U: the transpose, different from the default wherever the DTW graph is asymmetric (a
        k-nearest graph usually is).
        """
        if normalization not in ("symmetric", "reference"):
            raise ValueError(
                f"normalization must be 'symmetric' or 'reference', got {normalization!r}"
            )
        S = check_adjacency(semantic, self.num_nodes, "semantic")
        A = self.adjacency.cpu().numpy()
        dtype = self.field.a_f.dtype  # a float64 model gets a float64 graph
        if normalization == "symmetric":
            union = np.maximum(A > 0, S > 0)
            a_f = sym_normalize(torch.as_tensor(union, dtype=dtype))
        else:
            union = torch.as_tensor(A + ((S > 0) & ~(A > 0)), dtype=dtype)
            a_f = sym_normalize(union).transpose(0, 1)  # D^-1/2 U^T D^-1/2, D from U's rows
            # sym_normalize scales rows and columns by the same D, so the transpose is exact
        self.field.a_f.copy_(a_f.to(self.field.a_f.dtype))
        return self

    # ------------------------------------------------------------------ inputs
    def control_coeffs(self, values, times=None, mask=None):
        """Natural cubic spline coefficients of the control path (B, N, W-1, 4c) and times (W,).

        The spline depends on the data only, so a training set's coefficients can be computed
        once (torchcde's missing-value path loops over series) and fed to
        :meth:`forward_coeffs`.
        """
        if not isinstance(values, torch.Tensor):
            values = torch.as_tensor(
                np.asarray(values, dtype=np.float32), device=self.adjacency.device
            )
        if not values.is_floating_point():
            raise TypeError(f"values must be a float tensor, got {values.dtype}")
        if values.ndim != 3 or values.shape[2] != self.num_nodes or 0 in values.shape:
            raise ValueError(
                f"values must be (B, W, N={self.num_nodes}), got {tuple(values.shape)}"
            )
        B, W, N = values.shape
        if W < max(4, self.ar_window):
            raise ValueError(f"values need W >= {max(4, self.ar_window)} steps, got {W}")
        if torch.isinf(values).any():
            raise ValueError("values contain inf")
        values = values.to(self.adjacency.dtype)
        if mask is not None:
            mask = torch.as_tensor(mask, device=values.device)
            if mask.dtype != torch.bool or mask.shape != values.shape:
                raise ValueError(f"mask must be a bool tensor of shape {tuple(values.shape)}")
            values = values.masked_fill(~mask, float("nan"))
        observed = (~torch.isnan(values)).sum(dim=1)  # (B, N)
        if (observed < 2).any():
            b, v = (observed < 2).nonzero()[0].tolist()
            raise ValueError(f"region {v} of window {b} has fewer than 2 observed values")
        if times is None:
            times = torch.arange(W, dtype=values.dtype, device=values.device)
        else:
            times = torch.as_tensor(times, dtype=values.dtype, device=values.device)
            if times.shape != (W,) or not torch.isfinite(times).all():
                raise ValueError(f"times must be ({W},) finite values, got {tuple(times.shape)}")
            if not (times[1:] > times[:-1]).all():
                raise ValueError("times must be strictly increasing")
        x = values.permute(0, 2, 1).unsqueeze(-1)  # (B, N, W, 1)
        if self.time_channel:
            x = torch.cat([times.expand(B, N, W).unsqueeze(-1), x], dim=-1)
        return torchcde.natural_cubic_coeffs(x, times), times

    def _control(self, values, times, mask):
        coeffs, times = self.control_coeffs(values, times, mask)
        return torchcde.CubicSpline(coeffs, times), times

    def _solve(self, values, times=None, mask=None):
        return self._solve_coeffs(*self.control_coeffs(values, times, mask))

    def _solve_coeffs(self, coeffs, times=None):
        if times is None:
            times = torch.arange(coeffs.shape[-2] + 1, dtype=coeffs.dtype, device=coeffs.device)
        spline = torchcde.CubicSpline(coeffs, times)
        x0 = spline.evaluate(times[0])  # (B, N, c)
        y0 = self.initial(x0).unflatten(-1, (len(self.layout), self.hidden))
        self.field.control = spline
        # An adaptive solver needs a deterministic right-hand side: fresh dropout masks at every
        # evaluation make its error estimate noise and its step size collapse (6,110 field
        # evaluations instead of 74 on a 20-step window). Masks are drawn once per solve there
        # (locked dropout, ours); fixed-step solvers keep the reference's per-evaluation masks.
        self.field.locked_masks = {} if self.solver == "dopri5" else None
        try:
            tol = {"rtol": self.rtol, "atol": self.atol} if self.solver == "dopri5" else {}
            if self.adjoint:
                traj = torchdiffeq.odeint_adjoint(
                    self.field, y0, times, method=self.solver,
                    adjoint_params=tuple(self.field.parameters()), **tol,
                )  # fmt: skip
            else:
                traj = torchdiffeq.odeint(self.field, y0, times, method=self.solver, **tol)
        finally:
            if not self.adjoint:  # the adjoint's backward pass re-reads the control path
                self.field.control = None
                self.field.locked_masks = None
        return traj, spline, times

    # ------------------------------------------------------------------ readout
    def _readout(self, state, spline, times):
        L, d = self.layout, self.hidden
        h = state[..., L["h"], :]
        q = state[..., L["z"], :] if self.use_gltg else h
        if self.use_eano:
            tokens = torch.stack([state[..., L[c], :] for c in self.kv_compartments], dim=-2)
        else:
            tokens = h.unsqueeze(-2)
        if self.use_cross_attention:
            H, dh = self.heads, d // self.heads
            qh = self.q_proj(q).unflatten(-1, (H, dh))  # (B, N, H, dh)
            kh = self.k_proj(tokens).unflatten(-1, (H, dh))  # (B, N, K, H, dh)
            vh = self.v_proj(tokens).unflatten(-1, (H, dh))
            norm = math.sqrt(d if self.scale == "model" else dh)
            att = torch.softmax(torch.einsum("bnhe,bnkhe->bnhk", qh, kh) / norm, dim=-1)
            att = F.dropout(att, self.dropout, self.training)
            mixed = torch.einsum("bnhk,bnkhe->bnhe", att, vh).flatten(-2)
            fused = self.o_proj(mixed) + q
        else:
            fused = self.fuse(torch.cat([q, tokens.flatten(-2)], dim=-1))
        fused = F.dropout(fused, self.dropout, self.training)
        last = spline.evaluate(times[-self.ar_window :])  # (B, N, ar, c), masked points filled
        ar_in = last[..., 0] if self.ar_source == "time" else last[..., -1]
        out = 0.5 * self.out(torch.cat([fused, h], dim=-1)) + self.ar(ar_in)  # (B, N, n_out)
        return out.squeeze(-1) if self.n_out == 1 else out.transpose(1, 2)

    def forward(self, values, times=None, mask=None) -> torch.Tensor:
        """Forecast (B, N) from normalised windows ``values`` (B, W, N).

        ``times`` (W,) strictly increasing observation times (default 0..W-1); NaN in ``values``
        or ``mask == False`` marks a missing point, left out of the control spline.
        """
        traj, spline, times = self._solve(values, times, mask)
        return self._readout(traj[-1], spline, times)

    def forward_coeffs(self, coeffs: torch.Tensor, times=None) -> torch.Tensor:
        """Forecast (B, N) from precomputed :meth:`control_coeffs` (times default 0..W-1)."""
        traj, spline, times = self._solve_coeffs(coeffs, times)
        return self._readout(traj[-1], spline, times)

    def trajectory(self, values, times=None, mask=None) -> dict[str, torch.Tensor]:
        """Latent states along the grid: name -> (W, B, N, d)."""
        traj, _, _ = self._solve(values, times, mask)
        return {name: traj[..., k, :] for name, k in self.layout.items()}

    @torch.no_grad()
    def graph_trace(self, values, times=None, mask=None) -> torch.Tensor:
        """A_t at every grid time, (W, B, N, N) (constant without GLTG)."""
        traj, _, _ = self._solve(values, times, mask)
        W, B = traj.shape[:2]
        if not self.use_gltg:
            return self.field.a_bar.expand(W, B, self.num_nodes, self.num_nodes).clone()
        z = traj[..., self.layout["z"], :]
        return self.field.graph(z.flatten(0, 1), self.field.a_bar).unflatten(0, (W, B))
