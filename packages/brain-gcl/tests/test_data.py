import networkx as nx
import numpy as np
import pytest
import scipy.io

from brain_gcl.data import (
    build_graphs,
    cv_splits,
    load_connectomes,
    make_multisite_connectomes,
    site_splits,
    topological_node_features,
)


@pytest.fixture(scope="module")
def ds():
    return make_multisite_connectomes(n_rois=16, n_sites=3, subjects_per_site=60, inv_size=4,
                                      sp_size=4, site_size=3, rho=(0.9, 0.9, 0.1), inv_strength=0.6,
                                      seed=0)  # fmt: skip


def test_generator_fc_is_a_correlation_matrix(ds):
    fc = ds.fc
    np.testing.assert_allclose(fc, fc.transpose(0, 2, 1), atol=1e-12)
    np.testing.assert_allclose(np.diagonal(fc, axis1=1, axis2=2), 1.0)
    assert np.linalg.eigvalsh(fc).min() > -1e-8
    assert set(np.unique(ds.site)) == {0, 1, 2} and set(np.unique(ds.y)) == {0, 1}


def test_planted_effects(ds):
    z = np.arctanh(np.clip(ds.fc, -0.999, 0.999))
    inv = ds.truth["invariant_edges"]
    for s in range(3):
        m = ds.site == s
        zi = z[m][:, inv].mean(axis=1)
        assert zi[ds.y[m] == 1].mean() > zi[ds.y[m] == 0].mean()
        agree = (ds.truth["b"][m] == ds.y[m]).mean()
        assert abs(agree - ds.truth["rho"][s]) <= 0.1


def test_generator_validation():
    with pytest.raises(ValueError, match="rho"):
        make_multisite_connectomes(n_sites=2, rho=(0.9,))
    with pytest.raises(ValueError, match="n_rois"):
        make_multisite_connectomes(n_rois=2)


def test_build_graphs_density_and_symmetry(ds):
    g = build_graphs(ds.fc[:5], density=0.2, node_features="profile")
    n = 16
    k = int(np.ceil(0.2 * n * (n - 1) / 2))
    assert ((g.A > 0).sum(axis=(1, 2)) == 2 * k).all()
    np.testing.assert_array_equal(g.A, g.A.transpose(0, 2, 1))
    assert (np.diagonal(g.A, axis1=1, axis2=2) == 0).all()
    kept = np.abs(ds.fc[0])[g.A[0] > 0].min()
    dropped = np.abs(ds.fc[0])[(g.A[0] == 0) & ~np.eye(n, dtype=bool)].max()
    assert kept >= dropped
    assert g.X.shape == (5, n, n) and len(g[[0, 2]]) == 2
    gt = build_graphs(ds.fc[:2], node_features="topo+profile")
    assert gt.X.shape == (2, n, 8 + n)
    assert build_graphs(ds.fc[:2], node_features="identity").X.shape == (2, n, n)
    with pytest.raises(ValueError, match="density"):
        build_graphs(ds.fc[:2], density=0.0)
    with pytest.raises(ValueError, match="node_features"):
        build_graphs(ds.fc[:2], node_features="spectral")
    with pytest.raises(ValueError, match="symmetric"):
        build_graphs(np.random.default_rng(0).normal(size=(2, 5, 5)))
    bad = ds.fc[:2].copy()
    bad[0, 3, :] = bad[0, :, 3] = np.nan
    with pytest.warns(UserWarning, match="NaN"):
        build_graphs(bad, node_features="profile")
    with pytest.raises(ValueError, match="NaN"):
        build_graphs(bad, nan_policy="raise")


def test_topological_features_match_networkx():
    rng = np.random.default_rng(3)
    n = 10
    W = np.triu(rng.uniform(0.1, 1, (n, n)) * (rng.uniform(size=(n, n)) < 0.45), 1)
    W = W + W.T
    F = topological_node_features(W)[0]
    G = nx.from_numpy_array(W)
    for _, _, d in G.edges(data=True):
        d["distance"] = 1 / d["weight"]
    ref = [dict(G.degree()), dict(G.degree(weight="weight")), nx.clustering(G, weight="weight"),
           nx.eigenvector_centrality_numpy(G, weight="weight"), nx.pagerank(G, 0.85, tol=1e-12),
           nx.closeness_centrality(G, distance="distance"),
           nx.betweenness_centrality(G, weight="distance"),
           {i: nx.global_efficiency(G.subgraph(G[i])) if len(G[i]) > 1 else 0 for i in range(n)}]  # fmt: skip
    for c, r in enumerate(ref):
        np.testing.assert_allclose(F[:, c], [r[i] for i in range(n)], atol=1e-6, err_msg=str(c))


def test_splits():
    y = np.array([0, 1] * 30)
    site = np.repeat([0, 1, 2], 20)
    tr, te = site_splits(site, 2)
    assert set(site[te]) == {2} and set(site[tr]) == {0, 1}
    folds = cv_splits(y, site, k=5)
    assert len(folds) == 5 and sorted(np.concatenate([f[1] for f in folds]).tolist()) == list(
        range(60)
    )
    with pytest.raises(ValueError, match="test_site"):
        site_splits(site, 7)


def test_loader_abide_layout(tmp_path):
    rng = np.random.default_rng(0)
    n, T = 6, 50
    rows = ["SUB_ID,DX_GROUP,SITE_ID"]
    truth = {}
    for k, (sid, dx, site) in enumerate([(50001, 1, "NYU"), (50002, 2, "NYU"), (50003, 1, "UCLA"),
                                         (50004, 2, "UCLA")]):  # fmt: skip
        rows.append(f"{sid},{dx},{site}")
        ts = rng.normal(size=(T, n))
        truth[sid] = np.corrcoef(ts.T)
        if k == 0:
            np.savetxt(
                tmp_path / f"{site}_00{sid}_rois_aal.1D",
                ts,
                header="#" + "\t".join(map(str, range(n))),
            )
        elif k == 1:
            np.save(tmp_path / f"sub{sid}_fc.npy", truth[sid])
        elif k == 2:
            scipy.io.savemat(tmp_path / f"{sid}.mat", {"connectivity": truth[sid]})
        else:
            ts[:, 2] = 1.0  # a dead ROI -> NaN correlations -> zeroed with a warning
            np.savetxt(tmp_path / f"{site}_{sid}_rois.1D", ts)
    (tmp_path / "pheno.csv").write_text("\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match="NaN"):
        d = load_connectomes(tmp_path, tmp_path / "pheno.csv")
    order = np.argsort(d.subject_ids)
    ids = np.asarray(d.subject_ids)[order]
    assert ids.tolist() == [50001, 50002, 50003, 50004]
    np.testing.assert_array_equal(d.y[order], [1, 0, 1, 0])
    assert [d.truth["site_names"][s] for s in d.site[order]] == ["NYU", "NYU", "UCLA", "UCLA"]
    for k, sid in enumerate(ids[:3]):
        np.testing.assert_allclose(d.fc[order][k], truth[sid], atol=1e-8)
    assert (d.fc[order][3][2] == 0).all()
    with pytest.raises(ValueError, match="column"):
        load_connectomes(tmp_path, tmp_path / "pheno.csv", label_col="DX")
    with pytest.raises(FileNotFoundError):
        load_connectomes(tmp_path / "nope", tmp_path / "pheno.csv")
