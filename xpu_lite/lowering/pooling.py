"""Lowerings of 2-D pooling windows: max_pool2d_with_indices (values and the indices its
backward reads) and avg_pool2d, and their backward ops.

Each output element walks its kH x kW window, unrolled (kernel size, stride, padding and
dilation are ints in the graph; sizes stay symbolic), loading the taps that lie inside the
input under a mask, in the row-major order eager's CPU and CUDA kernels walk them:
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

import math
from typing import Any

import sympy
import torch
import torch.fx

from .. import _torch_compat as compat
from .._torch_compat import FloorDiv
from . import ir
from .pointwise import FLOATS, _out_cdt, _tensor_rejection
from .kernel_builder import sizes_of
from .registry import LOWERINGS

aten = torch.ops.aten
MAX_TAPS = 64  # a larger window would unroll into a very long kernel: eager runs it


def _pair(value: Any, default: Any) -> tuple[Any, Any]:
    """A pooling parameter as torch reads it: one int for both dims, or two; [] for the default."""
    value = default if value is None or (isinstance(value, (list, tuple)) and not value) else value
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return (values[0], values[-1])


# op -> the positions of its input, kernel size, stride, padding and dilation (None: no dilation)
_POSITIONS = {
    aten.max_pool2d_with_indices.default: (0, 1, 2, 3, 4),
    aten.avg_pool2d.default: (0, 1, 2, 3, None),
    aten.max_pool2d_with_indices_backward.default: (1, 2, 3, 4, 5),
    aten.avg_pool2d_backward.default: (1, 2, 3, 4, None),
}
_BACKWARD = (aten.max_pool2d_with_indices_backward.default, aten.avg_pool2d_backward.default)


def _params(node: torch.fx.Node) -> tuple[tuple[int, int], ...]:
    """(kernel, stride, padding, dilation), each (along H, along W)."""
    _, k, st, pad, dil = _POSITIONS[node.target]
    args = list(node.args) + [None] * 8
    kernel = _pair(args[k], None)
    stride = _pair(args[st], kernel)
    padding = _pair(args[pad], 0)
    dilation = (1, 1) if dil is None else _pair(args[dil], 1)
    return kernel, stride, padding, dilation


def _windows_per_element(node: torch.fx.Node) -> tuple[int, int]:
    """How many windows may hold one input element, along H and along W: the windows span
    (k - 1) * d + 1 elements and start s apart."""
    (kh, kw), (sh, sw), _, (dh, dw) = _params(node)
    return ((kh - 1) * dh // sh + 1, (kw - 1) * dw // sw + 1)


def _check(node: torch.fx.Node) -> str | None:
    x = node.args[_POSITIONS[node.target][0]]
    val = node.meta.get("val")
    out = val[0] if isinstance(val, (tuple, list)) else val
    if (why := _tensor_rejection(out, FLOATS, "result")) is not None:
        return why
    if not isinstance(x, torch.fx.Node) or (why := _tensor_rejection(x.meta.get("val"), FLOATS, "input")) is not None:
        return why or "an input that is not a graph node"
    if node.target in _BACKWARD:
        grad = node.args[0]
        if not isinstance(grad, torch.fx.Node) or (why := _tensor_rejection(grad.meta.get("val"), FLOATS, "gradient")):
            return why or "a gradient that is not a graph node"
    if node.target is aten.max_pool2d_with_indices_backward.default:
        indices = node.args[7]
        if not isinstance(indices, torch.fx.Node) or \
                (why := _tensor_rejection(indices.meta.get("val"), (torch.int64,), "indices")):
            return why or "indices that are not a graph node"
    if x.meta["val"].dim() not in (3, 4):
        return f"a {x.meta['val'].dim()}-D input: this lowering pools (C, H, W) or (N, C, H, W)"
    if any(isinstance(s, int) and s == 0 for s in out.shape):
        return "a statically empty result: nothing to compute, eager makes it"
    if node.kwargs:
        return f"keyword arguments {sorted(node.kwargs)}: this lowering takes positional ones"
    params = _params(node)
    if not all(type(v) is int for pair in params for v in pair):
        return "a symbolic kernel size, stride, padding or dilation: the window is unrolled"
    override = _divisor_override(node)
    if override is not None and type(override) is not int:
        return "a divisor_override that is not an int"
    if params[0][0] * params[0][1] > MAX_TAPS:
        return f"a {params[0][0]}x{params[0][1]} window: more than {MAX_TAPS} taps to unroll"
    if node.target in _BACKWARD and math.prod(_windows_per_element(node)) > MAX_TAPS:
        return f"{_windows_per_element(node)} windows per element: more than {MAX_TAPS} to unroll"
    return None


def _divisor_override(node: torch.fx.Node) -> Any:
    position = {aten.avg_pool2d.default: 6, aten.avg_pool2d_backward.default: 7}.get(node.target)
    return None if position is None or len(node.args) <= position else node.args[position]


def _count_include_pad(node: torch.fx.Node) -> bool:
    position = 5 if node.target is aten.avg_pool2d.default else 6
    return True if len(node.args) <= position or node.args[position] is None else bool(node.args[position])


def _window(b: Any, node: torch.fx.Node, x: torch.fx.Node):
    """Per tap, in eager's order: (its input coordinates, its mask, h and w); and the
    element's window starts (h, w)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _params(node)
    coords = b.element_coords(sizes_of(node))
    lead, (oh, ow) = coords[:-2], coords[-2:]
    height, width = sizes_of(x)[-2:]
    fake = x.meta["val"]  # its ShapeEnv decides conditions on sizes
    h0, w0 = oh * sh - ph, ow * sw - pw
    rows = [(h0 + i * dh, _inside(b, node, h0 + i * dh, height, fake)) for i in range(kh)]
    cols = [(w0 + j * dw, _inside(b, node, w0 + j * dw, width, fake)) for j in range(kw)]
    taps = []
    for h, h_ok in rows:
        for w, w_ok in cols:
            if h_ok is False or w_ok is False:
                continue  # never inside the input (a length-1 dim of avg_pool1d's, say)
            conditions = [c for c in (h_ok, w_ok) if c is not None]
            mask = None if not conditions else conditions[0] if len(conditions) == 1 else \
                b.compute("logical_and", tuple(conditions), node, torch.bool)
            taps.append((lead + (h, w), mask, h, w))
    return taps, (h0, w0), (height, width)


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
    if not conditions:
        return None
    mask = conditions[0] if len(conditions) == 1 else b.compute("logical_and", tuple(conditions), node, torch.bool)
    if not expr.free_symbols & ir.INDEX_SYMBOLS:
        mask = b.compute("broadcast", (mask,), node, torch.bool)  # a load's mask must be a block
    return mask


def _max_pool(b: Any, node: torch.fx.Node, x: torch.fx.Node, *rest: Any) -> tuple[int, int]:
    taps, _, (_, width) = _window(b, node, x)
    best = b.constant(float("-inf"), torch.float32)
    where = b.constant(0, torch.int64)
    seen = b.constant(False, torch.bool)
    for coords, mask, h, w in taps:
        v = b.gather(x, coords, mask)
        first = b.compute("logical_not", (seen,), node, torch.bool)
        better = b.compute("logical_or", (b.compute("gt", (v, best), node, torch.bool),
                                          b.compute("isnan", (v,), node, torch.bool)), node, torch.bool)
        take = b.compute("logical_or", (first, better), node, torch.bool)
        if mask is not None:
            take = b.compute("logical_and", (mask, take), node, torch.bool)
        best = b.compute("where", (take, v, best), node, torch.float32)
        where = b.compute("where", (take, b.index_value(h * width + w), where), node, torch.int64)
        seen = b.constant(True, torch.bool) if mask is None else b.compute("logical_or", (seen, mask), node, torch.bool)
    return best, where  # float32, the compute dtype of every float result


def _avg_pool(b: Any, node: torch.fx.Node, x: torch.fx.Node, *rest: Any) -> int:
    taps, (h0, w0), (height, width) = _window(b, node, x)
    total = b.constant(0.0, torch.float32)
    for coords, mask, _, _ in taps:  # a masked tap loads 0: the sum is eager's sum of the valid taps
        total = b.compute("add", (total, b.gather(x, coords, mask)), node, torch.float32)
    divisor, empty = _divisor(b, node, h0, w0, height, width)
    mean = b.compute("truediv", (total, b.cast(divisor, torch.float32, node)), node, torch.float32)
    mean = b.compute("where", (empty, b.constant(0.0, torch.float32), mean), node, torch.float32)
    return b.cast(mean, _out_cdt(node), node)


def _divisor(b: Any, node: torch.fx.Node, h0: sympy.Expr, w0: sympy.Expr, height: sympy.Expr,
             width: sympy.Expr) -> tuple[int, int]:
    """The int64 divisor of the avg window starting at (h0, w0), as eager computes it, and
    whether the window holds no input element."""
    (kh, kw), _, (ph, pw), _ = _params(node)

    def i64(expr: sympy.Expr) -> int:
        return b.index_value(sympy.sympify(expr))

    def op(name: str, *values: int) -> int:
        return b.compute(name, values, node, torch.int64)

    h_end, w_end = op("minimum", i64(h0 + kh), i64(height + ph)), op("minimum", i64(w0 + kw), i64(width + pw))
    h_lo, w_lo = op("maximum", i64(h0), i64(0)), op("maximum", i64(w0), i64(0))
    h_hi, w_hi = op("minimum", h_end, i64(height)), op("minimum", w_end, i64(width))
    empty = b.compute("logical_or", (b.compute("le", (h_hi, h_lo), node, torch.bool),
                                     b.compute("le", (w_hi, w_lo), node, torch.bool)), node, torch.bool)
    if (override := _divisor_override(node)) is not None:
        return b.constant(override, torch.int64), empty
    if _count_include_pad(node):
        return op("mul", op("sub", h_end, i64(h0)), op("sub", w_end, i64(w0))), empty
    return op("mul", op("sub", h_hi, h_lo), op("sub", w_hi, w_lo)), empty


def _windows_over(b: Any, node: torch.fx.Node, grad: torch.fx.Node):
    """Per output window that may hold the current input element, in the order eager adds
    their gradients (row-major over the outputs): its coordinates in the gradient, the
    lanes where it exists and covers the element (None: all), and its start (h0, w0)."""
    (kh, kw), (sh, sw), (ph, pw), _ = _params(node)
    coords = b.element_coords(sizes_of(node))
    lead, (h, w) = coords[:-2], coords[-2:]
    out_h, out_w = sizes_of(grad)[-2:]
    fake = grad.meta["val"]
    covers = node.target is aten.avg_pool2d_backward.default  # max: the stored index says it

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

    rows_per, cols_per = _windows_per_element(node)
    windows = []
    for oh, h_ok in along(h, kh, sh, ph, out_h, rows_per):
        for ow, w_ok in along(w, kw, sw, pw, out_w, cols_per):
            mask = None
            for condition in h_ok + w_ok:
                mask = condition if mask is None else b.compute("logical_and", (mask, condition), node, torch.bool)
            windows.append((lead + (oh, ow), mask, (oh * sh - ph, ow * sw - pw)))
    return windows, (h, w)


def _add_where(b: Any, node: torch.fx.Node, total: int, grad: int, mask: int | None) -> int:
    added = b.compute("add", (total, grad), node, torch.float32)
    return added if mask is None else b.compute("where", (mask, added, total), node, torch.float32)


def _max_pool_backward(b: Any, node: torch.fx.Node, grad: torch.fx.Node, x: torch.fx.Node, *args: Any) -> int:
    indices = args[5]
    windows, (h, w) = _windows_over(b, node, grad)
    own = b.index_value(h * sizes_of(x)[-1] + w)
    total = b.constant(0.0, torch.float32)
    for coords, mask, _ in windows:
        match = b.compute("eq", (b.gather(indices, coords, mask), own), node, torch.bool)
        if mask is not None:  # a masked load reads 0, the index of the plane's first element
            match = b.compute("logical_and", (mask, match), node, torch.bool)  # (and a gradient of 0)
        total = _add_where(b, node, total, b.gather(grad, coords, mask), match)
    return b.cast(total, _out_cdt(node), node)


def _avg_pool_backward(b: Any, node: torch.fx.Node, grad: torch.fx.Node, x: torch.fx.Node, *args: Any) -> int:
    windows, _ = _windows_over(b, node, grad)
    height, width = sizes_of(x)[-2:]
    total = b.constant(0.0, torch.float32)
    for coords, mask, (h0, w0) in windows:
        divisor, _ = _divisor(b, node, h0, w0, height, width)  # not empty: it covers the element
        share = b.compute("truediv", (b.gather(grad, coords, mask), b.cast(divisor, torch.float32, node)), node,
                          torch.float32)
        total = _add_where(b, node, total, share, mask)
    return b.cast(total, _out_cdt(node), node)


LOWERINGS.register(aten.max_pool2d_with_indices.default, checker=_check, gathers=(0,), coordinates=True)(_max_pool)
LOWERINGS.register(aten.avg_pool2d.default, checker=_check, gathers=(0,), coordinates=True)(_avg_pool)
LOWERINGS.register(aten.max_pool2d_with_indices_backward.default, checker=_check, gathers=(0, 7), unread=(1,),
                   coordinates=True)(_max_pool_backward)
LOWERINGS.register(aten.avg_pool2d_backward.default, checker=_check, gathers=(0,), unread=(1,),
                   coordinates=True)(_avg_pool_backward)
