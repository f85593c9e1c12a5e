"""Generators, loader, featurizer (spec §5 C3) and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import cost_model as C
from cost_model.features import SCALAR_NAMES, density_counts, matrix_stats


@pytest.mark.parametrize("family", C.matrices.FAMILIES)
def test_generate_families(family: str) -> None:
    A = C.generate(family, 300, 200, 0.02, seed=1)
    B = C.generate(family, 300, 200, 0.02, seed=1)
    assert A.shape == (300, 200) and A.dtype == np.float32 and A.nnz > 0
    assert (A != B).nnz == 0  # deterministic per seed
    assert 0.3 < A.nnz / (0.02 * 300 * 200) < 1.7 or family in ("block", "diag_noise")


def test_block_family_is_bsr_friendly() -> None:
    A = C.generate("block", 256, 256, 0.05, seed=0, block=4)
    U = C.generate("uniform", 256, 256, 0.05, seed=0)
    assert matrix_stats(A)["bsr_fill_4"] > 0.9 > matrix_stats(U)["bsr_fill_4"]


def test_matrix_set_and_mtx_roundtrip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ms = C.MatrixSet.synthetic(7, seed=0, rows=(64, 128), nnz=(100, 400))
    assert len(ms) == 7 and len(set(ms.names)) == 7
    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(str(path), ms[0])
    B = C.load_mtx(path)
    assert abs(B - ms[0]).max() < 1e-6
    with pytest.raises(FileNotFoundError, match="path"):
        C.load_mtx(tmp_path / "missing.mtx")


def test_suitesparse_folder_layout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """<group>/<name>/<name>.mtx is the matrix; <name>_b.mtx / _coord.mtx are auxiliary."""
    import gzip
    import warnings

    ms = C.MatrixSet.synthetic(3, seed=2, rows=(64, 96), nnz=(100, 300))
    for name, A in zip(("bcsstk01", "west0067", "can_24"), ms.matrices, strict=True):
        d = tmp_path / "HB" / name
        d.mkdir(parents=True)
        scipy.io.mmwrite(str(d / f"{name}.mtx"), A)
        scipy.io.mmwrite(str(d / f"{name}_b.mtx"), np.ones((A.shape[0], 1)))
    with open(tmp_path / "HB" / "can_24" / "can_24.mtx", "rb") as f:
        raw = f.read()
    (tmp_path / "HB" / "can_24" / "can_24.mtx").unlink()
    with gzip.open(tmp_path / "HB" / "can_24" / "can_24.mtx.gz", "wb") as f:
        f.write(raw)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = C.load_mtx_folder(tmp_path)
    assert got.names == ["bcsstk01", "can_24", "west0067"]
    assert any("auxiliary" in str(x.message) for x in w)
    for name, A in zip(("bcsstk01", "west0067", "can_24"), ms.matrices, strict=True):
        assert abs(got[got.names.index(name)] - A).max() < 1e-6
    (tmp_path / "HB" / "west0067" / "west0067.mtx").write_text(
        "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1.0\n"
    )
    with pytest.raises(ValueError, match="west0067"):
        C.load_mtx_folder(tmp_path)
    with pytest.raises(ValueError, match="no Matrix Market"):
        C.load_mtx_folder(tmp_path / "HB", pattern="*.mtx")


def test_density_image_and_scalars() -> None:
    A = C.generate("powerlaw", 500, 400, 0.01, seed=2)
    counts = density_counts(A, 32)
    assert counts.shape == (32, 32) and counts.sum() == A.nnz
    img, sc = C.MatrixFeaturizer(32)(A)
    assert img.shape == (32, 32) and img.dtype == np.float32 and img.max() == pytest.approx(1.0)
    assert sc.shape == (len(SCALAR_NAMES),) and np.all(np.isfinite(sc))
    # row permutation leaves nnz, density and degree statistics unchanged
    perm = np.random.default_rng(0).permutation(500)
    P = sp.csr_array(A[perm])
    s1, s2 = matrix_stats(A), matrix_stats(P)
    for key in (
        "log_nnz",
        "log10_density",
        "row_mean",
        "row_std",
        "log_row_max",
        "row_cv",
        "col_cv",
    ):
        assert s1[key] == pytest.approx(s2[key], abs=1e-6)


def test_bad_matrices() -> None:
    with pytest.raises(ValueError, match="empty"):
        C.matrices.check_matrix(sp.csr_array((0, 5)))
    with pytest.raises(ValueError, match="no nonzeros"):
        C.matrices.check_matrix(sp.csr_array((4, 4), dtype=np.float32))
    bad = sp.csr_array(np.array([[1.0, np.nan], [0, 1]]))
    with pytest.raises(ValueError, match="NaN"):
        C.matrices.check_matrix(bad)
    with pytest.raises(TypeError, match="A"):
        C.matrices.check_matrix([[1, 2]])
    with pytest.raises(ValueError, match="family"):
        C.generate("random", 10)
    with pytest.raises(ValueError, match="density"):
        C.generate("uniform", 10, density=0.0)
    with pytest.raises(ValueError, match="resolution"):
        C.MatrixFeaturizer(1)


@pytest.mark.parametrize(
    "body, match",
    [
        # an integer matrix holding uint64's maximum (as GraphBLAS writes uint64 matrices)
        ("%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 0\n"
         "1 2 18446744073709551615\n", "not a readable"),
        # finite in float64, inf in float32
        ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e300\n2 2 1\n", "float32"),
        ("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 inf\n3 1 1\n", "inf"),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 2\n", "real numeric"),
        ("2 2 1\n1 1 1\n", "not a readable"),  # no banner
        ("%%MatrixMarket matrix coordinate real general\n2 2 0\n", "no nonzeros"),
    ],
)  # fmt: skip
def test_mtx_edge_cases_refused_by_name(tmp_path, body: str, match: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "m.mtx"
    path.write_text(body)
    with pytest.raises((ValueError, TypeError), match=match):
        C.load_mtx(path)


def test_mtx_pattern_symmetric_and_dense_array_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Pattern entries read as 1, a symmetric lower triangle is mirrored, an array file is dense."""
    (tmp_path / "p.mtx").write_text(
        "%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 2\n1 1\n3 1\n"
    )
    A = C.load_mtx(tmp_path / "p.mtx").toarray()
    np.testing.assert_array_equal(A, [[1, 0, 1], [0, 0, 0], [1, 0, 0]])
    (tmp_path / "d.mtx").write_text("%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n4\n")
    np.testing.assert_array_equal(C.load_mtx(tmp_path / "d.mtx").toarray(), [[1, 0], [0, 4]])


def test_float32_underflow_keeps_the_pattern_and_warns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Circuit matrices carry 1e-50 entries: float32 would turn them into 0 and drop them."""
    body = "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 2 1e-50\n3 1 -1e-42\n3 3 0\n"
    (tmp_path / "u.mtx").write_text(body)
    with pytest.warns(UserWarning) as rec:
        A = C.load_mtx(tmp_path / "u.mtx")
    msgs = " ".join(str(r.message) for r in rec)
    assert "2 nonzeros are below float32's smallest normal" in msgs
    assert "1 explicitly stored zeros dropped" in msgs
    assert A.nnz == 3 and A[1, 1] == np.finfo(np.float32).tiny and A[2, 0] < 0
    src = sp.csr_array(np.array([[1e-50, 0.0], [0.0, 2.0]]))
    before = src.data.copy()
    with pytest.warns(UserWarning, match="smallest normal"):
        C.matrices.check_matrix(src)
    np.testing.assert_array_equal(src.data, before)  # the caller's matrix is untouched


def test_flat_folders_compressed_files_and_tarballs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import bz2
    import io
    import tarfile
    import warnings

    ms = C.MatrixSet.synthetic(4, seed=3, rows=(32, 48), nnz=(50, 120))
    flat = tmp_path / "lp"
    flat.mkdir()
    # a flat folder: lp/lp_adlittle.mtx is a matrix (it was dropped as "auxiliary")
    scipy.io.mmwrite(str(flat / "lp_adlittle.mtx"), ms[0])
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, ms[1])
    (flat / "lp_afiro.mtx.bz2").write_bytes(bz2.compress(buf.getvalue()))  # was ignored
    # a SuiteSparse tarball: <name>/<name>.mtx plus an auxiliary <name>/<name>_b.mtx
    with tarfile.open(tmp_path / "bcspwr01.tar.gz", "w:gz") as tar:
        for member, A in (("bcspwr01/bcspwr01.mtx", ms[2]), ("bcspwr01/bcspwr01_b.mtx", ms[3])):
            b = io.BytesIO()
            scipy.io.mmwrite(b, A)
            info = tarfile.TarInfo(member)
            info.size = len(b.getvalue())
            tar.addfile(info, io.BytesIO(b.getvalue()))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = C.load_mtx_folder(tmp_path)
    assert sorted(got.names) == ["bcspwr01", "lp_adlittle", "lp_afiro"]
    assert any("bcspwr01_b" in str(x.message) for x in w)
    for name, A in (("lp_adlittle", ms[0]), ("lp_afiro", ms[1]), ("bcspwr01", ms[2])):
        assert abs(got[got.names.index(name)] - A).max() < 1e-6
    (flat / "lp_blend.mtx.xz").write_bytes(b"\xfd7zXZ")
    with pytest.raises(ValueError, match=r"lp_blend.mtx.xz"):
        C.load_mtx_folder(tmp_path)
    (flat / "lp_blend.mtx.xz").unlink()
    (flat / "cplx.mtx").write_text(
        "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n"
    )
    with pytest.raises(TypeError, match=r"cplx.mtx"):  # the error names the file
        C.load_mtx_folder(tmp_path)
