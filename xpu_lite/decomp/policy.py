"""The decomposition policy as data: which aten ops are decomposed inside compile regions.

Output: DECOMPOSE (op -> decomposition) and KEEP (op -> reason it is never decomposed).
Everything else in the pipeline derives from these two tables.
"""
from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch

from .. import _torch_compat as compat
from . import grid_sample, search

aten = torch.ops.aten

# Ops that are never decomposed, even inside regions, with the reason. Random ops keep the
# eager RNG stream only if they run as the same aten call eager would make.
_KEEP_EXPLICIT: dict[torch._ops.OpOverload, str] = {
    aten.native_dropout.default: "random op: decomposing it would change the RNG stream",
    aten.bernoulli.p: "random op: decomposing it would change the RNG stream",
    aten.bernoulli.default: "random op: decomposing it would change the RNG stream",
}


# Ops the core ATen table keeps whole (they are core ops) but regions decompose, as
# Inductor does, so that their reductions and pointwise parts fuse into few kernels.
_DECOMPOSE_FOR_FUSION: dict[torch._ops.OpOverload, str] = {
    aten._softmax.default: "softmax: amax, exp, sum and div fuse into one reduction kernel",
    aten._log_softmax.default: "log_softmax: amax, exp, sum and log fuse into one reduction kernel",
    aten.native_layer_norm.default: "layer_norm: var_mean and the affine map fuse into one reduction kernel",
    aten.native_group_norm.default: "group_norm: var_mean over each group and the affine map fuse",
    aten.linalg_vector_norm.default: "vector_norm: abs, pow, sum and the root fuse into one reduction kernel",
    aten._native_batch_norm_legit_no_training.default: "batch_norm (inference): the affine map of running stats fuses with its neighbours",
    aten._native_batch_norm_legit_functional.default: "batch_norm (training): var_mean over all but the channel dim and the affine map fuse",
    aten._native_batch_norm_legit.default: "batch_norm (training, no running stats): var_mean and the affine map fuse",
    aten._native_batch_norm_legit.no_stats: "batch_norm (no running stats): var_mean and the affine map fuse",
    aten.dist.default: "dist: the difference and its vector_norm fuse into one reduction kernel",
    aten.ldexp.Tensor: "ldexp: x * 2 ** e, one pointwise kernel",
}


# Core ATen decompositions that regions do not apply (Inductor's decomps_to_exclude): a
# Triton lowering takes the op whole, where its decomposition would leave a fallback.
_LOWERED_WHOLE: dict[torch._ops.OpOverload, str] = {
    aten.select_scatter.default: "lowered whole (lowering/indexing.py); its decomposition reads an arange, a fallback",
    aten.silu.default: "lowered whole as x / (1 + exp(-x)), eager's formula, rounded once; its decomposition "
                       "x * sigmoid(x) rounds twice",
}


def _take(self: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return aten.index.Tensor(self.reshape(-1), [index])


def _put(self: torch.Tensor, index: torch.Tensor, source: torch.Tensor, accumulate: bool = False) -> Any:
    """put as index_put of the flattened input (Inductor's): a scatter kernel. Eager's
    result keeps the input's strides, so an input that is not contiguous keeps the op."""
    if not self.is_contiguous():
        return NotImplemented
    return aten.index_put(self.reshape(-1), [index], source.reshape(index.shape), accumulate).view(self.shape)


def _masked_scatter(self: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> Any:
    """masked_scatter as eager's cuda algorithm (Inductor's): the k-th set position of the
    mask takes source's k-th element (a cumsum of the mask), read by a lookup; eager's
    result is contiguous. An empty source (nothing to read; eager accepts it with an empty
    mask) keeps the op."""
    if source.numel() == 0:
        return NotImplemented
    self, mask = aten.broadcast_tensors([self, mask])
    positions = (mask.reshape(-1).cumsum(0) - 1).clamp(min=0)
    picked = aten.index.Tensor(source.reshape(-1), [positions])
    return torch.where(mask.reshape(-1), picked, self.reshape(-1)).view(self.shape)


def _half_on_cpu(t: torch.Tensor) -> bool:
    """Where eager's cpu kernels and torch's decompositions accumulate float16/bfloat16 differently."""
    return t.device.type == "cpu" and t.dtype in (torch.float16, torch.bfloat16)


def _scatter_add(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Any:
    """Eager's cpu scatter_add of float16 and bfloat16 adds in float32 and rounds once (its
    result is `self.float().scatter_add(dim, index, src.float())` rounded): so here, float32
    atomic adds and a cast. Its GPU kernels add in the dtype itself (atomics): the op as is."""
    if not _half_on_cpu(self):
        return NotImplemented
    return self.float().scatter_add(dim, index, src.float()).to(self.dtype)


def _index_add(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1) -> Any:
    """torch._decomp's index_add (index_put with accumulate) with eager's arithmetic: eager's
    kernels multiply by alpha in the dtype (`source * alpha` rounded, alpha itself rounded
    to a float16/bfloat16 first), where the decomposition's product has a Python float.
    Eager's cpu kernel adds float16/bfloat16 without alpha in float32 and rounds once (with
    alpha it adds in the dtype, as index_put does), and float32 with alpha as an axpy (the
    product fused into the add, one rounding), which an atomic add cannot: that keeps the op."""
    if alpha == 1 and _half_on_cpu(self):
        return self.float().index_add(dim, index, source.float()).to(self.dtype)
    if alpha != 1 and self.device.type == "cpu" and self.dtype == torch.float32:
        return NotImplemented
    if alpha != 1 and self.dtype.is_floating_point:
        source, alpha = source * torch.scalar_tensor(alpha, dtype=self.dtype, device=self.device), 1
    return compat.decomposition_table[aten.index_add.default](self, dim, index, source, alpha=alpha)


def _embedding_dense_backward(grad_output: torch.Tensor, indices: torch.Tensor, num_weights: int, padding_idx: int,
                              scale_grad_by_freq: bool) -> Any:
    """torch._decomp's embedding backward adds float16/bfloat16 gradients in float32 (as
    eager's cuda kernel does); eager's cpu kernel adds each row in the dtype, in index
    order: on cpu those are index_put's adds in the dtype. With scale_grad_by_freq eager's
    cpu kernel adds `grad * (1 / count)` rows (add_ with alpha): that keeps the op."""
    torch_decomposition = compat.decomposition_table[aten.embedding_dense_backward.default]
    if not _half_on_cpu(grad_output):
        return torch_decomposition(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
    if scale_grad_by_freq:
        return NotImplemented
    kept = (indices >= 0) & (indices < num_weights) & (indices != padding_idx)
    kept = kept.reshape(*kept.shape, *[1] * (grad_output.dim() - indices.dim()))
    grad_weight = grad_output.new_zeros((num_weights, *grad_output.shape[indices.dim():]))
    return aten._unsafe_masked_index_put_accumulate(grad_weight, kept, [indices], grad_output)


def _scatter_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, reduce: str, *,
                    include_self: bool = True) -> Any:
    """scatter_reduce as ATen's scatter_reduce_two computes it on every device: without
    include_self the positions scattered to are set to the reduction's identity first (0;
    -inf/inf, an integer dtype's lowest/highest), then the values are combined.
    sum and mean: added (scatter_add: atomic adds, in index order under the interpreter);
    mean divides by the number of values added (one more with include_self, 1 where none
    was), floor division for integers. amax and amin: _scatter_extrema.
    prod keeps the op (no atomic multiply), and so do dtypes kernels do not compute
    (eager's own error for a bool mean)."""
    if reduce not in ("sum", "mean", "amax", "amin") or self.dtype not in search.KERNEL_DTYPES:
        return NotImplemented
    if reduce in ("amax", "amin"):
        return _scatter_extrema(self, dim, index, src, reduce, include_self)
    total = (self if include_self else self.scatter(dim, index, 0)).scatter_add(dim, index, src)
    if reduce == "sum":
        return total
    count = (torch.ones_like(self) if include_self else torch.zeros_like(self)).scatter_add(dim, index, torch.ones_like(src))
    count = count.masked_fill(count == 0, 1)
    return total / count if self.is_floating_point() else total.div(count, rounding_mode="floor")


def _index_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, reduce: str, *,
                  include_self: bool = True) -> Any:
    """index_reduce as eager's loop computes it (source's slice i reduced into self's slice
    index[i]): amax and amin as scatter_reduce's (_scatter_extrema), the index spread along
    `dim` over source's other dims; mean's sums as an index_put that adds (eager's kernels
    add in the dtype, float16/bfloat16 included: not scatter_reduce's float32 on cpu),
    divided by the counts eager makes (index_add of ones; one more with include_self, 1
    where none); a 0-dim input as a 1-D one. prod (no atomic multiply), an integer mean
    (its floor division is eager anyway) and dtypes kernels do not compute keep the op."""
    floats_mean = reduce == "mean" and self.is_floating_point()
    if not (floats_mean or reduce in ("amax", "amin")) or self.dtype not in search.KERNEL_DTYPES:
        return NotImplemented
    if self.dim() == 0:
        return _index_reduce(self.reshape(1), 0, index, source.reshape(1), reduce, include_self=include_self).reshape(())
    dim %= self.dim()
    if reduce != "mean":
        shape = [1] * source.dim()
        shape[dim] = -1
        return _scatter_extrema(self, dim, index.reshape(shape).expand(source.shape), source, reduce, include_self)
    base = self if include_self else self.index_fill(dim, index, 0)
    total = aten.index_put.default(base, [None] * dim + [index], source, True)
    count = (torch.ones_like(self) if include_self else torch.zeros_like(self)).index_add(dim, index, torch.ones_like(source))
    return (total / count.masked_fill(count == 0, 1)).contiguous()  # eager's result is contiguous whatever self's layout


# Set while _scatter_extrema calls scatter_reduce into a buffer of the identity: that call,
# traced through this table again, is the kernel (the scatter lowering's atomic maxima or
# minima), not another decomposition.
_EXTREMA_KERNEL: contextvars.ContextVar[bool] = contextvars.ContextVar("xpu_lite_extrema_kernel", default=False)


def _scatter_extrema(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, reduce: str,
                     include_self: bool) -> Any:
    """amax/amin: the src values reduced into a buffer of the identity (atomic maxima or
    minima, whose NaN stays: codegen's sticky_nan), then combined with `self` (with its
    scattered positions set to the identity without include_self) as eager's loop folds
    each value in: `isnan(v) ? v : std::max(acc, v)`, ties keeping acc. The buffer is
    fresh, so no NaN of `self` can be passed over by the atomics. float16/bfloat16 as
    float32 (exact both ways). Bitwise eager's but for NaN signs (a NaN from src comes out
    with its sign bit clear for amax, set for amin) and where +0 and -0 of src meet at one
    position (the atomics order -0 below +0; eager keeps the first)."""
    if _EXTREMA_KERNEL.get():
        return NotImplemented
    half = self.dtype in (torch.float16, torch.bfloat16)
    base, values = (self.float(), src.float()) if half else (self, src)
    floating = base.is_floating_point()
    lowest, highest = (-math.inf, math.inf) if floating else (torch.iinfo(base.dtype).min, torch.iinfo(base.dtype).max)
    identity = lowest if reduce == "amax" else highest
    if not include_self:
        base = base.scatter(dim, index, identity)
    token = _EXTREMA_KERNEL.set(True)
    try:
        reduced = aten.scatter_reduce.two(torch.full_like(base, identity), dim, index, values, reduce)
    finally:
        _EXTREMA_KERNEL.reset(token)
    wins = base < reduced if reduce == "amax" else reduced < base
    if floating:
        wins = wins | reduced.isnan()
    result = torch.where(wins, reduced, base).contiguous()  # eager's result is contiguous whatever self's layout
    return result.to(self.dtype) if half else result


def _max_unpool2d(self: torch.Tensor, indices: torch.Tensor, output_size: list[int]) -> torch.Tensor:
    out = compat.decomposition_table[aten.max_unpool2d.default](self, indices, output_size)
    if self.device.type != "cpu":  # cuda's and xpu's kernels fill a contiguous output
        return out
    return out.contiguous(memory_format=compat.suggest_memory_format(self))


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


def _nearest_default(exact: bool) -> Callable[..., torch.Tensor]:
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


def _float32_scales(torch_decomposition: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """torch._decomp's linear/cubic upsample with float32 scales (_compute_scale). A uint8
    input keeps the op: eager's cpu kernel interpolates uint8 in fixed point, the
    decomposition in float, rounded (16% of a bilinear sample's values one apart)."""
    def upsample(input: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if input.dtype == torch.uint8:
            return NotImplemented
        with compat.replaced_decomposition_helper("_compute_scale", _compute_scale(input.device)):
            return torch_decomposition(input, *args, **kwargs)

    return upsample


def _copy_of_view(view: torch._ops.OpOverload) -> Callable[..., Any]:
    """A view's `_copy` op: the view (index math in a kernel) copied to a new contiguous
    tensor, which is what eager's `_copy` ops return whatever the input's layout."""
    def copy(*args: Any, **kwargs: Any) -> Any:
        result = view(*args, **kwargs)
        if isinstance(result, torch.Tensor):
            return result.clone(memory_format=torch.contiguous_format)
        return [r.clone(memory_format=torch.contiguous_format) for r in result]

    return copy


# The `_copy` ops of views the core table keeps whole (torch._decomp has no decomposition
# for some, and core-ATen consumers such as ExecuTorch take them whole).
_COPIES_OF_VIEWS = {aten.permute_copy.default: aten.permute.default, aten.view_copy.default: aten.view.default,
                    aten.slice_copy.Tensor: aten.slice.Tensor, aten.select_copy.int: aten.select.int,
                    aten.narrow_copy.default: aten.narrow.default, aten.as_strided_copy.default: aten.as_strided.default,
                    aten.detach_copy.default: aten.detach.default, aten.unbind_copy.int: aten.unbind.int,
                    aten.split_copy.Tensor: aten.split.Tensor}

_NEAREST = {f"{prefix}{dims}d": exact for prefix, exact in (("upsample_nearest", False), ("_upsample_nearest_exact", True))
            for dims in (1, 2, 3)}

# Decompositions of our own in regions, with the reason: in place of core ATen's, or where
# the core table keeps an op whole (put, masked_scatter, the views' _copy ops; an entry may
# decline a call with NotImplemented, which keeps the op). take's `flattened[index]` makes a
# 0-dim index a Python int (`item()`, data-dependent: no trace, in Inductor too);
# index.Tensor takes it as a tensor, the same call for any other index. max_unpool2d's
# scatters into a contiguous buffer; eager's cpu result is channels-last for a
# channels-last input (cuda's and xpu's are contiguous).
_OWN_DECOMPOSITIONS: dict[torch._ops.OpOverload, tuple[Callable[..., Any], str]] = {
    aten.take.default: (_take, "take as index.Tensor of the flattened input: a 0-dim index stays a tensor"),
    aten.put.default: (_put, "put as index_put of the flattened input: a scatter kernel"),
    aten.masked_scatter.default: (_masked_scatter, "masked_scatter as a cumsum of the mask and a lookup of the source"),
    aten.scatter_add.default: (_scatter_add, "scatter_add of float16/bfloat16 on cpu added in float32 and rounded once, "
                                             "as eager's cpu kernel adds"),
    aten.index_add.default: (_index_add, "index_add as index_put with accumulate, multiplied by alpha in the dtype; "
                                         "float16/bfloat16 on cpu without alpha added in float32, as eager's cpu kernel adds"),
    aten.embedding_dense_backward.default: (_embedding_dense_backward, "embedding's backward as index_put with "
                                                                       "accumulate, float16/bfloat16 on cpu added in the "
                                                                       "dtype, as eager's cpu kernel adds"),
    aten.scatter_reduce.two: (_scatter_reduce, "scatter_reduce as ATen computes it: sum and mean scatter and "
                                               "scatter_add kernels, amax and amin atomic maxima and minima (prod "
                                               "keeps the op)"),
    aten.index_reduce.default: (_index_reduce, "index_reduce: amax and amin as scatter_reduce's atomics, mean as an "
                                               "index_put that adds in the dtype, as eager's kernels add (prod keeps "
                                               "the op)"),
    **{op: (decomposition, f"{op} as eager's binary search, its steps lookups of the boundaries in one kernel "
                           "(decomp/search.py)")
       for op, decomposition in ((aten.bucketize.Tensor, search.bucketize), (aten.bucketize.Scalar, search.bucketize),
                                 (aten.searchsorted.Tensor, search.searchsorted),
                                 (aten.searchsorted.Scalar, search.searchsorted))},
    aten.grid_sampler_2d.default: (grid_sample.grid_sampler_2d, "grid_sampler_2d as lookups of the input with eager's "
                                                                "float32 arithmetic of sizes (decomp/grid_sample.py)"),
    aten.grid_sampler_3d.default: (grid_sample.grid_sampler_3d, "grid_sampler_3d as lookups of the input with eager's "
                                                                "float32 arithmetic of sizes (decomp/grid_sample.py)"),
    aten.cudnn_grid_sampler.default: (grid_sample.cudnn_grid_sampler, "cuDNN's grid sampler (cuda, align_corners) as "
                                                                      "grid_sampler_2d's lookups: the same graph on every device"),
    aten.max_unpool2d.default: (_max_unpool2d, "max_unpool2d as torch._decomp's scatter, laid out as eager lays out "
                                               "its result (on cpu the input's memory format)"),
    **{getattr(aten, name).default: (_nearest_default(exact), f"{name} with eager's float32 scale: no float64 ops")
       for name, exact in _NEAREST.items()},
    **{getattr(aten, name).vec: (upsample_vec_body(_nearest_default(exact)), f"{name}.vec with eager's float32 scale: no float64 ops")
       for name, exact in _NEAREST.items()},
    **{op: (_float32_scales(compat.decomposition_table[op]), f"torch._decomp's {op} with float32 scales: no float64 ops; "
                                                             "a uint8 input keeps the op (eager's fixed point)")
       for op in (aten.upsample_linear1d.default, aten.upsample_bilinear2d.default, aten.upsample_trilinear3d.default,
                  aten.upsample_bicubic2d.default, aten.upsample_bilinear2d.vec, aten.upsample_trilinear3d.vec,
                  aten.upsample_bicubic2d.vec)},
    # torch._decomp leaves upsample_linear1d.vec to its C++ body
    aten.upsample_linear1d.vec: (_float32_scales(upsample_vec_body(compat.decomposition_table[aten.upsample_linear1d.default])),
                                 "upsample_linear1d.vec with float32 scales: no float64 ops; a uint8 input keeps the "
                                 "op (eager's fixed point)"),
    **{op: (_copy_of_view(view), f"{op} as {view} and a contiguous clone: index math and a copy kernel")
       for op, view in _COPIES_OF_VIEWS.items()},
}


# Functional by their schema (no alias annotation), but their composite bodies return their
# inputs or views of them (found by running the OpInfo samples through every kept body and
# comparing storages). Kept as one node, functionalization would take the outputs for new
# tensors, and an in-place update of one would not reach the input as it does in eager.
# Lite mode decomposes them, as the dispatcher does; a body found aliasing while tracing is
# decomposed too (the trace is repeated).
ALIASING_CIA: frozenset[torch._ops.OpOverload] = frozenset({
    aten.broadcast_tensors.default,
    aten.meshgrid.default,
    aten.meshgrid.indexing,
    aten.atleast_1d.Sequence,
    aten.atleast_2d.Sequence,
    aten.atleast_3d.Sequence,
    aten.type_as.default,
    aten._reshape_from_tensor.default,
    aten.unflatten_dense_tensors.default,
    aten.histogramdd.default,
    aten.histogramdd.int_bins,
    aten.histogramdd.TensorList_bins,
})


def returns_tensors(op: torch._ops.OpOverload) -> bool:
    """Whether every result of `op` is a tensor (or an optional tensor, or a list of them).

    CompositeImplicitAutograd ops that return a number, bool or size (`item`, `is_nonzero`,
    `result_type`, ...) are not kept as one node: their bodies are what eager runs on every
    device (`item` is `_local_scalar_dense`), and torch's own graph passes look for the
    decomposed node (AOTAutograd's tensorify_python_scalars turns `_local_scalar_dense` of a
    float input into tensor math; a kept `item` made it specialize the float instead, and
    rounded `math.pi` to float32 under dynamic=True)."""
    def is_tensor(t: Any) -> bool:
        if isinstance(t, (torch.ListType, torch.OptionalType)):
            t = t.getElementType()
        return isinstance(t, torch.TensorType)

    returns = op._schema.returns
    return bool(returns) and all(is_tensor(r.type) for r in returns)


# Functional by their schema, but their composite bodies write to some inputs when these
# are given: instance_norm updates running_mean/running_var in place (through an alias),
# also with use_input_stats=False (the mean of the batch's repeated copies). Kept as one
# node, functionalization would not see the write, and a training graph's backward, which
# recomputes the body, would write a second time. Lite mode decomposes such calls, as the
# dispatcher does; calls without those inputs stay one node.
HIDDEN_WRITES: dict[torch._ops.OpOverload, tuple[str, ...]] = {
    aten.instance_norm.default: ("running_mean", "running_var"),
}


def writes_inputs(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Does this call of a CompositeImplicitAutograd op write to an input its schema calls read-only?"""
    names = HIDDEN_WRITES.get(op)
    if not names:
        return False
    bound = dict(zip((a.name for a in op._schema.arguments), args), **kwargs)
    return any(bound.get(name) is not None for name in names)


# Composite bodies that compute differently when an input requires grad: eager's
# `_may_require_fw_or_bw_grad` makes eigvalsh/svdvals compute vectors too (other last bits).
# A kept node runs under no_grad in the compiled forward, so in training, when an input
# requires grad, lite mode runs their bodies op by op, exactly as eager autograd does
# (found by running the OpInfo samples through every kept body with and without grad).
# scaled_dot_product_attention picks its kernel by which inputs require grad (on cpu an
# attn_mask that requires grad takes the math path, not flash; on cuda flash and efficient
# attention have grad-only constraints): T5's learned position bias, an intermediate that
# requires grad in eager and not in the compiled forward (found by training T5).
# Any other body is checked per call while tracing (plan._grad_dependent: its steps on fake
# tensors with and without requires_grad); these stay listed because fakes cannot show
# their difference (fake tensors are subclass-like, which `_may_require_fw_or_bw_grad`
# counts as requiring grad) or because a device's kernel choice may not run on fakes.
GRAD_DEPENDENT_CIA: frozenset[torch._ops.OpOverload] = frozenset({
    aten.scaled_dot_product_attention.default,
    aten.linalg_eigvalsh.default,
    aten.linalg_eigvals.default,
    aten.linalg_svdvals.default,
    aten.linalg_cond.default,
    aten.linalg_cond.p_str,
    aten.linalg_matrix_norm.default,
    aten.linalg_matrix_norm.str_ord,
    aten.linalg_norm.default,
    aten.linalg_norm.ord_str,
    aten.nuclear_norm.default,
    aten.nuclear_norm.dim,
})


# Ops not composite in C++ on whose Autograd key torch._decomp puts a decomposition that runs
# only under the python dispatcher (while tracing); outside regions lite mode passes it by,
# so the graph differentiates them by their derivative formulas, as eager does
# (decomp/derivatives.py). Left to torch: native_batch_norm (its schema hides the
# running-stats update, so it must become _native_batch_norm_legit, the same kernel) and
# cudnn_batch_norm (decomp/cudnn.py). A test keeps both lists complete.
EAGER_AUTOGRAD: frozenset[torch._ops.OpOverload] = frozenset({
    aten.upsample_nearest1d.default,
    aten.upsample_nearest2d.default,
    aten.upsample_nearest3d.default,
    aten._upsample_nearest_exact1d.default,
    aten._upsample_nearest_exact2d.default,
    aten._upsample_nearest_exact3d.default,
    aten.upsample_bilinear2d.default,
    aten.upsample_bicubic2d.default,
    aten.hardshrink.default,
    aten.softshrink.default,
    aten.multi_margin_loss.default,
    aten.multilabel_margin_loss_forward.default,
})
AUTOGRAD_REWRITES_LEFT_TO_TORCH = frozenset({aten.native_batch_norm.default, aten.cudnn_batch_norm.default})


def is_random(op: Any) -> bool:
    return isinstance(op, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in op.tags


def own_decomposition(op: Any) -> Callable[..., Any] | None:
    """Our decomposition of `op` where torch's is replaced (_OWN_DECOMPOSITIONS): also what
    a CompositeImplicitAutograd op (upsample's `.vec`) and an op with a python autograd
    kernel (EAGER_AUTOGRAD) run when they decompose, where torch's kernels would run its own."""
    entry = _OWN_DECOMPOSITIONS.get(op)
    return None if entry is None else entry[0]


def own_decomposition_reason(op: Any) -> str | None:
    """What our decomposition of `op` does (_OWN_DECOMPOSITIONS), which calls it keeps included."""
    entry = _OWN_DECOMPOSITIONS.get(op)
    return None if entry is None else entry[1]


@lru_cache(maxsize=1)
def policy() -> tuple[dict[Any, Callable[..., Any]], dict[Any, str]]:
    """(DECOMPOSE, KEEP): core ATen decompositions plus those for fusion, minus the ops
    lowered whole and the ops kept, with our own where listed, and the kept ops."""
    table = dict(compat.core_aten_decompositions())
    table.update(compat.get_decompositions(list(_DECOMPOSE_FOR_FUSION)))
    table = {op: fn for op, fn in table.items() if op not in _LOWERED_WHOLE}
    table.update({op: fn for op, (fn, _) in _OWN_DECOMPOSITIONS.items()})
    keep = dict(_KEEP_EXPLICIT)
    keep.update({op: "random op: keeps the eager RNG stream" for op in table if is_random(op) and op not in keep})
    decompose = {op: fn for op, fn in table.items() if op not in keep}
    both = set(decompose) & set(keep)
    assert not both, f"xpu_lite policy: ops both decomposed and kept: {sorted(map(str, both))}"
    return decompose, keep
