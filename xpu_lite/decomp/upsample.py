"""Decompositions of upsampling (F.interpolate) in regions with eager's float32 scales and
source indices: policy.py lists them."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import _torch_compat as compat

aten = torch.ops.aten


def _nearest_indices(input: torch.Tensor, output_size: list[Any], scales: list[Any], exact: bool) -> list[torch.Tensor]:
    """Per spatial dim, the source index of each output position as eager computes it
    (UpSample.h): floor((o [+ 0.5 exact]) * scale) in float32, at most isize - 1, with
    scale = float32(1 / s) for a scale factor s, else float32(isize) / osize; eager's cpu
    2-D kernel takes o itself where osize == isize and o >> 1 where osize == 2 * isize
    (nearest_idx), which a scale of 1.0 and 0.5 give. torch._decomp takes isize / (isize * s)
    or isize / osize, a SymFloat under dynamic shapes, which AOTAutograd turns into float64
    tensor ops (eager calls in the graph), and knows no special case (aot_eager and Inductor
    differ from eager's cpu 2-D kernel there). Here a scale is a Python float (a kernel
    literal) or, where it depends on symbolic sizes, a float32 0-dim tensor (kernels)."""
    indices = []
    dims = len(output_size)
    for d, osize in enumerate(output_size):
        isize = input.shape[d - dims]
        scale: Any
        if scales[d] is not None and scales[d] > 0:
            scale = 1.0 / scales[d]
        elif isinstance(isize, int) and isinstance(osize, int):
            scale = isize / osize  # a quotient of ints below 2**24, rounded to float32 once either way
        else:
            scale = _size_tensor(isize, input) / osize
        if input.device.type == "cpu" and dims == 2 and not exact:
            scale = _cpu_special_cases(scale, isize, osize, input)
        positions = torch.arange(osize, dtype=torch.float32, device=input.device)
        source = ((positions + 0.5 if exact else positions) * scale).to(torch.int64).clamp(max=isize - 1)
        indices.append(source.reshape(-1, *[1] * (dims - 1 - d)))
    return indices


def _size_tensor(size: Any, like: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.scalar_tensor(size, dtype=dtype, device=like.device)


def _cpu_special_cases(scale: Any, isize: Any, osize: Any, like: torch.Tensor) -> Any:
    """1.0 where osize == isize, 0.5 where osize == 2 * isize, else `scale`: decided while
    tracing where the sizes say so for every input, else by the kernel (no guard)."""
    for size, special in ((isize, 1.0), (2 * isize, 0.5)):
        if compat.statically_known_true(osize == size):
            return special
        if not compat.statically_known_true(osize != size):
            same = _size_tensor(osize - size, like, torch.int64) == 0
            scale = torch.where(same, special, scale if isinstance(scale, torch.Tensor) else _size_tensor(scale, like))
    return scale


def _upsample_nearest(input: torch.Tensor, output_size: list[Any], scales: list[Any], exact: bool) -> torch.Tensor:
    """torch._decomp's _upsample_nearest with eager's source indices (_nearest_indices).
    float16/bfloat16 that require grad are looked up as float32 and cast back: the same
    values (the float32 copy of the input is a buffer: a lookup reads memory), but the
    gradient (_unsafe_index's: an index_put that adds) then adds in float32 and rounds
    once, as eager's backward kernels add (cpu and cuda: in their acc type), where adds in
    the dtype round every add (3-6x eager's error for 5x upscaling)."""
    half = input.dtype in (torch.float16, torch.bfloat16) and input.requires_grad and torch.is_grad_enabled()
    source = input.float() if half else input
    result = aten._unsafe_index.Tensor(source, [None, None, *_nearest_indices(input, output_size, scales, exact)])
    result = result.to(input.dtype) if half else result
    if result.ndim in (4, 5):
        memory_format = compat.suggest_memory_format(input)
        if result.ndim == 4 and input.device.type == "cuda" and input.shape[1] < 4:
            memory_format = torch.contiguous_format  # torch._decomp's (and eager's cuda) heuristic
        result = result.contiguous(memory_format=memory_format)
    return result


def nearest_default(exact: bool) -> Callable[..., torch.Tensor]:
    def upsample(input: torch.Tensor, output_size: list[Any], *scales: Any, **named: Any) -> torch.Tensor:
        names = ("scales_d", "scales_h", "scales_w")[3 - len(output_size):] if len(output_size) > 1 else ("scales",)
        values = [*scales, *[named.get(name) for name in names[len(scales):]]]
        return _upsample_nearest(input, output_size, values, exact)

    return upsample


def upsample_vec_body(default: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """What the C++ body of an upsample `.vec` overload does: the output size from the
    scale factors, then `default` (the `.default` overload, or our decomposition of it)."""

    def body(input: torch.Tensor, output_size: Any, *rest: Any) -> torch.Tensor:
        *align_corners, scale_factors = rest  # nearest overloads take no align_corners
        osize = compat.upsample_output_size(input.size(), output_size, scale_factors)
        scales = scale_factors if scale_factors else [None] * len(osize)
        return default(input, osize, *align_corners, *scales)

    return body


def _compute_scale(device: torch.device) -> Callable[..., Any]:
    """torch._decomp's `_compute_scale` for linear and cubic upsampling, with a quotient of
    symbolic sizes ((isize - 1) / (osize - 1) with align_corners, else isize / osize) as a
    float32 0-dim tensor on `device`: the float32 quotient eager's kernels compute (UpSample.h
    area_pixel_compute_scale), which kernels compute, where torch's SymFloat becomes float64
    tensor ops (eager calls in the graph). Int and scale-factor scales are torch's."""

    def compute_scale(in_size: Any, out_size: Any, align_corners: bool, scale: Any = None) -> Any:
        if align_corners:
            if not out_size > 1:
                return 0
            numerator, denominator = in_size - 1, out_size - 1
        elif scale is not None and scale > 0:
            return 1.0 / scale
        else:
            numerator, denominator = in_size, out_size
        if isinstance(numerator, int) and isinstance(denominator, int):
            return numerator / denominator
        return torch.scalar_tensor(numerator, dtype=torch.float32, device=device) / denominator

    return compute_scale


def float32_scales(torch_decomposition: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """torch._decomp's linear/cubic upsample with float32 scales (_compute_scale). A uint8
    input keeps the op: eager's cpu kernel interpolates uint8 in fixed point, the
    decomposition in float, rounded (16% of a bilinear sample's values one apart)."""
    def upsample(input: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if input.dtype == torch.uint8:
            return NotImplemented
        with compat.replaced_decomposition_helper("_compute_scale", _compute_scale(input.device)):
            return torch_decomposition(input, *args, **kwargs)

    return upsample
