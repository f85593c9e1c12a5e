"""System-aware unlearning via selective sampling (Lu, Sekhari & Sridharan, ICML 2025).

Learners that store only the points they queried, so that deleting a stored point is undone
exactly and deleting any other point needs no work; plus the baselines they are compared with.
"""

from sys_unlearn.audit import AuditReport, audit_unlearning, states_equal
from sys_unlearn.datasets import make_margin_stream
from sys_unlearn.demo import demo
from sys_unlearn.newton import NewtonRemovalLogisticRegression
from sys_unlearn.oracle import OracleSelectiveSamplingClassifier, memory_bound
from sys_unlearn.retrain import RetrainingClassifier
from sys_unlearn.selective import SelectiveSamplingClassifier
from sys_unlearn.sisa import SISAClassifier

__all__ = [
    "AuditReport",
    "NewtonRemovalLogisticRegression",
    "OracleSelectiveSamplingClassifier",
    "RetrainingClassifier",
    "SISAClassifier",
    "SelectiveSamplingClassifier",
    "__version__",
    "audit_unlearning",
    "demo",
    "make_margin_stream",
    "memory_bound",
    "states_equal",
]

__version__ = "0.1.0"
