"""Lowerings of 2-D pooling windows, forward: max_pool2d_with_indices (values and the
indices its backward reads) and avg_pool2d.

Each output element walks its kH x kW window, unrolled (kernel size, stride, padding and
dilation are ints in the graph; sizes stay symbolic), loading the taps that lie inside the
input under a mask, in the row-major order eager's CPU and CUDA kernels walk them:
- max: a tap is taken where it is the window's first valid one, greater than the max so
  far, or NaN (eager's `val > maxval || isnan(val)`), so values and indices are eager's,
  NaN and ties included (the first max; after a NaN, the last NaN);
- avg: the taps' float32 sum from 0, divided by eager's divisor (the window clipped to
  input plus padding, to the input alone without count_include_pad, or the override),
  so the result is bitwise eager's too. A window wholly in the padding gives 0, as in eager.
The rules load the input themselves (registered `gathers`): it is read from memory.
"""
from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.fx

from .. import _torch_compat as compat
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


def _params(node: torch.fx.Node) -> tuple[tuple[int, int], ...]:
    """(kernel, stride, padding, dilation), each (along H, along W)."""
    args = list(node.args) + [None] * 6
    kernel = _pair(args[1], None)
    stride = _pair(args[2], kernel)
    padding = _pair(args[3], 0)
    dilation = _pair(args[4], 1) if node.target is aten.max_pool2d_with_indices.default else (1, 1)
    return kernel, stride, padding, dilation


def _check(node: torch.fx.Node) -> str | None:
    x = node.args[0]
    val = node.meta.get("val")
    out = val[0] if isinstance(val, (tuple, list)) else val
    if (why := _tensor_rejection(out, FLOATS, "result")) is not None:
        return why
    if not isinstance(x, torch.fx.Node) or (why := _tensor_rejection(x.meta.get("val"), FLOATS, "input")) is not None:
        return why or "an input that is not a graph node"
    if x.meta["val"].dim() not in (3, 4):
        return f"a {x.meta['val'].dim()}-D input: this lowering pools (C, H, W) or (N, C, H, W)"
    if any(isinstance(s, int) and s == 0 for s in out.shape):
        return "a statically empty result: nothing to compute, eager makes it"
    if node.kwargs:
        return f"keyword arguments {sorted(node.kwargs)}: this lowering takes positional ones"
    params = _params(node)
    if not all(type(v) is int for pair in params for v in pair):
        return "a symbolic kernel size, stride, padding or dilation: the window is unrolled"
    if node.target is aten.avg_pool2d.default and len(node.args) > 6 and node.args[6] is not None \
            and type(node.args[6]) is not int:
        return "a divisor_override that is not an int"
    if params[0][0] * params[0][1] > MAX_TAPS:
        return f"a {params[0][0]}x{params[0][1]} window: more than {MAX_TAPS} taps to unroll"
    return None


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


def _inside(b: Any, node: torch.fx.Node, expr: sympy.Expr, size: sympy.Expr, fake: Any) -> int | bool | None:
    """0 <= expr < size: None where the ShapeEnv proves it for every element, False where
    it never holds, else a bool value (a block of lanes, also where it is the same for all)."""
    conditions = []
    for low, high, op in ((sympy.Integer(0), expr, "ge"), (expr, size, "lt")):
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
    args = list(node.args) + [None] * 7
    count_include_pad = True if args[5] is None else bool(args[5])
    (kh, kw), _, (ph, pw), _ = _params(node)
    taps, (h0, w0), (height, width) = _window(b, node, x)
    total = b.constant(0.0, torch.float32)
    for coords, mask, _, _ in taps:  # a masked tap loads 0: the sum is eager's sum of the valid taps
        total = b.compute("add", (total, b.gather(x, coords, mask)), node, torch.float32)

    def i64(expr: sympy.Expr) -> int:
        return b.index_value(sympy.sympify(expr))

    def op(name: str, *values: int) -> int:
        return b.compute(name, values, node, torch.int64)

    h_end, w_end = op("minimum", i64(h0 + kh), i64(height + ph)), op("minimum", i64(w0 + kw), i64(width + pw))
    pool = op("mul", op("sub", h_end, i64(h0)), op("sub", w_end, i64(w0)))
    h_lo, w_lo = op("maximum", i64(h0), i64(0)), op("maximum", i64(w0), i64(0))
    h_hi, w_hi = op("minimum", h_end, i64(height)), op("minimum", w_end, i64(width))
    valid = op("mul", op("sub", h_hi, h_lo), op("sub", w_hi, w_lo))
    if args[6] is not None:
        divisor = b.constant(args[6], torch.int64)
    else:
        divisor = pool if count_include_pad else valid
    mean = b.compute("truediv", (total, b.cast(divisor, torch.float32, node)), node, torch.float32)
    empty = b.compute("logical_or", (b.compute("le", (h_hi, h_lo), node, torch.bool),
                                     b.compute("le", (w_hi, w_lo), node, torch.bool)), node, torch.bool)
    mean = b.compute("where", (empty, b.constant(0.0, torch.float32), mean), node, torch.float32)
    return b.cast(mean, _out_cdt(node), node)


LOWERINGS.register(aten.max_pool2d_with_indices.default, checker=_check, gathers=(0,), coordinates=True)(_max_pool)
LOWERINGS.register(aten.avg_pool2d.default, checker=_check, gathers=(0,), coordinates=True)(_avg_pool)
