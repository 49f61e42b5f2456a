"""Lowerings of 2-D and 3-D pooling windows: max_pool2d/3d_with_indices (values and the
indices their backward reads) and avg_pool2d/3d, and their backward ops.

Each output element walks its kH x kW (kD x kH x kW) window, unrolled (kernel size,
stride, padding and dilation are ints in the graph; sizes stay symbolic), loading the taps
that lie inside the input under a mask, in the row-major order eager's CPU and CUDA
kernels walk them:
- max: a tap is taken where it is the window's first valid one, greater than the max so
  far, or NaN (eager's `val > maxval || isnan(val)`), so values and indices are eager's,
  NaN and ties included (the first max; after a NaN, the last NaN);
- avg: the taps' float32 sum from 0, divided by eager's divisor (the window clipped to
  input plus padding, to the input alone without count_include_pad, or the override),
  so the result is bitwise eager's too. A window wholly in the padding gives 0, as in eager.
The backward ops gather too, per input element, instead of scattering per window: the
element walks the output windows that may hold it, in the row-major order eager's kernels
add their gradients to it, and adds each window's gradient in float32 from 0:
- max: where the window's stored index is the element's own;
- avg: where the window covers the element, the window's gradient divided by its divisor.
So float32 gradients are bitwise eager's. fp16/bf16 ones round once, as eager's CUDA
kernels do (eager's CPU kernels round after every add, so they differ in the last bits).
The rules load the tensors they read themselves (registered `gathers`): they are read
from memory.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import sympy
import torch
import torch.fx

from .. import _torch_compat as compat
from .._torch_compat import FloorDiv
from . import ir
from .pointwise import FLOATS, _out_cdt, _tensor_rejection
from .registry import LOWERINGS
from .space import sizes_of

aten = torch.ops.aten
MAX_TAPS = 64  # a larger window would unroll into a very long kernel: eager runs it


def _per_dim(value: Any, default: Any, dims: int) -> tuple[Any, ...]:
    """A pooling parameter as torch reads it: one int for every spatial dim, or one per dim;
    [] for the default."""
    value = default if value is None or (isinstance(value, (list, tuple)) and not value) else value
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return values * dims if len(values) == 1 else values


# op -> its role, its spatial dims and the positions of its input, kernel size, stride,
# padding and dilation (None: no dilation); the 3-D ops take their arguments where the 2-D
# ones do
_OPS = {
    aten.max_pool2d_with_indices.default: ("max", 2, 0, 1, 2, 3, 4),
    aten.avg_pool2d.default: ("avg", 2, 0, 1, 2, 3, None),
    aten.max_pool2d_with_indices_backward.default: ("max backward", 2, 1, 2, 3, 4, 5),
    aten.avg_pool2d_backward.default: ("avg backward", 2, 1, 2, 3, 4, None),
    aten.max_pool3d_with_indices.default: ("max", 3, 0, 1, 2, 3, 4),
    aten.avg_pool3d.default: ("avg", 3, 0, 1, 2, 3, None),
    aten.max_pool3d_with_indices_backward.default: ("max backward", 3, 1, 2, 3, 4, 5),
    aten.avg_pool3d_backward.default: ("avg backward", 3, 1, 2, 3, 4, None),
}


def _role(node: torch.fx.Node) -> str:
    return _OPS[node.target][0]


def _params(node: torch.fx.Node) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, padding, dilation), each one int per spatial dim (D,) H, W."""
    _, dims, _, k, st, pad, dil = _OPS[node.target]
    args = list(node.args) + [None] * 8
    kernel = _per_dim(args[k], None, dims)
    stride = _per_dim(args[st], kernel, dims)
    padding = _per_dim(args[pad], 0, dims)
    dilation = (1,) * dims if dil is None else _per_dim(args[dil], 1, dims)
    return kernel, stride, padding, dilation


def _windows_per_element(node: torch.fx.Node) -> tuple[int, ...]:
    """How many windows may hold one input element, along each spatial dim: the windows
    span (k - 1) * d + 1 elements and start s apart."""
    kernel, stride, _, dilation = _params(node)
    return tuple((k - 1) * d // s + 1 for k, s, d in zip(kernel, stride, dilation, strict=True))


def _flat(position: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """An element's index in its (D x) H x W plane, as max pooling stores it: h * W + w."""
    index = sympy.Integer(0)
    for p, size in zip(position, sizes, strict=True):
        index = index * size + p
    return index


def pool_rejection(node: torch.fx.Node, dims: int, x: Any, grad: Any = None, indices: Any = None) -> str | None:
    """Why a pooling node's tensors keep it eager, or None: a float result, input `x` and
    gradient `grad` (backward ops), int64 `indices` (max backward), an (N,) C + `dims`-D
    input, nothing statically empty, positional arguments only. Pools and adaptive pools."""
    val = node.meta.get("val")
    out = val[0] if isinstance(val, (tuple, list)) else val
    if (why := _tensor_rejection(out, FLOATS, "result")) is not None:
        return why
    named = [(x, FLOATS, "input"), (grad, FLOATS, "gradient"), (indices, (torch.int64,), "indices")]
    for arg, dtypes, what in named[:1] + [n for n in named[1:] if n[0] is not None]:
        if not isinstance(arg, torch.fx.Node) or (why := _tensor_rejection(arg.meta.get("val"), dtypes, what)):
            return why or f"its {what} is not a graph node"
    if x.meta["val"].dim() not in (dims + 1, dims + 2):
        plane = "D, H, W" if dims == 3 else "H, W"
        return f"a {x.meta['val'].dim()}-D input: this lowering pools (C, {plane}) or (N, C, {plane})"
    if any(isinstance(s, int) and s == 0 for t in (out, x.meta["val"]) for s in t.shape):
        return "a statically empty input or result: nothing to compute, eager makes it (or raises)"
    if node.kwargs:
        return f"keyword arguments {sorted(node.kwargs)}: this lowering takes positional ones"
    return None


def _check(node: torch.fx.Node) -> str | None:
    role, dims, position = _OPS[node.target][:3]
    backward = role.endswith("backward")
    grad, indices = (node.args[0] if backward else None), (node.args[7] if role == "max backward" else None)
    if (why := pool_rejection(node, dims, node.args[position], grad, indices)) is not None:
        return why
    params = _params(node)
    if not all(type(v) is int for per_dim in params for v in per_dim):
        return "a symbolic kernel size, stride, padding or dilation: the window is unrolled"
    override = _divisor_override(node)
    if override is not None and type(override) is not int:
        return "a divisor_override that is not an int"
    if math.prod(params[0]) > MAX_TAPS:
        return f"a {'x'.join(map(str, params[0]))} window: more than {MAX_TAPS} taps to unroll"
    if _role(node).endswith("backward") and math.prod(_windows_per_element(node)) > MAX_TAPS:
        return f"{_windows_per_element(node)} windows per element: more than {MAX_TAPS} to unroll"
    return None


def _divisor_override(node: torch.fx.Node) -> Any:
    position = {"avg": 6, "avg backward": 7}.get(_role(node))
    return None if position is None or len(node.args) <= position else node.args[position]


def _count_include_pad(node: torch.fx.Node) -> bool:
    position = 5 if _role(node) == "avg" else 6
    return True if len(node.args) <= position or node.args[position] is None else bool(node.args[position])


def _window(b: Any, node: torch.fx.Node, x: torch.fx.Node):
    """Per tap, in eager's order: (its input coordinates, its mask, its position in the
    plane); the element's window start and the plane's sizes, each per spatial dim."""
    kernel, stride, padding, dilation = _params(node)
    dims = len(kernel)
    coords = b.element_coords(sizes_of(node))
    lead, out = coords[:-dims], coords[-dims:]
    sizes = sizes_of(x)[-dims:]
    fake = x.meta["val"]  # its ShapeEnv decides conditions on sizes
    starts = tuple(o * s - p for o, s, p in zip(out, stride, padding, strict=True))
    per_dim = [[(start + i * d, _inside(b, node, start + i * d, size, fake)) for i in range(k)]
               for start, k, d, size in zip(starts, kernel, dilation, sizes, strict=True)]
    taps = []
    for tap in itertools.product(*per_dim):  # row-major: the last dim fastest
        if any(ok is False for _, ok in tap):
            continue  # never inside the input (a length-1 dim of avg_pool1d's, say)
        position = tuple(p for p, _ in tap)
        taps.append((lead + position, b.all_of([ok for _, ok in tap if ok is not None], node), position))
    return taps, starts, sizes


def _inside(b: Any, node: torch.fx.Node, expr: sympy.Expr, size: sympy.Expr, fake: Any,
            from_zero: bool = True) -> int | bool | None:
    """0 <= expr < size (expr < size alone where not `from_zero`): None where the ShapeEnv
    proves it for every element, False where it never holds, else a bool value (a block of
    lanes, also where it is the same for all)."""
    conditions = []
    for low, high, op in ((sympy.Integer(0), expr, "ge"), (expr, size, "lt"))[0 if from_zero else 1:]:
        gap = high - low + (1 if op == "ge" else 0)  # at least 1 where the condition holds
        if not gap.free_symbols & ir.INDEX_SYMBOLS and compat.provably_positive(gap, fake):
            continue  # the ShapeEnv knows sizes, not coordinates
        if gap.is_number:
            return False
        left, right = (expr, low) if op == "ge" else (expr, size)
        conditions.append(b.compute(op, (b.index_value(left), b.index_value(right)), node, torch.bool))
    mask = b.all_of(conditions, node)
    if mask is not None and not expr.free_symbols & ir.INDEX_SYMBOLS:
        mask = b.compute("broadcast", (mask,), node, torch.bool)  # a load's mask must be a block
    return mask


def _max_pool(b: Any, node: torch.fx.Node, x: torch.fx.Node, *rest: Any) -> tuple[int, int]:
    taps, _, sizes = _window(b, node, x)
    best = b.constant(float("-inf"), torch.float32)
    where = b.constant(0, torch.int64)
    seen = b.constant(False, torch.bool)
    for coords, mask, position in taps:
        v = b.gather(x, coords, mask)
        first = b.compute("logical_not", (seen,), node, torch.bool)
        better = b.compute("logical_or", (b.compute("gt", (v, best), node, torch.bool),
                                          b.compute("isnan", (v,), node, torch.bool)), node, torch.bool)
        take = b.compute("logical_or", (first, better), node, torch.bool)
        if mask is not None:
            take = b.compute("logical_and", (mask, take), node, torch.bool)
        best = b.compute("where", (take, v, best), node, torch.float32)
        where = b.compute("where", (take, b.index_value(_flat(position, sizes)), where), node, torch.int64)
        seen = b.constant(True, torch.bool) if mask is None else b.compute("logical_or", (seen, mask), node, torch.bool)
    return best, where  # float32, the compute dtype of every float result


def _avg_pool(b: Any, node: torch.fx.Node, x: torch.fx.Node, *rest: Any) -> int:
    taps, starts, sizes = _window(b, node, x)
    total = b.constant(0.0, torch.float32)
    for coords, mask, _ in taps:  # a masked tap loads 0: the sum is eager's sum of the valid taps
        total = b.compute("add", (total, b.gather(x, coords, mask)), node, torch.float32)
    divisor, empty = _divisor(b, node, starts, sizes)
    mean = b.compute("truediv", (total, b.cast(divisor, torch.float32, node)), node, torch.float32)
    mean = b.compute("where", (empty, b.constant(0.0, torch.float32), mean), node, torch.float32)
    return b.cast(mean, _out_cdt(node), node)


def _divisor(b: Any, node: torch.fx.Node, starts: tuple[sympy.Expr, ...],
             sizes: tuple[sympy.Expr, ...]) -> tuple[int, int]:
    """The int64 divisor of the avg window starting at `starts`, as eager computes it, and
    whether the window holds no input element."""
    kernel, _, padding, _ = _params(node)

    def i64(expr: sympy.Expr) -> int:
        return b.index_value(sympy.sympify(expr))

    def op(name: str, *values: int) -> int:
        return b.compute(name, values, node, torch.int64)

    def product(values: list[int]) -> int:
        return functools.reduce(lambda total, value: op("mul", total, value), values)

    ends = [op("minimum", i64(start + k), i64(size + p))
            for start, k, size, p in zip(starts, kernel, sizes, padding, strict=True)]
    lows = [op("maximum", i64(start), i64(0)) for start in starts]
    highs = [op("minimum", end, i64(size)) for end, size in zip(ends, sizes, strict=True)]
    empty = b.any_of([b.compute("le", (high, low), node, torch.bool) for high, low in zip(highs, lows, strict=True)], node)
    if (override := _divisor_override(node)) is not None:
        return b.constant(override, torch.int64), empty
    if _count_include_pad(node):
        return product([op("sub", end, i64(start)) for end, start in zip(ends, starts, strict=True)]), empty
    return product([op("sub", high, low) for high, low in zip(highs, lows, strict=True)]), empty


def _windows_over(b: Any, node: torch.fx.Node, grad: torch.fx.Node):
    """Per output window that may hold the current input element, in the order eager adds
    their gradients (row-major over the outputs): its coordinates in the gradient, the
    lanes where it exists and covers the element (None: all), and its start per spatial
    dim; and the element's position in its plane."""
    kernel, stride, padding, _ = _params(node)
    dims = len(kernel)
    coords = b.element_coords(sizes_of(node))
    lead, position = coords[:-dims], coords[-dims:]
    out_sizes = sizes_of(grad)[-dims:]
    fake = grad.meta["val"]
    covers = _role(node) == "avg backward"  # max: the stored index says it

    def holds(expr: sympy.Expr, op: str, bound: int) -> int | bool | None:
        """`expr op bound` per element: None where it always holds, False where never."""
        if expr.is_number:
            return None if {"ge": expr >= bound, "lt": expr < bound}[op] else False
        return b.compute(op, (b.index_value(expr), b.constant(bound, torch.int64)), node, torch.bool)

    def along(x: sympy.Expr, k: int, s: int, p: int, size: sympy.Expr, count: int):
        last = FloorDiv(x + p, s)  # the last window starting at or before x (x + p >= 0)
        found = []
        for t in reversed(range(count)):  # the earlier windows first
            o = last - t
            conditions = [_inside(b, node, o, size, fake, from_zero=False)]  # o < size
            if t:  # o >= 0
                conditions.append(holds(x + p, "ge", t * s))
            if covers and t * s + s - 1 >= k:  # x - start = (x + p) % s + t * s may reach k
                conditions.append(holds(x + p - o * s, "lt", k))
            if not any(c is False for c in conditions):
                found.append((o, [c for c in conditions if c is not None]))
        return found

    per_dim = [along(*args) for args in zip(position, kernel, stride, padding, out_sizes, _windows_per_element(node),
                                            strict=True)]
    windows = []
    for window in itertools.product(*per_dim):  # row-major over the outputs
        out = tuple(o for o, _ in window)
        mask = b.all_of([c for _, conditions in window for c in conditions], node)
        windows.append((lead + out, mask, tuple(o * s - p for o, s, p in zip(out, stride, padding, strict=True))))
    return windows, position


def _add_where(b: Any, node: torch.fx.Node, total: int, grad: int, mask: int | None) -> int:
    added = b.compute("add", (total, grad), node, torch.float32)
    return added if mask is None else b.compute("where", (mask, added, total), node, torch.float32)


def _max_pool_backward(b: Any, node: torch.fx.Node, grad: torch.fx.Node, x: torch.fx.Node, *args: Any) -> int:
    indices = args[5]
    windows, position = _windows_over(b, node, grad)
    own = b.index_value(_flat(position, sizes_of(x)[-len(position):]))
    total = b.constant(0.0, torch.float32)
    for coords, mask, _ in windows:
        match = b.compute("eq", (b.gather(indices, coords, mask), own), node, torch.bool)
        if mask is not None:  # a masked load reads 0, the index of the plane's first element
            match = b.compute("logical_and", (mask, match), node, torch.bool)  # (and a gradient of 0)
        total = _add_where(b, node, total, b.gather(grad, coords, mask), match)
    return b.cast(total, _out_cdt(node), node)


def _avg_pool_backward(b: Any, node: torch.fx.Node, grad: torch.fx.Node, x: torch.fx.Node, *args: Any) -> int:
    windows, position = _windows_over(b, node, grad)
    sizes = sizes_of(x)[-len(position):]
    total = b.constant(0.0, torch.float32)
    for coords, mask, starts in windows:
        divisor, _ = _divisor(b, node, starts, sizes)  # not empty: it covers the element
        share = b.compute("truediv", (b.gather(grad, coords, mask), b.cast(divisor, torch.float32, node)), node,
                          torch.float32)
        total = _add_where(b, node, total, share, mask)
    return b.cast(total, _out_cdt(node), node)


# role -> (rule, the positions it loads itself, positions it never reads)
_RULES = {"max": (_max_pool, (0,), ()), "avg": (_avg_pool, (0,), ()),
          "max backward": (_max_pool_backward, (0, 7), (1,)), "avg backward": (_avg_pool_backward, (0,), (1,))}
for _op, _spec in _OPS.items():
    _rule, _gathers, _unread = _RULES[_spec[0]]
    LOWERINGS.register(_op, checker=_check, gathers=_gathers, unread=_unread, coordinates=True, inlines=True)(_rule)
