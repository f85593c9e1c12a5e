import torch

# tiny models: one intra-op thread is faster, and the CI machine is shared
torch.set_num_threads(1)
