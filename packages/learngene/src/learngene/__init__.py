"""learngene: TAL, task-aware learngene parameter prediction at flexible scales (ICML 2025)."""

from learngene.baselines import GHN, GHNMultiTask, RandInit, TALNoAncestry, WeightSelection
from learngene.cnn import ResNetSpace, ResNetSpec, TinyResNet
from learngene.data import Task, make_mini_decathlon, make_proxy_task, make_unseen_tasks
from learngene.demo import demo
from learngene.finetune_init import prepare_for_finetuning
from learngene.graph import NODE_TYPES, ArchGraph, arch_graph
from learngene.hypernet import GraphHyperNetwork, TaskFiLM
from learngene.interop import from_hf, from_timm, spec_from_hf, spec_from_timm, to_hf, to_timm
from learngene.losses import TaskSampler, kd_loss, task_probabilities
from learngene.tal import TAL
from learngene.training import evaluate_init, finetune, task_embedding, train_ancestry
from learngene.vit import TinyViT, ViTSpace, ViTSpec

__version__ = "0.1.0"

__all__ = [
    "GHN",
    "NODE_TYPES",
    "TAL",
    "ArchGraph",
    "GHNMultiTask",
    "GraphHyperNetwork",
    "RandInit",
    "ResNetSpace",
    "ResNetSpec",
    "TALNoAncestry",
    "Task",
    "TaskFiLM",
    "TaskSampler",
    "TinyResNet",
    "TinyViT",
    "ViTSpace",
    "ViTSpec",
    "WeightSelection",
    "arch_graph",
    "demo",
    "evaluate_init",
    "finetune",
    "from_hf",
    "from_timm",
    "kd_loss",
    "make_mini_decathlon",
    "make_proxy_task",
    "make_unseen_tasks",
    "prepare_for_finetuning",
    "spec_from_hf",
    "spec_from_timm",
    "task_embedding",
    "task_probabilities",
    "to_hf",
    "to_timm",
    "train_ancestry",
]
