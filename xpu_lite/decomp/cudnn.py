"""Lite mode keeps eager's cuDNN batch norm on cuda.

On cuda, eager's `batch_norm` (and `instance_norm`, which calls it) runs
`aten.cudnn_batch_norm`. While AOTAutograd traces, torch._decomp's python-dispatcher
kernel on that op's Autograd key rewrites it to `native_batch_norm`, because its schema
hides the running-stats mutation that functionalization must see; the graph would then run
the native CUDA kernel, 1-2 ulps away from eager. Outside regions lite mode traces it as:

- `_batch_norm_with_update` when training with running stats: its schema states the
  mutation (functionalized to `_batch_norm_with_update_functional`), and its CUDA kernel
  calls `cudnn_batch_norm` with the same arguments whenever cuDNN is selected, as it is here;
- `cudnn_batch_norm` itself otherwise (inference, or training without running stats):
  nothing is mutated, and its own derivative formula is eager's.

Inside regions, for compile_ops and in default mode torch's rewrite stands (the op decomposes).
cpu and xpu never reach cuDNN: eager runs `native_batch_norm` there, as the graph does.

cuDNN's reserve space (the fourth result in training, read by the backward) has a length
cuDNN derives from the input's shape; torch's fake rule asks cuDNN for it, which pins every
input size and recompiled each batch size. While tracing it is given an unbacked length
instead: the kernel sizes it at run time, and the graph stays one for all sizes.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .. import _torch_compat as compat

aten = torch.ops.aten
CUDNN_BATCH_NORM = aten.cudnn_batch_norm.default


def cudnn_batch_norm_kernel(decomposes: Callable[[Any], bool], device_type: str, upstream: Callable[..., Any]) -> Callable[..., Any]:
    """The autograd-key kernel for `cudnn_batch_norm` while a lite plan traces."""

    def kernel(input, weight, bias, running_mean, running_var, training, factor, eps):  # cudnn_batch_norm's schema
        if decomposes(CUDNN_BATCH_NORM):
            return upstream(input, weight, bias, running_mean, running_var, training, factor, eps)
        if training and running_mean is not None and running_var is not None:
            return aten._batch_norm_with_update.default(input, weight, bias, running_mean, running_var, factor, eps)
        args = (input, weight, bias, running_mean, running_var, training, factor, eps)
        return compat.call_past_python_kernels(CUDNN_BATCH_NORM, device_type, *args)

    return kernel


def _fake_cudnn_batch_norm(input, weight, bias, running_mean, running_var, training, factor, eps):
    args = (input, weight, bias, running_mean, running_var, training, factor, eps, False)
    output, save_mean, save_rstd, _, _ = compat.native_batch_norm_helper(*args)
    if not training:  # cuDNN's inference returns empty statistics and reserve
        empty = weight.new_zeros((0,))
        return output, empty, empty.clone(), input.new_zeros((0,), dtype=torch.uint8)
    return output, save_mean, save_rstd, compat.runtime_sized_empty(input, torch.uint8)


def _fake_with_update_functional(input, weight, bias, running_mean, running_var, momentum, eps):
    args = (input, weight, bias, running_mean, running_var, True, momentum, eps, True)
    output, save_mean, save_rstd, new_mean, new_var = compat.native_batch_norm_helper(*args)
    return output, save_mean, save_rstd, compat.runtime_sized_empty(input, torch.uint8), new_mean, new_var


def _fake_with_update(*args):
    return _fake_with_update_functional(*args)[:4]  # fake values: the in-place update shows nowhere


FAKE_RULES = {
    CUDNN_BATCH_NORM: _fake_cudnn_batch_norm,
    aten._batch_norm_with_update.default: _fake_with_update,
    aten._batch_norm_with_update_functional.default: _fake_with_update_functional,
}


@contextlib.contextmanager
def eager_cudnn_batch_norm(decomposes: Callable[[Any], bool], device_type: str) -> Iterator[None]:
    """For one trace on `device_type`: cudnn_batch_norm as eager runs it (see the module doc)."""
    if device_type != "cuda":
        yield
        return

    def make_kernel(upstream: Callable[..., Any] | None) -> Callable[..., Any]:
        if upstream is None:  # no rewrite to undo: the dispatcher records the op as itself
            upstream = lambda *args: compat.call_past_python_kernels(CUDNN_BATCH_NORM, device_type, *args)  # noqa: E731
        return cudnn_batch_norm_kernel(decomposes, device_type, upstream)

    with compat.override_autograd_kernel(CUDNN_BATCH_NORM, device_type, make_kernel), compat.override_fake_rules(FAKE_RULES):
        yield
