"""Short demo of the package's main job, used by ``aware-ml demo``."""

from sys_unlearn.datasets import make_margin_stream

__all__ = ["demo"]


def demo(seed: int = 0) -> str:
    """Fit on a margin stream, delete 50 stored points, compare with retraining and SISA.

    Parameters
    ----------
    seed : int, default=0
        Random seed for the generated data.

    Returns
    -------
    str
        A plain-text table: accuracy, stored fraction, memory and time per deletion, with
        ratios against full retraining.
    """
    from sys_unlearn.audit import audit_unlearning
    from sys_unlearn.experiment import deletion_experiment, format_table
    from sys_unlearn.newton import NewtonRemovalLogisticRegression
    from sys_unlearn.retrain import RetrainingClassifier
    from sys_unlearn.selective import SelectiveSamplingClassifier
    from sys_unlearn.sisa import SISAClassifier

    X, y = make_margin_stream(22_000, 20, margin=0.1, label_noise=0.02, random_state=seed)
    X, X_test, y, y_test = X[:20_000], X[20_000:], y[:20_000], y[20_000:]
    ours = SelectiveSamplingClassifier(kappa=0.3).fit(X, y)
    delete = ours.stored_ids_[:: max(1, len(ours.stored_ids_) // 50)][:50]  # worst case: core set
    methods = {
        "selective (Alg. 1)": SelectiveSamplingClassifier(kappa=0.3),
        "full retraining": RetrainingClassifier(),
        "SISA (5 shards)": SISAClassifier(n_shards=5, random_state=seed),
        "Newton removal (LR)": NewtonRemovalLogisticRegression(lam=1e-4),
    }
    rows = deletion_experiment(methods, X, y, X_test, y_test, delete, checkpoints=(0, 50))
    report = audit_unlearning(ours.unlearn(delete), X, y, delete, X_eval=X_test)
    return (
        f"margin stream n=20000 d=20, 50 deletions from the selective sampler's core set\n"
        f"{format_table(rows, reference='full retraining')}\n"
        f"audit: exact={report.exact} (max state diff {report.max_state_diff:.1e}), "
        f"agreement with full retraining on S\\U {report.retrain_agreement:.3f}"
    )
