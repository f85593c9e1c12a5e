def test_placeholder_demo_runs():
    from gfn_symmetry import demo

    assert isinstance(demo(), str)
