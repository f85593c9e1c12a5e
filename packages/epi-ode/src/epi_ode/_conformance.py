"""Public entry points and valid examples for the workspace conformance suite.

Not imported by the package: ``tests/conformance`` reads ``entries()``.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from epi_ode import EARTHForecaster, NeuralCDEForecaster
from epi_ode.baselines import ARRidge, GRUForecaster, Persistence
from epi_ode.data import load_colagnn, load_ilinet, read_wide_csv, save_colagnn
from epi_ode.graph import sym_normalize
from epi_ode.metrics import evaluate


def _series(T: int = 60, N: int = 3) -> np.ndarray:
    rng = np.random.default_rng(0)
    t = np.arange(T)[:, None]
    return 40 + 25 * np.sin(2 * np.pi * t / 20 + np.arange(N)) + rng.normal(0, 1, (T, N))


def _ilinet(folder) -> str:
    path = folder / "ILINet.csv"
    path.write_text(
        "PERCENTAGE OF VISITS FOR INFLUENZA-LIKE-ILLNESS REPORTED BY SENTINEL PROVIDERS\n"
        "REGION TYPE,REGION,YEAR,WEEK,% WEIGHTED ILI,ILITOTAL,TOTAL PATIENTS\n"
        "HHS Regions,Region 1,2020,52,1.5,100,5000\n"
        "HHS Regions,Region 2,2020,52,2.5,200,6000\n"
        "HHS Regions,Region 1,2020,53,1.6,110,5100\n"
        "HHS Regions,Region 2,2021,1,X,X,6100\n"
        "HHS Regions,Region 1,2021,1,1.4,90,5050\n"
    )
    return path


def entries() -> list[dict]:
    Y = _series()
    A = np.ones((3, 3))
    ctx = np.stack([Y[40:50], Y[44:54], Y[30:40]])
    common = {
        "fit": {"Y_train": Y, "adjacency": A},
        "not_sklearn": "fit(Y_train, adjacency) takes one multivariate series and a region graph",
        "methods": {"predict": {"context": ctx}},
        "arrays": {
            "Y_train": {"kind": "float", "ndim": 2, "nan_ok": True},  # NaN = a missing report
            "adjacency": {"kind": "float", "ndim": 2},
            "predict:context": {"kind": "float", "ndim": (2, 3), "nan_ok": True},
        },
        "rows": [["predict:context"], ["Y_train"]],
        "order": "equivariant",
        "min_rows": {"Y_train": 14},  # window + horizon + 2 rows of training series
    }
    out = [
        {"name": "ARRidge", "kind": "estimator", "cls": ARRidge,
         "init": {"window": 8, "horizon": 2},
         "params": {"window": {"type": "int", "bad": [3, 0]},
                    "horizon": {"type": "int", "bad": [0]},
                    "alpha": {"type": "float", "bad": [-1.0, float("nan")]},
                    "output": {"type": "str", "bad": ["path"]}},
         "grid": {"output": ["trajectory"]}, **common},
        {"name": "Persistence", "kind": "estimator", "cls": Persistence,
         "init": {"window": 8, "horizon": 2}, "grid": {"output": ["trajectory"]}, **common},
        {"name": "GRUForecaster", "kind": "estimator", "cls": GRUForecaster,
         "init": {"window": 8, "horizon": 2, "hidden": 4, "epochs": 2, "batch_size": 1},
         "params": {"hidden": {"type": "int", "bad": [0]},
                    "epochs": {"type": "int", "bad": [0]},
                    "batch_size": {"type": "int", "bad": [0]},
                    "device": {"type": "str", "bad": ["warp-drive"]}},
         "grid": {"output": ["trajectory"]}, **common},
        {"name": "NeuralCDEForecaster", "kind": "estimator", "cls": NeuralCDEForecaster,
         "init": {"window": 8, "horizon": 2, "hidden": 4, "epochs": 1, "batch_size": 4},
         "params": {"hidden": {"type": "int", "bad": [0]},
                    "epochs": {"type": "int", "bad": [0]},
                    "solver": {"type": "str", "bad": ["rk45"]}},
         "grid": {"output": ["trajectory"], "solver": ["euler"]}, **common},
        {"name": "EARTHForecaster", "kind": "estimator", "cls": EARTHForecaster,
         "init": {"window": 8, "horizon": 2, "epochs": 1, "hidden": 8, "heads": 2,
                  "dtw_neighbors": 1, "output": "trajectory"},
         "params": {"heads": {"type": "int", "bad": [3]},
                    "device": {"type": "str", "bad": ["warp-drive"]},
                    "dropout": {"type": "float", "bad": [1.0, -0.1]},
                    "rtol": {"type": "float", "bad": [0.0]},
                    "solver": {"type": "str", "bad": ["rk45"]}},
         "grid": {"dtw_keep": ["farthest"], "infection": ["mass_action"], "use_eano": [False],
                  "use_gltg": [False], "use_cross_attention": [False],
                  "solver": ["euler", "midpoint", "dopri5"], "time_channel": [False],
                  "ar_source": ["time"], "persistence_init": [False], "output": ["direct"],
                  "sir_bias": [False], "adjoint": [True]}, **common},
    ]  # fmt: skip
    A = torch.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 1.0], [0.0, 1.0, 1.0]], dtype=torch.float64)
    out.append(
        {
            "name": "sym_normalize",
            "call": sym_normalize,
            "kwargs": {"A": A},
            "arrays": {"A": {"kind": "float", "ndim": (2, 3)}},
            "known": [
                {"kwargs": {"A": torch.eye(3, dtype=torch.float64)},
                 "check": lambda out: torch.allclose(out, torch.eye(3, dtype=torch.float64)),
                 "why": "the identity is its own normalisation"},
                {"kwargs": {"A": torch.tensor([[0.0, 1.0], [0.0, 0.0]])}, "raises": ["A"],
                 "why": "an isolated region (zero row)"},
            ],
        }
    )  # fmt: skip
    out.append(
        {
            "name": "evaluate",
            "call": evaluate,
            "kwargs": {"y_true": Y[:20], "y_pred": Y[:20] + 1.0},
            "arrays": {"y_true": {"kind": "float", "nan_ok": True}, "y_pred": "float"},
            "rows": [["y_true", "y_pred"]],
            "order": "invariant",
            "min_rows": 2,
        }
    )

    def write_colagnn(folder):
        save_colagnn(folder / "x.txt", Y, folder / "x-adj.txt", A)
        return folder / "x.txt"

    out += [
        {
            "name": "load_colagnn",
            "kind": "loader",
            "write": write_colagnn,
            "read": lambda p: load_colagnn(p, p.with_name("x-adj.txt")),
            "check": lambda r: np.testing.assert_allclose(r[0], Y, rtol=1e-15),
            "export": lambda r, folder: (
                (
                    folder.mkdir(),
                    save_colagnn(folder / "x.txt", r[0], folder / "x-adj.txt", r[1]),
                )
                and folder / "x.txt"
            ),
            # plain text without a row count: a cut at a row boundary is a shorter, valid file,
            # so truncation is checked through the ragged last row it usually leaves
            "corrupt": [
                "header",
                "empty",
                ("ragged-last-row", lambda p: p.write_text(p.read_text().rsplit(",", 1)[0] + "\n")),
                ("mixed-delimiter", lambda p: p.write_text(p.read_text().replace(",", ";", 1))),
            ],
        },
        {
            "name": "read_wide_csv",
            "kind": "loader",
            "write": lambda f: (f / "w.csv").write_text("a,b\n1,2\n3,\n5,6\n") and f / "w.csv",
            "read": read_wide_csv,
            "check": lambda r: (
                np.testing.assert_array_equal(r[0], [[1, 2], [3, np.nan], [5, 6]])
                or r[1] == ["a", "b"]
            ),
            "corrupt": [
                "empty",
                ("ragged", lambda p: p.write_text("a,b\n1,2\n3\n")),
                ("text-field", lambda p: p.write_text("a,b\n1,2\n3,x4\n")),
            ],
        },
        {
            "name": "load_ilinet",
            "kind": "loader",
            "write": _ilinet,
            "read": load_ilinet,
            "check": lambda s: np.testing.assert_array_equal(
                s.values, [[100, 200], [110, np.nan], [90, np.nan]]
            ),
            "corrupt": [
                "truncate",
                "empty",
                "header",
                (
                    "duplicate-week",
                    lambda p: p.write_text(p.read_text() + p.read_text().splitlines()[-1] + "\n"),
                ),
                ("negative", lambda p: p.write_text(p.read_text().replace(",90,", ",-90,"))),
            ],
        },
    ]
    return [*out, *_module_entries(), *_field_entries()]


@functools.cache
def _earth(solver: str = "rk4") -> torch.nn.Module:
    """A small eval-mode EARTH module on a 3-region ring, built once (outside device runs)."""
    from epi_ode import EARTH

    torch.manual_seed(0)
    A = np.ones((3, 3)) - np.eye(3)
    return EARTH(3, A, hidden=4, heads=1, solver=solver).eval()


def _earth_forward(values, solver="rk4"):
    with torch.no_grad():
        return _earth(solver)(values)


_GLT = None


def _glt_module():
    """A GLTGraph on 3 regions with hidden size 4 and a non-zero gate, built once."""
    global _GLT
    if _GLT is None:
        from epi_ode import GLTGraph

        torch.manual_seed(0)
        _GLT = GLTGraph(3, 4)
        with torch.no_grad():
            _GLT.gate_weight.normal_()
    return _GLT


def _glt(z, a_bar):
    with torch.no_grad():
        return _glt_module()(z, a_bar)


def _glt_closed_form(z, a_bar):
    """softmax_rows(Abar C + Ahat (1 - C)) written out from the module's weights."""
    m = _glt_module()
    with torch.no_grad():
        p = torch.tanh(m.alpha * (z @ m.w1.weight.T + m.w1.bias))
        q = torch.tanh(m.alpha * (z @ m.w2.weight.T + m.w2.bias))
        s = p @ q.transpose(-1, -2)
        a = torch.relu(torch.tanh(m.alpha * (s - s.transpose(-1, -2))))
        a = a / a.norm(dim=-2, keepdim=True).clamp_min(1e-12)
        c = torch.sigmoid(a @ m.gate_weight + m.gate_bias)
        return torch.softmax(a_bar * c + a * (1 - c), dim=-1)


def _module_entries() -> list[dict]:
    """EARTH's forward pass on a batch of windows (B, W, N): determinism, pickling, the shadow
    accelerator with CPU-equal values, bf16. Its control_coeffs validates the values."""
    g = torch.Generator().manual_seed(0)
    values = torch.randn(2, 8, 3, generator=g)
    z = torch.randn(2, 3, 4, generator=g)
    a_bar = sym_normalize(torch.ones(3, 3) + torch.eye(3))
    return [
        {"name": "GLTGraph", "call": _glt, "kwargs": {"z": z, "a_bar": a_bar},
         "modules": lambda: [_glt_module()],
         "arrays": {"z": {"kind": "float", "ndim": 3}, "a_bar": {"kind": "float", "ndim": 2}},
         "rows": [["z"]], "order": "equivariant",
         "known": [{"kwargs": {"z": z, "a_bar": a_bar},
                    "check": lambda out: torch.allclose(out, _glt_closed_form(z, a_bar), atol=1e-6)
                    and torch.allclose(out.sum(-1), torch.ones(2, 3)),
                    "why": "spec 2.2's construction written out; rows sum to one"},
                   {"kwargs": {"z": z[:, :2], "a_bar": a_bar}, "raises": ["z"],
                    "why": "z with 2 regions for a 3-region graph"},
                   {"kwargs": {"z": z, "a_bar": a_bar[:2]}, "raises": ["a_bar"],
                    "why": "a_bar of the wrong shape"}]},
        {"name": "EARTH.forward", "call": _earth_forward, "kwargs": {"values": values},
         "modules": lambda: [_earth("rk4"), _earth("euler")],
         "arrays": {"values": {"kind": "float", "ndim": 3, "nan_ok": True}},  # NaN = missing
         "rows": [["values"]],
         "order": "equivariant", "grid": {"solver": ["euler"]}},
    ]  # fmt: skip


_FIELD: dict = {}


def _field_module():
    """One EARTHField over a 3-node ring, built once in float64 (the device runs move it)."""
    from epi_ode import EARTHField

    if not _FIELD:
        with torch.device("cpu"):
            torch.manual_seed(0)
            a = sym_normalize(torch.ones(3, 3, dtype=torch.float64))
            _FIELD["m"] = EARTHField(3, 4, 1, a, use_eano=True, use_gltg=True,
                                     infection="concat", dropout=0.0,
                                     sir_dropout=0.0).double().eval()  # fmt: skip
    return _FIELD["m"]


def _field(path, y, t=0.5):
    import torchcde

    m = _field_module()
    times = torch.linspace(0, 1, path.shape[-2], dtype=path.dtype, device=path.device)
    m.control = torchcde.CubicSpline(torchcde.natural_cubic_coeffs(path, times), times)
    try:
        with torch.no_grad():
            return m(torch.tensor(t, dtype=path.dtype, device=path.device), y)
    finally:
        m.control = None


def _new_field(**kw):
    from epi_ode import EARTHField

    a = sym_normalize(torch.ones(3, 3, dtype=torch.float64))
    args = {
        "num_nodes": 3,
        "hidden": 4,
        "channels": 1,
        "a_bar": a,
        "use_eano": True,
        "use_gltg": False,
        "infection": "concat",
        "dropout": 0.0,
        "sir_dropout": 0.0,
    } | kw
    return EARTHField(**args).layout()


def _field_entries() -> list[dict]:
    g = torch.Generator().manual_seed(4)
    path = torch.randn(2, 5, 3, 1, generator=g, dtype=torch.float64).cumsum(1)  # (B, T, N, c)
    path = path.permute(0, 2, 1, 3)  # (B, N, T, c): one control path per node
    y = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)  # h, z, s, i, r
    flat = torch.ones_like(path)
    return [
        {"name": "EARTHField.forward", "call": _field, "kwargs": {"path": path, "y": y},
         "modules": lambda: [_field_module()],
         "known": [{"kwargs": {"path": flat, "y": y},
                    "check": lambda d: torch.allclose(d, torch.zeros_like(d), atol=1e-12),
                    "why": "a constant control path (dX/dtau = 0) freezes the whole state"},
                   {"kwargs": {"path": path, "y": y[:, :, :3]}, "raises": ["y"], "check": None,
                    "why": "three latent states where the field has five (h, z, s, i, r)"}]},
        {"name": "EARTHField", "call": _new_field, "kwargs": {},
         "params": {"num_nodes": {"type": "int", "bad": [0, 2, 3.0], "good": 3},
                    "hidden": {"type": "int", "bad": [0, 4.0], "good": 4},
                    "channels": {"type": "int", "bad": [0], "good": 1},
                    "use_eano": {"bad": ["no", 1]}, "use_gltg": {"bad": [None]},
                    "infection": {"bad": ["sir"]},
                    "dropout": {"type": "float", "bad": [1.0, -0.1, float("nan")], "good": 0.0},
                    "sir_dropout": {"type": "float", "bad": [1.5], "good": 0.0},
                    "alpha": {"type": "float", "bad": [0.0, float("inf")], "good": 1.0},
                    "a_bar": {"bad": [np.eye(3), torch.eye(3, dtype=torch.long),
                                      torch.full((3, 3), float("nan"))]}},
         "known": [{"kwargs": {"use_gltg": True},
                    "check": lambda r: r == {"h": 0, "z": 1, "s": 2, "i": 3, "r": 4},
                    "why": "state order h, z (GLTG), s, i, r (EANO)"},
                   {"kwargs": {"use_eano": False}, "check": lambda r: r == {"h": 0},
                    "why": "without either mechanism only the CDE state h"}]},
    ]  # fmt: skip
