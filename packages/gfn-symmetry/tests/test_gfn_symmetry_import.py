import gfn_symmetry


def test_version_and_demo() -> None:
    assert gfn_symmetry.__version__ == "0.1.0"
    out = gfn_symmetry.demo(seed=0)
    assert isinstance(out, str) and out
