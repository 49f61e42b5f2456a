"""Decompositions of ops that write or read at positions from an index tensor (take, put,
masked_scatter, scatter_add, index_add, embedding's backward, scatter_reduce, index_reduce,
max_unpool2d), in regions: policy.py lists them. Where eager's kernels accumulate
float16/bfloat16 differently on cpu and on GPUs, each follows the device's eager."""
from __future__ import annotations

import contextvars
import math
from typing import Any

import torch

from .. import _torch_compat as compat
from .search import KERNEL_DTYPES

aten = torch.ops.aten
_HALF = (torch.float16, torch.bfloat16)
_SMALL = (torch.uint8, torch.int8, torch.int16)


def take(self: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return aten.index.Tensor(self.reshape(-1), [index])


def put(self: torch.Tensor, index: torch.Tensor, source: torch.Tensor, accumulate: bool = False) -> Any:
    """put as index_put of the flattened input (Inductor's): a scatter kernel. Eager's
    result keeps the input's strides, so an input that is not contiguous keeps the op."""
    if not self.is_contiguous():
        return NotImplemented
    return aten.index_put(self.reshape(-1), [index], source.reshape(index.shape), accumulate).view(self.shape)


def select_scatter(self: torch.Tensor, src: torch.Tensor, dim: int, index: Any) -> Any:
    """select_scatter checks its index as eager's does (its meta does not: a kernel placed
    nothing for an index past the end), then keeps the op, which a kernel places whole."""
    size = self.shape[dim]
    message = lambda: f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {dim}"  # noqa: E731
    torch._check_index(index >= -size, message)
    torch._check_index(index < size, message)
    return NotImplemented


def masked_scatter(self: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> Any:
    """masked_scatter as eager's cuda algorithm (Inductor's): the k-th set position of the
    mask takes source's k-th element (a cumsum of the mask), read by a lookup; eager's
    result is contiguous. An empty source (nothing to read; eager accepts it with an empty
    mask) keeps the op, and so does a source whose size is data-dependent (masked_select's
    gradient): unless it cannot be empty, there is nothing to guard on."""
    if compat.guard_or_true(source.numel() == 0):
        return NotImplemented
    self, mask = aten.broadcast_tensors([self, mask])
    positions = (mask.reshape(-1).cumsum(0) - 1).clamp(min=0)
    picked = aten.index.Tensor(source.reshape(-1), [positions])
    return torch.where(mask.reshape(-1), picked, self.reshape(-1)).view(self.shape)


def _half_on_cpu(t: torch.Tensor) -> bool:
    """Where eager's cpu kernels and torch's decompositions accumulate float16/bfloat16 differently."""
    return t.device.type == "cpu" and t.dtype in _HALF


def scatter_add(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Any:
    """Eager's cpu scatter_add of float16 and bfloat16 adds in float32 and rounds once (its
    result is `self.float().scatter_add(dim, index, src.float())` rounded): so here, float32
    atomic adds and a cast. Its GPU kernels add in the dtype itself (atomics): the op as is.
    uint8/int8/int16: int32 adds, wrapped once (index_put)."""
    if self.dtype in _SMALL:
        return self.int().scatter_add(dim, index, src.int()).to(self.dtype)
    if not _half_on_cpu(self):
        return NotImplemented
    return self.float().scatter_add(dim, index, src.float()).to(self.dtype)


def index_put(self: torch.Tensor, indices: list[Any], values: torch.Tensor, accumulate: bool = False) -> Any:
    """uint8/int8/int16 adds (accumulate) in int32, cast back: eager adds in the dtype,
    wrapping at every add, and the sum wrapped once is the same (addition modulo 2**bits,
    in any order), which int32 atomic adds can make (there is no atomic add of those
    dtypes). Anything else: the op as is."""
    if not accumulate or self.dtype not in _SMALL:
        return NotImplemented
    return aten.index_put.default(self.int(), indices, values.int(), True).to(self.dtype)


def index_add(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1) -> Any:
    """torch._decomp's index_add (index_put with accumulate) with eager's arithmetic: eager's
    kernels multiply by alpha in the dtype (`source * alpha` rounded, alpha itself rounded
    to a float16/bfloat16 first), where the decomposition's product has a Python float.
    Eager's cpu kernel adds float16/bfloat16 without alpha in float32 and rounds once (with
    alpha it adds in the dtype, as index_put does), and float32 with alpha as an axpy (the
    product fused into the add, one rounding), which an atomic add cannot: that keeps the op."""
    _check_source_shape(self, dim, source)
    if alpha == 1 and _half_on_cpu(self):
        return self.float().index_add(dim, index, source.float()).to(self.dtype)
    if alpha != 1 and self.device.type == "cpu" and self.dtype == torch.float32:
        return NotImplemented
    if alpha != 1 and self.dtype.is_floating_point:
        source, alpha = source * torch.scalar_tensor(alpha, dtype=self.dtype, device=self.device), 1
    return compat.decomposition_table[aten.index_add.default](self, dim, index, source, alpha=alpha)


def _check_source_shape(self: torch.Tensor, dim: int, source: torch.Tensor) -> None:
    """index_add's and index_reduce's check that eager's meta makes (index_func_meta_impl)
    and torch._decomp's does not (an index_put broadcasts source, a (2,) source into a
    (3, 2) input's rows): the shapes match but for `dim`."""
    self_sizes, source_sizes = list(self.shape), list(source.shape)
    if self.dim() and source.dim():
        del self_sizes[dim % self.dim()], source_sizes[dim % source.dim()]
    torch._check(self_sizes == source_sizes, lambda: (
        "source tensor shape must match self tensor shape, excluding the specified dimension. "
        f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}"))


def embedding_dense_backward(grad_output: torch.Tensor, indices: torch.Tensor, num_weights: int, padding_idx: int,
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


def unsafe_masked_index_put_accumulate(x: torch.Tensor, mask: torch.Tensor, indices: list[Any],
                                       values: torch.Tensor) -> torch.Tensor:
    """torch._decomp's, without its guard on whether `x` is empty, which a data-dependent
    size cannot answer (the gradient of an embedding of a boolean-masked weight raised, in
    Inductor too): `x` is empty only if known so. Where it is empty at run time, eager's
    embedding raised in the forward already (any index is out of range)."""
    if compat.statically_known_true(x.numel() == 0):
        return x.clone()
    indices = [i.clamp(min=-x.size(d), max=x.size(d) - 1) if i is not None else None for d, i in enumerate(indices)]
    return aten._unsafe_index_put(x, indices, values.masked_fill(~mask, 0), accumulate=True)


def scatter_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, reduce: str, *,
                   include_self: bool = True) -> Any:
    """scatter_reduce as ATen's scatter_reduce_two computes it on every device: without
    include_self the positions scattered to are set to the reduction's identity first (0;
    -inf/inf, an integer dtype's lowest/highest), then the values are combined.
    sum and mean: added (scatter_add: atomic adds, in index order under the interpreter);
    mean divides by the number of values added (one more with include_self, 1 where none
    was: the counts add in the dtype, so uint8/int8/int16 ones wrap as eager's), floor
    division for integers (a kernel: lowering/division.py proves the counts have no 0).
    amax and amin: _scatter_extrema. prod keeps the op (no atomic multiply), and so do
    dtypes kernels do not compute (eager's own error for a bool mean)."""
    if reduce not in ("sum", "mean", "amax", "amin") or self.dtype not in KERNEL_DTYPES + _SMALL:
        return NotImplemented
    if reduce in ("amax", "amin"):
        return _scatter_extrema(self, dim, index, src, reduce, include_self)
    total = (self if include_self else self.scatter(dim, index, 0)).scatter_add(dim, index, src)
    if reduce == "sum":
        return total
    count = (torch.ones_like(self) if include_self else torch.zeros_like(self)).scatter_add(dim, index, torch.ones_like(src))
    return _mean(total, count)


def _mean(total: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """ATen's mean of the scatters: the sums divided by the counts, 1 where none was added;
    floor division for integers."""
    count = count.masked_fill(count == 0, 1)
    return total / count if total.is_floating_point() else total.div(count, rounding_mode="floor")


def index_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, reduce: str, *,
                 include_self: bool = True) -> Any:
    """index_reduce as eager's loop computes it (source's slice i reduced into self's slice
    index[i]): amax and amin as scatter_reduce's (_scatter_extrema), the index spread along
    `dim` over source's other dims; mean's sums as an index_put that adds (eager's kernels
    add in the dtype, float16/bfloat16 included: not scatter_reduce's float32 on cpu),
    divided by the counts eager makes (index_add of ones; one more with include_self, 1
    where none; floor division for integers); a 0-dim input as a 1-D one. prod (no atomic
    multiply) and dtypes kernels do not compute keep the op."""
    if reduce not in ("mean", "amax", "amin") or self.dtype not in KERNEL_DTYPES + _SMALL:
        return NotImplemented
    _check_source_shape(self, dim, source)
    if self.dim() == 0:
        return index_reduce(self.reshape(1), 0, index, source.reshape(1), reduce, include_self=include_self).reshape(())
    dim %= self.dim()
    if reduce != "mean":
        shape = [1] * source.dim()
        shape[dim] = -1
        return _scatter_extrema(self, dim, index.reshape(shape).expand(source.shape), source, reduce, include_self)
    base = self if include_self else self.index_fill(dim, index, 0)
    total = aten.index_put.default(base, [None] * dim + [index], source, True)
    count = (torch.ones_like(self) if include_self else torch.zeros_like(self)).index_add(dim, index, torch.ones_like(source))
    return _mean(total, count).contiguous()  # eager's result is contiguous whatever self's layout


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
    position (the atomics order -0 below +0; eager keeps the first). uint8/int8/int16 as
    int32 (exact both ways too)."""
    if _EXTREMA_KERNEL.get():
        return NotImplemented
    wide = torch.float32 if self.dtype in _HALF else torch.int32 if self.dtype in _SMALL else self.dtype
    base, values = self.to(wide), src.to(wide)
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
    return result.to(self.dtype)


def max_unpool2d(self: torch.Tensor, indices: torch.Tensor, output_size: list[int]) -> torch.Tensor:
    out = compat.decomposition_table[aten.max_unpool2d.default](self, indices, output_size)
    if self.device.type != "cpu":  # cuda's and xpu's kernels fill a contiguous output
        return out
    return out.contiguous(memory_format=compat.suggest_memory_format(self))
