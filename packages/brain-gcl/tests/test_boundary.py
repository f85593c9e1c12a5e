"""Data the way users hold it, and the options of the diagnosis (ROI-aware extractor, own-site
invariance): loader safety, nilearn vectors, PyG round trip, parameter checks."""

import warnings

import numpy as np
import pytest
import torch

from brain_gcl import CIAGCL, GIN, CIGALike, infer_environments
from brain_gcl.data import (
    build_graphs,
    connectivity_from_vectors,
    load_connectomes,
    make_multisite_connectomes,
)
from brain_gcl.extractor import EdgeScorer
from brain_gcl.metrics import edge_recovery


@pytest.fixture(scope="module")
def small():
    d = make_multisite_connectomes(n_rois=12, n_sites=3, subjects_per_site=16, inv_size=4,
                                   sp_size=4, site_size=3, rho=(0.9, 0.6, 0.1), seed=2)  # fmt: skip
    return d, build_graphs(d.fc, density=0.3, node_features="profile")


def _pheno(tmp_path, ids):
    rows = ["SUB_ID,DX_GROUP,SITE_ID"] + [f"{s},{1 + k % 2},NYU" for k, s in enumerate(ids)]
    (tmp_path / "pheno.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "pheno.csv"


def test_same_subject_in_two_files_raises(tmp_path):
    rng = np.random.default_rng(0)
    ts = rng.normal(size=(40, 5))
    np.savetxt(tmp_path / "NYU_0050001_rois_cc200.1D", ts)
    np.save(tmp_path / "sub-50001_fc.npy", np.corrcoef(ts.T))
    np.savetxt(tmp_path / "NYU_0050002_rois_cc200.1D", rng.normal(size=(40, 5)))
    with pytest.raises(ValueError, match=r"more than one file"):
        load_connectomes(tmp_path, _pheno(tmp_path, [50001, 50002]))


def test_atlas_filter_and_several_atlases(tmp_path):
    rng = np.random.default_rng(1)
    for sid in (50001, 50002):
        np.savetxt(tmp_path / f"NYU_00{sid}_rois_cc200.1D", rng.normal(size=(40, 6)))
        np.savetxt(tmp_path / f"NYU_00{sid}_rois_aal.1D", rng.normal(size=(40, 4)))
    pheno = _pheno(tmp_path, [50001, 50002])
    with pytest.raises(ValueError, match="several atlases"):
        load_connectomes(tmp_path, pheno)
    assert load_connectomes(tmp_path, pheno, atlas="cc200").fc.shape == (2, 6, 6)
    assert load_connectomes(tmp_path, pheno, atlas="AAL").fc.shape == (2, 4, 4)
    with pytest.raises(ValueError, match="atlas"):
        load_connectomes(tmp_path, pheno, atlas="ho")


def test_short_series_and_unmatched_files_warn(tmp_path):
    rng = np.random.default_rng(2)
    np.savetxt(tmp_path / "NYU_0050001_rois.1D", rng.normal(size=(4, 8)))  # T=4 < 8 ROIs
    np.savetxt(tmp_path / "NYU_0050002_rois.1D", rng.normal(size=(30, 8)))
    np.savetxt(tmp_path / "notes_99.txt", rng.normal(size=(30, 8)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        load_connectomes(tmp_path, _pheno(tmp_path, [50001, 50002]))
    msgs = " ".join(str(x.message) for x in w)
    assert "rank-deficient" in msgs and "NYU_0050001_rois.1D" in msgs
    assert "notes_99.txt" in msgs


def _nilearn_vec(M, discard_diagonal):
    # nilearn.connectome.sym_matrix_to_vec: lower triangle row by row, diagonal / sqrt(2)
    n = M.shape[-1]
    il = np.tril_indices(n, k=-1 if discard_diagonal else 0)
    V = M.copy()
    if not discard_diagonal:
        V[..., np.arange(n), np.arange(n)] /= np.sqrt(2)
    return V[..., il[0], il[1]]


def test_connectivity_from_nilearn_vectors():
    d = make_multisite_connectomes(n_rois=7, n_sites=1, subjects_per_site=5, inv_size=2,
                                   sp_size=2, site_size=2, rho=(0.9,), seed=0)  # fmt: skip
    np.testing.assert_allclose(connectivity_from_vectors(_nilearn_vec(d.fc, False)), d.fc)
    v = _nilearn_vec(d.fc, True)
    with pytest.raises(ValueError, match="discard_diagonal"):
        connectivity_from_vectors(v)  # 21 = 6*7/2 = 7*6/2: ambiguous without the flag
    np.testing.assert_allclose(connectivity_from_vectors(v, discard_diagonal=True), d.fc)
    cov = d.fc * 2.5
    np.testing.assert_allclose(connectivity_from_vectors(_nilearn_vec(cov, False), False), cov)
    with pytest.raises(ValueError, match="triangle"):
        connectivity_from_vectors(np.ones((2, 5)))
    with pytest.raises(ValueError, match="NaN"):
        connectivity_from_vectors(np.full((1, 3), np.nan))
    with pytest.raises(TypeError, match="discard_diagonal"):
        connectivity_from_vectors(v, discard_diagonal="yes")


def test_pyg_round_trip(small):
    pyg = pytest.importorskip("torch_geometric.data")
    from brain_gcl.pyg import from_pyg, to_pyg

    d, g = small
    data = to_pyg(g[:5], y=d.y[:5], sites=d.site[:5])
    assert data[0].num_nodes == g.n_rois and data[0].y.item() == d.y[0]
    for back in (from_pyg(data), from_pyg(pyg.Batch.from_data_list(data))):
        np.testing.assert_allclose(back.A, g.A[:5])
        np.testing.assert_allclose(back.X, g.X[:5])
        np.testing.assert_allclose(back.fc, g.fc[:5])
    # a model fitted on the originals predicts the same on the round trip
    m = GIN(epochs=2, hidden=8, random_state=0).fit(g, d.y)
    np.testing.assert_allclose(m.predict_proba(from_pyg(to_pyg(g))), m.predict_proba(g), atol=1e-6)
    # one direction only, no fc: the adjacency is symmetrised and used as fc
    e = pyg.Data(x=torch.ones(3, 2), edge_index=torch.tensor([[0], [1]]),
                 edge_attr=torch.tensor([0.5]), num_nodes=3)  # fmt: skip
    assert from_pyg([e]).A[0, 1, 0] == 0.5
    bad = pyg.Data(x=torch.ones(4, 2), edge_index=torch.tensor([[0], [1]]), num_nodes=4)
    with pytest.raises(ValueError, match="aligned"):
        from_pyg([e, bad])
    loop = pyg.Data(x=torch.ones(3, 2), edge_index=torch.tensor([[1], [1]]), num_nodes=3)
    with pytest.raises(ValueError, match="self-loops"):
        from_pyg([loop])


@pytest.mark.parametrize("bad", [{"batch_size": 1}, {"edge_ratio": True}, {"extractor": "mlp"},
                                 {"invariance": "env"}, {"tau": float("nan")},
                                 {"n_envs": 0}])  # fmt: skip
def test_bad_parameters_raise(small, bad):
    d, g = small
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        CIAGCL(epochs=1, **bad).fit(g, d.y, sites=d.site)


def test_roi_extractor_can_express_the_planted_circuit(small):
    """Capacity: supervised by the planted circuit, per-edge logits rank it first (AUROC >= 0.95);
    the GNN scorer on topological features cannot tell equal-topology ROI pairs apart."""
    d, g = small
    X, A = torch.as_tensor(g.X), torch.as_tensor(g.A)
    target = torch.as_tensor(d.truth["invariant_edges"], dtype=torch.float32).expand_as(A)
    torch.manual_seed(0)
    sc = EdgeScorer(g.X.shape[2], 8, n_rois=g.n_rois, mode="roi")
    opt = torch.optim.Adam(sc.parameters(), lr=0.1)
    E = A > 0
    for _ in range(100):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(sc.logits(X, A)[E], target[E])
        opt.zero_grad(), loss.backward(), opt.step()
    with torch.no_grad():
        auroc = edge_recovery(sc(X, A).numpy(), d.truth["invariant_edges"], g.A)["auroc"]
    assert auroc >= 0.95


@pytest.mark.parametrize("cls", [CIAGCL, CIGALike])
def test_roi_extractor_and_site_invariance_fit(small, cls):
    d, g = small
    kw = {"invariance": "site"} if cls is CIAGCL else {}
    m = cls(epochs=2, hidden=8, extractor="roi", edge_ratio=0.1, random_state=0, **kw)
    m.fit(g, d.y, sites=d.site)
    S = m.edge_scores(g)
    assert S.shape == g.A.shape and np.allclose(S, S.transpose(0, 2, 1))
    assert set(dict(m.net_.scorer.named_parameters())) == {"edge_logits"}
    np.testing.assert_array_equal(m.predict(g), m.predict(g))


def test_inferred_environments_find_the_shortcut_disagreements():
    d = make_multisite_connectomes(seed=0)
    g = build_graphs(d.fc, density=0.2, node_features="identity")
    fc = g.fc.copy()
    env = infer_environments(g, d.y, random_state=0)
    np.testing.assert_array_equal(g.fc, fc)  # input untouched
    np.testing.assert_array_equal(env, infer_environments(g, d.y, random_state=0))
    assert env.dtype == np.int64 and set(np.unique(env)) <= {0, 1}
    disagree = d.truth["b"] != d.y
    # the reference model's errors concentrate where the shortcut disagrees with the label
    assert disagree[env == 1].mean() > 2 * disagree.mean()
    with pytest.raises(ValueError, match="n_splits"):
        infer_environments(g, d.y, n_splits=1)
    with pytest.raises(ValueError, match="C must"):
        infer_environments(g, d.y, C=0.0)
    with pytest.raises(ValueError, match="y must"):
        infer_environments(g, d.y[:-1])


def test_inferred_invariance_fits_on_the_inferred_environments(small):
    d, g = small
    m = CIAGCL(epochs=2, hidden=8, extractor="roi", invariance="inferred", random_state=3)
    m.fit(g, d.y, sites=d.site)
    np.testing.assert_array_equal(
        m.environments_, infer_environments(g, d.y, n_splits=5, random_state=3)
    )
    np.testing.assert_array_equal(m.predict(g), m.predict(g))
    m.set_params(invariance="site").fit(g, d.y, sites=d.site)
    assert not hasattr(m, "environments_")  # not left over from the earlier fit


def test_phenotype_rows_that_would_be_misread_raise_or_drop(tmp_path):
    rng = np.random.default_rng(3)
    for s in (50001, 50002, 50003):
        np.savetxt(tmp_path / f"NYU_00{s}_rois.1D", rng.normal(size=(30, 6)))
    pheno = tmp_path / "pheno.csv"
    # a "pending" or empty diagnosis once became a control
    pheno.write_text("SUB_ID,DX_GROUP,SITE_ID\n50001,1,NYU\n50002,pending,NYU\n50003,,NYU\n")
    with pytest.raises(ValueError, match="2 subjects have no diagnosis"):
        load_connectomes(tmp_path, pheno)
    with pytest.warns(UserWarning, match="2 subjects without a diagnosis were dropped"):
        d = load_connectomes(tmp_path, pheno, unlabelled="drop")
    assert list(d.subject_ids) == [50001] and list(d.y) == [1]
    # duplicated rows: identical ones are fine, conflicting ones (the last once won) raise
    pheno.write_text(
        "SUB_ID,DX_GROUP,SITE_ID\n50001,1,NYU\n50001,1,NYU\n50002,2,NYU\n50003,2,NYU\n"
    )
    assert len(load_connectomes(tmp_path, pheno).y) == 3
    pheno.write_text(
        "SUB_ID,DX_GROUP,SITE_ID\n50001,1,NYU\n50001,2,NYU\n50002,2,NYU\n50003,2,NYU\n"
    )
    with pytest.raises(ValueError, match="conflicting"):
        load_connectomes(tmp_path, pheno)


def test_athena_files_missing_time_points_and_covariances(tmp_path):
    from brain_gcl.generator import correlation

    rng = np.random.default_rng(4)
    ts = rng.normal(size=(40, 5))
    # ADHD-200 Athena *_TCs.1D: File and Sub-brick columns before the ROI means (once 2 extra ROIs)
    lines = ["File\tSub-brick\t" + "\t".join(f"Mean_{k + 1}" for k in range(5))]
    lines += [f"/data/snwmrda1018959_rest_1.nii.gz[{t}]\t{t}\t" + "\t".join(map(str, row))
              for t, row in enumerate(ts)]  # fmt: skip
    (tmp_path / "snwmrda1018959_session_1_rest_1_aal_TCs.1D").write_text("\n".join(lines) + "\n")
    pheno = tmp_path / "pheno.csv"
    pheno.write_text("ScanDir ID,DX,Site\n1018959,0,1\n1018960,1,1\n")
    # one missing time point in one ROI once zeroed that ROI's whole row
    gap = ts.copy()
    gap[7, 2] = np.nan
    np.savetxt(tmp_path / "sub1018960_rois.txt", gap)
    with pytest.warns(UserWarning, match="1 of 40 time points"):
        d = load_connectomes(tmp_path, pheno, id_col="ScanDir ID", label_col="DX", site_col="Site",
                             positive_label=(1, 2, 3))  # fmt: skip
    assert d.fc.shape == (2, 5, 5)
    np.testing.assert_allclose(d.fc[0], correlation(ts.T[None])[0], atol=1e-12)
    np.testing.assert_allclose(d.fc[1], correlation(np.delete(ts, 7, 0).T[None])[0], atol=1e-12)
    # a covariance (or Fisher-z) matrix is not a correlation matrix
    (tmp_path / "sub1018960_rois.txt").unlink()
    np.save(tmp_path / "sub1018960_cov.npy", np.cov(ts.T) * 50)
    with pytest.raises(ValueError, match="not a correlation matrix"):
        load_connectomes(tmp_path, pheno, id_col="ScanDir ID", label_col="DX", site_col="Site")
