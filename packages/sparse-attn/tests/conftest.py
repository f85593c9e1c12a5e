import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    # The CI machine is shared and oversubscribed; tiny ops run far faster on one thread.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
