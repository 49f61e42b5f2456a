"""Lite mode keeps eager's derivative formulas where torch would trace a decomposition.

torch._decomp puts python kernels on the Autograd key of a few ops that are not composite
in C++ (policy.EAGER_AUTOGRAD: upsample_bilinear2d, hardshrink, multi_margin_loss, ...).
Eager never sees them; under the python dispatcher, as AOTAutograd traces, they decompose
the op above autograd, so the compiled backward differentiates the decomposition (for
upsample, index arithmetic whose gradients are a last bit off eager's).

Outside regions lite mode passes them by: the dispatcher's own autograd kernel records the
op and, in the backward, its backward op (`upsample_bilinear2d_backward`, ...), which run
as eager runs them. Inside regions, for compile_ops and in default mode torch's kernels
stand (the op decomposes), or our own decomposition where policy.py has one (nearest
upsampling). torch has those kernels because some backward ops cannot
propagate symbolic sizes (TensorIterator meta kernels, no meta kernel at all): FAKE_RULES
gives them one for the trace.

The composite `.vec` overloads of upsample (what F.interpolate calls) have python kernels
on their CompositeImplicitAutograd key that go straight to the decomposition; eager's C++
body computes the output size and calls the `.default` op. A kept `.vec` node's backward
recomputes EAGER_CIA_BODIES, which do what the C++ bodies do (those cannot run here: they
take the output size as plain ints, and it is symbolic).

`dropout` has one too, which returns `input.clone()` where it draws nothing (p == 0, or not
training: every `nn.Dropout` in eval); eager's C++ returns the input itself. So every
backend's graph copied each such tensor, and a write to the result (`y.add_(1)`) left the
input as it was, where eager changes it. There, in every mode, the trace takes the input
itself too (`_eager_dropout`).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .. import _torch_compat as compat
from .policy import EAGER_AUTOGRAD, own_decomposition
from .upsample import upsample_vec_body

aten = torch.ops.aten


def _like_binary_pointwise(grad_output: torch.Tensor, self: torch.Tensor, *_: Any) -> torch.Tensor:
    # hardshrink_backward and softshrink_backward are structured binary TensorIterator ops
    # over (grad_output, self), as mul is: same dtype, sizes and strides.
    return aten.mul.Tensor(grad_output, self)


def _like_input(grad_output: torch.Tensor, self: torch.Tensor, *_: Any) -> torch.Tensor:
    # the margin losses' backward kernels resize an empty tensor to the input's sizes
    return self.new_empty(self.shape)


def _upsample_backward(keeps_memory_format: bool) -> Callable[..., torch.Tensor]:
    # Their C++ meta kernels take the sizes as plain ints. The gradient has the input's
    # sizes, in grad_output's suggested memory format for some ops and contiguous for others
    # (as their meta kernels say; tests/test_decomp.py checks each against the cpu kernel).
    def rule(grad_output: torch.Tensor, output_size: Any, input_size: Any, *_: Any) -> torch.Tensor:
        out = grad_output.new_empty(input_size)
        return out.contiguous(memory_format=compat.suggest_memory_format(grad_output)) if keeps_memory_format else out

    return rule


FAKE_RULES = {
    aten.hardshrink_backward.default: _like_binary_pointwise,
    aten.softshrink_backward.default: _like_binary_pointwise,
    aten.multi_margin_loss_backward.default: _like_input,
    aten.multilabel_margin_loss_backward.default: _like_input,
    **{getattr(aten, f"{name}_backward").default: _upsample_backward(keeps) for name, keeps in (
        ("upsample_nearest1d", True), ("upsample_nearest2d", True), ("upsample_nearest3d", False),
        ("_upsample_nearest_exact1d", True), ("_upsample_nearest_exact2d", True), ("_upsample_nearest_exact3d", False),
        ("upsample_linear1d", True), ("upsample_bilinear2d", True), ("upsample_trilinear3d", True),
        ("upsample_bicubic2d", False), ("_upsample_bicubic2d_aa", False),
    )},
}


def _kernel(decomposes_call: Callable[..., bool], selected: Callable[[Any], Any], op: torch._ops.OpOverload,
            device_type: str) -> Callable[[Any], Callable[..., Any]]:
    def make_kernel(upstream: Callable[..., Any] | None) -> Callable[..., Any]:
        upstream = own_decomposition(op) or upstream

        def kernel(*args: Any, **kwargs: Any) -> Any:
            if upstream is not None and decomposes_call(op, args, kwargs):
                with selected(op):
                    result = upstream(*args, **kwargs)
                if result is not NotImplemented:  # else our decomposition keeps this call: eager's derivative
                    return result
            return compat.call_past_python_kernels(op, device_type, *args, **kwargs)

        return kernel

    return make_kernel


def _eager_dropout(decomposition: Callable[..., Any] | None) -> Callable[..., Any]:
    """aten.dropout as eager's C++ (`_dropout`): the input itself where nothing is dropped,
    else torch's kernel (native_dropout, which draws as eager does)."""
    def dropout(input: torch.Tensor, p: float, train: bool) -> torch.Tensor:
        if p == 0 or not train:
            return input
        assert decomposition is not None
        return decomposition(input, p, train)

    return dropout


@contextlib.contextmanager
def eager_derivatives(decomposes_call: Callable[..., bool], selected: Callable[[Any], Any], device_type: str) -> Iterator[None]:
    """For one trace on `device_type`: EAGER_AUTOGRAD ops differentiated as eager does when
    `decomposes_call(op, args, kwargs)` says they stay one node, else decomposed by torch's
    kernel inside `selected(op)` (see the module doc)."""
    with contextlib.ExitStack() as stack:
        for op in sorted(EAGER_AUTOGRAD, key=str):
            kernel = _kernel(decomposes_call, selected, op, device_type)
            stack.enter_context(compat.override_autograd_kernel(op, device_type, kernel))
        stack.enter_context(compat.override_autograd_kernel(aten.dropout.default, device_type, _eager_dropout))
        stack.enter_context(compat.override_fake_rules(FAKE_RULES))
        yield


EAGER_CIA_BODIES = {
    getattr(aten, name).vec: upsample_vec_body(getattr(aten, name).default)
    for name in (
        "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
        "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d",
        "upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d",
    )
}
