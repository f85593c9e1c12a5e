"""A shadow accelerator for the device contract: tensors that report another device, computed on
the CPU.

``torch._subclasses.fake_tensor.FakeTensorMode`` with ``cuda`` tensors is the obvious way to
test device handling without a GPU, but it has no values: every data-dependent step raises
``DataDependentOutputException``, and every entry point of this project validates its inputs
(``torch.isfinite(x).all()`` and the like) before computing. Under FakeTensorMode all 51
tensor-taking function entries stop at that check (measured), so it would test nothing.

The shadow device keeps the values. A :class:`Shadow` tensor wraps a real CPU tensor and
reports ``device="meta"`` (a device every PyTorch build can name without a driver). The
:class:`ShadowDevice` mode runs each op on the wrapped CPU values and raises
:class:`DeviceMismatchError` when an op mixes a shadow tensor with a CPU tensor of one or more
dimensions, exactly where CUDA raises "Expected all tensors to be on the same device".
Factories that name the shadow device (``device=x.device``, ``*_like``, ``new_*``) make shadow
tensors; ``torch.zeros(n)``, ``torch.from_numpy``, ``torch.tensor(..., device="cpu")`` make CPU
tensors and fail at their first use with the inputs. 0-d CPU tensors mix freely, and CPU index
tensors index shadow ones, as on CUDA. ``torch.tensor(data, device=...)`` and list indices are
built below the dispatcher's Python key, so :class:`ShadowData` (a function mode) builds them on
the CPU first; without it they would be real meta tensors without values (the harness then
computed garbage silently, which the value checks in ``test_devices.py`` now catch).

Because the values are real, the tests compare every result on the shadow device with the CPU
result of the same call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

DEVICE = torch.device("meta")
_COPIES = {torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default}
# in-place ops that change a tensor's sizes or strides, not its values
_RESHAPE_INPLACE = {"squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_", "swapaxes_",
                    "as_strided_"}  # fmt: skip
# CUDA accepts CPU index tensors (it copies them over): only ``self`` and ``values`` must match
_INDEXING = {
    torch.ops.aten.index.Tensor,
    torch.ops.aten.index_put.default,
    torch.ops.aten.index_put_.default,
    torch.ops.aten._index_put_impl_.default,
}


class DeviceMismatchError(RuntimeError):
    """An op mixed a tensor on the shadow device with one on the CPU."""


class Shadow(torch.Tensor):
    """A CPU tensor that reports the shadow device."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> Shadow:
        r = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, layout=elem.layout, device=DEVICE, requires_grad=elem.requires_grad,
        )  # fmt: skip
        r.elem = elem
        return r

    def __repr__(self) -> str:
        return f"Shadow({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("a Shadow tensor is used outside ShadowDevice()")


def _is_shadow(device: Any) -> bool:
    return device is not None and torch.device(device).type == DEVICE.type


class ShadowDevice(TorchDispatchMode):
    """Run ops on the CPU values of shadow tensors; raise on a shadow / CPU mix."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        seen: set[str] = set()

        def unwrap(x: Any) -> Any:
            if isinstance(x, Shadow):
                seen.add("shadow")
                return x.elem
            if isinstance(x, torch.Tensor) and x.dim() > 0:
                seen.add("cpu")
            return x

        if func in _INDEXING:  # indices (args[1]) are exempt from the device check
            uargs = (unwrap(args[0]), tree_map(lambda x: x.elem if isinstance(x, Shadow) else x,
                     args[1]), *tree_map(unwrap, args[2:]))  # fmt: skip
            ukwargs = tree_map(unwrap, kwargs)
        else:
            uargs, ukwargs = tree_map(unwrap, args), tree_map(unwrap, kwargs)
        device = ukwargs.get("device")
        if _is_shadow(device):
            ukwargs["device"] = torch.device("cpu")
        if seen == {"shadow", "cpu"} and func not in _COPIES:
            raise DeviceMismatchError(
                f"{func}: Expected all tensors to be on the same device, but found at least two "
                "devices, the accelerator and cpu (a tensor was created without the inputs' "
                "device)"
            )
        out = func(*uargs, **ukwargs)
        if func.__name__.split(".")[0] in _RESHAPE_INPLACE and isinstance(args[0], Shadow):
            # the wrapper's own sizes follow through the meta kernel (it holds no data)
            with torch._C._DisableTorchDispatch():
                func(args[0], *args[1:], **kwargs)
            return args[0]
        if func is torch.ops.aten.copy_.default and isinstance(args[0], Shadow):
            return args[0]
        to_shadow = _is_shadow(device) or (device is None and "shadow" in seen)
        if not to_shadow:
            return out
        return tree_map(
            lambda x: Shadow(x) if isinstance(x, torch.Tensor) and not isinstance(x, Shadow) else x,
            out,
        )


_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray}


def _cpu_index(index: Any) -> Any:
    """Python / numpy index parts as CPU tensors (CUDA takes CPU indices, copying them over)."""
    if isinstance(index, tuple):
        return tuple(_cpu_index(i) for i in index)
    if isinstance(index, list) or type(index).__module__ == "numpy":
        return torch.as_tensor(np.asarray(index))
    return index


class ShadowData(TorchFunctionMode):
    """Tensors made from Python data on the shadow device, and Python-list indices.

    ``torch.tensor(data, device=...)`` and indexing with a list build their tensor below the
    dispatcher's Python key, so :class:`ShadowDevice` would see a real meta tensor (no values).
    They are built on the CPU here instead: the data as a shadow tensor, an index as a CPU index.
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _FROM_DATA and _is_shadow(kwargs.get("device")):
            kwargs["device"] = "cpu"
            return Shadow(func(*args, **kwargs))
        if func is torch.Tensor.tolist and isinstance(args[0], Shadow):  # allowed on CUDA too
            return args[0].elem.tolist()
        if func is torch.Tensor.numpy and isinstance(args[0], Shadow):
            raise TypeError("can't convert a tensor on the accelerator to numpy: use .cpu() first")
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and len(args) >= 2:
            args = (args[0], _cpu_index(args[1]), *args[2:])
        return func(*args, **kwargs)


def to_shadow(value: Any) -> Any:
    """``value`` with every tensor and module moved to the shadow device (inside the mode)."""
    if isinstance(value, torch.Tensor | torch.nn.Module):
        return value.to(DEVICE)
    if isinstance(value, list):
        return [to_shadow(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_shadow(v) for v in value)
    if isinstance(value, dict):
        return {k: to_shadow(v) for k, v in value.items()}
    return value


@contextlib.contextmanager
def shadow_device() -> Iterator[None]:
    """The mode, with ``torch.autocast`` on the shadow device mapped to the CPU's."""
    original = torch.autocast.__init__

    def init(self, device_type: str, *args: Any, **kwargs: Any) -> None:
        original(self, "cpu" if device_type == DEVICE.type else device_type, *args, **kwargs)

    torch.autocast.__init__ = init
    # Module.to(dtype) on shadow parameters would assign ``param.data``, which changes the
    # wrapper's dtype but not the values behind it: replace the parameters instead
    overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        with ShadowDevice(), ShadowData():
            yield
    finally:
        torch.autocast.__init__ = original
        torch.__future__.set_overwrite_module_params_on_conversion(overwrite)
