"""Data: the metapopulation simulator, forecast windows, the DTW graph and file loaders."""

from epi_ode.dtw import dtw_distances, dtw_graph
from epi_ode.io import (
    EpiSeries,
    epiweek_range,
    load_colagnn,
    load_ilinet,
    read_wide_csv,
    save_colagnn,
)
from epi_ode.simulator import Simulation, simulate_metapopulation
from epi_ode.windows import MinMax, Windows, make_windows, window_indices

__all__ = [
    "EpiSeries",
    "MinMax",
    "Simulation",
    "Windows",
    "dtw_distances",
    "dtw_graph",
    "epiweek_range",
    "load_colagnn",
    "load_ilinet",
    "make_windows",
    "read_wide_csv",
    "save_colagnn",
    "simulate_metapopulation",
    "window_indices",
]
