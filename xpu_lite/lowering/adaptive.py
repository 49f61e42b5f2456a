"""Lowerings of adaptive pools: _adaptive_avg_pool2d/3d and adaptive_max_pool2d/3d (the
1-D pools reach them through a length-1 dim), and their backward ops.

Along each spatial dim, result element o of `out` pools the input positions
[floor(o * in / out), ceil((o + 1) * in / out)): a window whose length depends on o and on
the input size, which is symbolic, so it cannot be unrolled as pooling.py unrolls fixed
windows (torch._decomp's decomposition branches on `in % out`; Inductor compiles a graph
per input size). Each op is one reduction kernel: xindex walks the result's elements,
rindex a box of window offsets K_1 x ... x K_n, K = ceil(in / out) + 1 (which bounds
every window's length for every input size; the exact longest window where the sizes are
static), and an offset past the element's own window loads nothing.
- avg: the window's elements added in float32 one at a time, in row-major order, from 0,
  then divided by the window's length along each dim in turn (`sum / kh / kw`), as eager's
  cpu kernels (and its cuda kernel for contiguous 2-D inputs) do: the kernel is ordered (RBLOCK 1, KernelBuilder.in_order), so the result is
  bitwise eager's (but in fp16/bf16 3-D, where eager's cpu kernel adds in the dtype);
- max: the window's max (NaN propagates) and its index h * W + w in the plane (or
  (d * H + h) * W + w) as eager picks it: the first max in row-major order, or, where the
  window holds a NaN, its last NaN (eager's `val > max || isnan(val)`). Values and indices
  are bitwise eager's.
The backward ops are the same kind of reduction over the input's elements: input position
i lies in the windows of results [floor(i * out / in), ceil((i + 1) * out / in)) (the
forward's formula with in and out swapped), at most ceil(out / in) + 1 of them along a dim.
An element adds the gradient of each such window, in row-major order as eager does
(ordered, so float32 gradients are bitwise eager's): divided by the window's lengths
(avg), or where the window's stored index is its own (max).
"""
from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import FloorDiv
from . import ir
from .pooling import _flat, pool_rejection
from .registry import LOWERINGS
from .space import sizes_of

aten = torch.ops.aten

# op -> (role, spatial dims)
_OPS = {
    aten._adaptive_avg_pool2d.default: ("avg", 2),
    aten._adaptive_avg_pool3d.default: ("avg", 3),
    aten.adaptive_max_pool2d.default: ("max", 2),
    aten.adaptive_max_pool3d.default: ("max", 3),
    aten._adaptive_avg_pool2d_backward.default: ("avg backward", 2),
    aten._adaptive_avg_pool3d_backward.default: ("avg backward", 3),
    aten.adaptive_max_pool2d_backward.default: ("max backward", 2),
    aten.adaptive_max_pool3d_backward.default: ("max backward", 3),
}


def _span(e: sympy.Expr, n: sympy.Expr, m: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """[start, end) of the positions along a dim of m elements that element e of a dim of n
    elements pools (forward: n = out, m = in) or lies under (backward: n = in, m = out)."""
    return FloorDiv(e * m, n), FloorDiv((e + 1) * m + n - 1, n)


def _static_lengths(n: sympy.Expr, m: sympy.Expr) -> list[int] | None:
    """The length of every element's span where both sizes are static, else None."""
    if not (n.is_number and m.is_number):
        return None
    n, m = int(n), int(m)
    return [((e + 1) * m + n - 1) // n - e * m // n for e in range(n)]


def _bound(n: sympy.Expr, m: sympy.Expr) -> sympy.Expr:
    """The number of window offsets an element walks: the longest span where the sizes are
    static, else ceil(m / n) + 1, which no span exceeds for any sizes."""
    lengths = _static_lengths(n, m)
    return FloorDiv(m + n - 1, n) + 1 if lengths is None else sympy.Integer(max(lengths))


def _tensors(node: torch.fx.Node) -> tuple[torch.fx.Node, torch.fx.Node]:
    """(the tensor whose elements the kernel walks, the tensor it walks windows of)."""
    if _OPS[node.target][0].endswith("backward"):
        return node.args[1], node.args[0]  # the input's elements; the windows of the gradient
    return node, node.args[0]  # the result's elements; windows of the input


def _space(node: torch.fx.Node) -> tuple[tuple[sympy.Expr, ...], tuple[int, ...]]:
    """The element's coordinates, then one window offset per spatial dim (reduced)."""
    dims = _OPS[node.target][1]
    walked, windowed = _tensors(node)
    sizes = sizes_of(walked)
    bounds = tuple(_bound(n, m) for n, m in zip(sizes[-dims:], sizes_of(windowed)[-dims:], strict=True))
    return sizes + bounds, tuple(range(len(sizes), len(sizes) + dims))


def _check(node: torch.fx.Node) -> str | None:
    role, dims = _OPS[node.target]
    if role.endswith("backward"):
        return pool_rejection(node, dims, node.args[1], node.args[0], node.args[2] if role == "max backward" else None)
    return pool_rejection(node, dims, node.args[0])


def _windows(b: Any, node: torch.fx.Node, windowed: torch.fx.Node):
    """For the current (element, window offset): the element's leading and spatial
    coordinates, the position in `windowed` the offset reaches along each spatial dim, the
    lanes where it lies in the element's window (None: all), and the sizes of both."""
    dims = _OPS[node.target][1]
    coords = b.element_coords(b.space.sizes)  # of the pool's own space (LOWERINGS.own_space)
    lead, own, offsets = coords[:-2 * dims], coords[-2 * dims:-dims], coords[-dims:]
    own_sizes = b.space.sizes[-2 * dims:-dims]
    other_sizes = sizes_of(windowed)[-dims:]
    positions, inside = [], []
    for e, k, n, m, bound in zip(own, offsets, own_sizes, other_sizes, b.space.sizes[-dims:], strict=True):
        start, end = _span(e, n, m)
        positions.append(start + k)
        lengths = _static_lengths(n, m)
        if lengths is not None and min(lengths) == bound:
            continue  # static sizes, every window as long as the bound: every offset is inside
        inside.append(b.compute("lt", (b.index_value(k), b.index_value(end - start)), node, torch.bool))
    return lead, own, tuple(positions), b.all_of(inside, node), own_sizes, other_sizes


def _per_length(b: Any, node: torch.fx.Node, value: int, positions: tuple[sympy.Expr, ...],
                n_sizes: tuple[sympy.Expr, ...], m_sizes: tuple[sympy.Expr, ...]) -> int:
    """`value` divided by the length of the avg window of the results at `positions` along
    each dim in turn, as eager divides (`sum / kh / kw`)."""
    for p, n, m in zip(positions, n_sizes, m_sizes, strict=True):
        start, end = _span(p, n, m)
        value = b.compute("truediv", (value, b.cast(b.index_value(end - start), torch.float32, node)), node, torch.float32)
    return value


def _adaptive_avg(b: Any, node: torch.fx.Node, x: torch.fx.Node, *rest: Any) -> int:
    lead, own, positions, inside, out_sizes, in_sizes = _windows(b, node, x)
    b.in_order()  # eager adds a window's elements one by one, in row-major order
    total = b.reduce("sum", b.gather(x, lead + positions, inside), node, torch.float32)
    return b.cast(_per_length(b, node, total, own, out_sizes, in_sizes), ir.compute_dtype(node.meta["val"].dtype), node)


def _adaptive_max(b: Any, node: torch.fx.Node, x: torch.fx.Node, *rest: Any) -> tuple[int, int]:
    lead, _, positions, inside, _, in_sizes = _windows(b, node, x)
    i64, f32, boolean = torch.int64, torch.float32, torch.bool
    value = b.gather(x, lead + positions, inside)
    if inside is not None:  # an offset past the window: -inf, which never beats an element
        value = b.compute("where", (inside, value, b.constant(float("-inf"), f32)), node, f32)
    best = b.reduce("max", value, node, f32)
    flat = b.index_value(_flat(positions, in_sizes))
    nan = b.compute("isnan", (value,), node, boolean)
    last_nan = b.reduce("max", b.compute("where", (nan, flat, b.constant(-1, i64)), node, i64), node, i64)
    # an offset past the window ties only where the max is -inf, and then the window's first
    # element, whose index is the smallest of all offsets', ties too
    tie = b.compute("eq", (value, best), node, boolean)
    no_tie = b.constant(torch.iinfo(torch.int64).max, i64)
    first = b.reduce("min", b.compute("where", (tie, flat, no_tie), node, i64), node, i64)
    index = b.compute("where", (b.compute("isnan", (best,), node, boolean), last_nan, first), node, i64)
    return b.cast(best, ir.compute_dtype(node.meta["val"][0].dtype), node), index


def _adaptive_avg_backward(b: Any, node: torch.fx.Node, grad: torch.fx.Node, *rest: Any) -> int:
    lead, _, positions, inside, in_sizes, out_sizes = _windows(b, node, grad)
    b.in_order()  # eager adds the windows' gradients to an element one by one, in row-major order
    # a lane outside the element's windows loads 0, and its window length is not 0
    share = _per_length(b, node, b.gather(grad, lead + positions, inside), positions, out_sizes, in_sizes)
    total = b.reduce("sum", share, node, torch.float32)
    return b.cast(total, ir.compute_dtype(node.meta["val"].dtype), node)


def _adaptive_max_backward(b: Any, node: torch.fx.Node, grad: torch.fx.Node, x: torch.fx.Node,
                           indices: torch.fx.Node) -> int:
    lead, own, positions, inside, in_sizes, _ = _windows(b, node, grad)
    b.in_order()  # eager adds the windows' gradients to an element one by one, in row-major order
    coords = lead + positions
    # an offset past the element's windows loads index 0, maybe the element's own, and a
    # gradient of 0, which adds nothing
    match = b.compute("eq", (b.gather(indices, coords, inside), b.index_value(_flat(own, in_sizes))), node, torch.bool)
    share = b.compute("where", (match, b.gather(grad, coords, inside), b.constant(0.0, torch.float32)), node,
                      torch.float32)
    total = b.reduce("sum", share, node, torch.float32)
    return b.cast(total, ir.compute_dtype(node.meta["val"].dtype), node)


# role -> (rule, the positions it loads itself, positions it never reads)
_RULES = {"avg": (_adaptive_avg, (0,), ()), "max": (_adaptive_max, (0,), ()),
          "avg backward": (_adaptive_avg_backward, (0,), (1,)), "max backward": (_adaptive_max_backward, (0, 2), (1,))}
for _op, (_role, _) in _OPS.items():
    _rule, _gathers, _unread = _RULES[_role]
    LOWERINGS.register(_op, checker=_check, gathers=_gathers, unread=_unread, space=_space)(_rule)
