"""Decompositions whose results are laid out as eager's kernels lay them out, where
torch._decomp's (which Inductor uses, and whose meta functions AOTAutograd trusts) are
laid out otherwise. Values are torch._decomp's; only a copy to eager's layout is added,
and only where the layouts differ (a permuted input: dims reversed in memory, found by
`tools/opinfo_sweep.py --layout permuted`). policy.py lists them.

- batch_norm's output: eager's kernels (cpu, and cuda's native and cuDNN ones) allocate it
  in the input's suggested memory format (channels-last or contiguous); torch._decomp's
  elementwise steps keep any dense layout of the input.
- native_dropout_backward: eager's cpu kernel is `grad * mask * scale`, laid out as
  TensorIterator lays out its inputs; torch._decomp's copies to grad's suggested memory
  format, as eager's cuda kernel does (kept on other devices).
- hardswish_backward, hardtanh_backward, logit_backward: eager's kernels (every device)
  are TensorIterator's over (grad_output, self), laid out as grad_output where the two
  differ; torch._decomp's `where(<condition on self>, ...)` is laid out as self.
- baddbmm: eager's result is contiguous; torch._decomp's `self + bmm` takes self's layout.
- _log_softmax_backward_data: eager's result is contiguous on every device (the structured
  kernel's meta function); torch._decomp's `grad - exp(output) * sum(grad)` takes grad's
  layout (a permuted gradient: cross_entropy with probability targets laid out so, found
  by `tools/opinfo_sweep.py --layout permuted --samples 2 --training`, 2026-11-29).
- the gradients of mse_loss, smooth_l1_loss and huber_loss: eager allocates them contiguous
  (`zeros_like(input, LEGACY_CONTIGUOUS_MEMORY_FORMAT)`); binary_cross_entropy's as
  `empty_like(input)`, the input's layout. torch._decomp's elementwise steps took another
  one for a permuted input (until 2026-11-27).
- roll and channel_shuffle: eager's cpu kernels lay the result out in the input's
  suggested memory format (roll's is a `cat` of two slices: a channels-last input, a
  channels-last result); torch._decomp's are contiguous, as eager's cuda and xpu kernels
  (kept there). Found by `tools/opinfo_sweep.py --layout channels_last` (2026-11-28).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import _torch_compat as compat

aten = torch.ops.aten

ELEMENTWISE_BACKWARDS = (aten.hardswish_backward.default, aten.hardtanh_backward.default, aten.logit_backward.default)
BATCH_NORMS = (aten.native_batch_norm.default, aten._native_batch_norm_legit.default, aten._native_batch_norm_legit.no_stats,
               aten._native_batch_norm_legit_functional.default, aten._native_batch_norm_legit_no_training.default)


def output_in_suggested_format(decomposition: Callable[..., Any]) -> Callable[..., Any]:
    """`decomposition` (a batch_norm's: output first) with its output in its input's
    suggested memory format."""
    def laid_out(input: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        output, *rest = decomposition(input, *args, **kwargs)
        return (output.contiguous(memory_format=compat.suggest_memory_format(input)), *rest)

    return laid_out


def as_tensor_iterator(decomposition: Callable[..., Any], inputs: int = 2) -> Callable[..., Any]:
    """`decomposition` with its result laid out as TensorIterator lays out an elementwise
    result of its first `inputs` arguments (a copy only where the layouts differ)."""
    def laid_out(*args: Any, **kwargs: Any) -> Any:
        return _permuted(decomposition(*args, **kwargs), compat.elementwise_output_perm(*args[:inputs]))

    return laid_out


def like_input(decomposition: Callable[..., Any], position: int) -> Callable[..., Any]:
    """`decomposition` with its result laid out as `empty_like(args[position])`: the
    argument's own dense layout (a copy only where the layouts differ)."""
    def laid_out(*args: Any, **kwargs: Any) -> Any:
        return _permuted(decomposition(*args, **kwargs), compat.elementwise_output_perm(args[position]))

    return laid_out


def _permuted(result: torch.Tensor, want: Any) -> torch.Tensor:
    """`result` with its dims in memory in the order `want` (outermost first)."""
    if compat.elementwise_output_perm(result) == want:
        return result
    inverse = sorted(range(len(want)), key=want.__getitem__)
    return result.permute(want).clone(memory_format=torch.contiguous_format).permute(inverse)


def contiguous(decomposition: Callable[..., Any]) -> Callable[..., Any]:
    """`decomposition` with its result made contiguous (a copy only where it is not)."""
    def made_contiguous(*args: Any, **kwargs: Any) -> Any:
        return decomposition(*args, **kwargs).contiguous()

    return made_contiguous


def native_dropout_backward(grad_output: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    if grad_output.device.type != "cpu":
        return compat.decomposition_table[aten.native_dropout_backward.default](grad_output, mask, scale)
    return grad_output * mask * scale


def _on_cpu_as_suggested(input: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """`result` in `input`'s suggested memory format on cpu (a copy only where it is not)."""
    if input.device.type != "cpu":
        return result
    return result.contiguous(memory_format=compat.suggest_memory_format(input))


def roll(input: torch.Tensor, shifts: Any, dims: Any = ()) -> torch.Tensor:
    result = compat.decomposition_table[aten.roll.default](input, shifts, dims)
    if not dims:  # a roll of the flattened input: eager's is contiguous everywhere
        return result
    sizes = [input.shape[dim] for dim in dims]
    if any(compat.statically_known_true(size == 0) or compat.statically_known_true(shift % size == 0)
           for shift, size in zip(shifts, sizes)):
        return result  # one of eager's slices is empty, and its cat contiguous (where not known: sizes vary)
    return _on_cpu_as_suggested(input, result)


def channel_shuffle(input: torch.Tensor, groups: int) -> torch.Tensor:
    return _on_cpu_as_suggested(input, compat.decomposition_table[aten.channel_shuffle.default](input, groups))
