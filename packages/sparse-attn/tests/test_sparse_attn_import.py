import sparse_attn


def test_version_and_demo() -> None:
    assert sparse_attn.__version__ == "0.1.0"
    out = sparse_attn.demo(seed=0)
    assert isinstance(out, str) and "CCA" in out and "region" in out
    for name in sparse_attn.__all__:
        assert hasattr(sparse_attn, name)
