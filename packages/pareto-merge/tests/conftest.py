import pytest
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.bn = nn.BatchNorm1d(6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


@pytest.fixture
def models() -> tuple[nn.Module, dict, list[dict]]:
    """A tiny model, its 'pre-trained' state_dict and three perturbed 'fine-tuned' copies."""
    torch.manual_seed(0)
    model = Tiny().eval()
    theta0 = {k: v.clone() for k, v in model.state_dict().items()}
    finetuned = []
    for i in range(3):
        g = torch.Generator().manual_seed(i + 1)
        finetuned.append(
            {
                k: v + 0.1 * torch.randn(v.shape, generator=g)
                if v.is_floating_point()
                else v.clone()
                for k, v in theta0.items()
            }
        )
    return model, theta0, finetuned


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models: intra-op threads only add overhead (and contention on shared runners)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
