"""Lowerings of ops whose result reads its inputs at positions of its own: cat,
constant_pad_nd, slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter (a
view covering all of its input), flip and repeat; and arange, the coordinate itself.

Each element loads from the input that holds it, under a mask (a bool value of the
element's coordinates, so no lane reads outside a tensor), and `where` picks it: values
move exactly as eager moves them. The rules load those inputs themselves (the registry's
`gathers`), so fusion reads them from memory, not from values computed in the same
kernel, and keeps these ops in untiled pointwise kernels. Positions are sympy
expressions of the size symbols: one kernel serves every size.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import FloorDiv, ModularIndexing, provably_equal, sym_expr
from .operands import _arg
from .pointwise import FLOATS, INTS, READABLE, SMALL, _out_cdt, _scalar_ok, _tensor_rejection, scalar_rejection
from .registry import LOWERINGS
from .views import graph_input_under, is_size

aten = torch.ops.aten


# -- checkers ------------------------------------------------------------------------
def _sizes(value: Any) -> tuple[sympy.Expr, ...]:
    return tuple(sym_expr(s) for s in value.meta["val"].shape)


def _int_expr(value: Any) -> sympy.Expr:
    """A Python int (or whole float) argument, or a SymInt node's expression."""
    return sympy.Integer(int(value)) if isinstance(value, (int, float)) else sym_expr(value.meta["val"])


def _rejection(node: torch.fx.Node, tensors: list[Any], ints: dict[str, Any]) -> str | None:
    """Shared by the checkers: a non-empty strided result and inputs of the kernel dtypes,
    no keyword arguments, and each of `ints` (name -> argument) a Python int or None."""
    val = node.meta.get("val")
    if (why := _tensor_rejection(val, READABLE, "result")) is not None:
        return why
    if val.dim() == 0 or any(isinstance(s, int) and s == 0 for s in val.shape):
        return "a statically empty or 0-dim result: nothing to place"
    if node.kwargs:
        return f"keyword arguments {sorted(node.kwargs)}: this lowering takes positional ones"
    for tensor in tensors:
        if not isinstance(tensor, torch.fx.Node):
            return "an input that is not a graph node"
        if (why := _tensor_rejection(tensor.meta.get("val"), READABLE, "input")) is not None:
            return why
    for name, value in ints.items():
        if not (value is None or type(value) is int):
            return f"a symbolic {name} ({value}): the lowering places elements at literal positions"
    return None


def _arg_at(node: torch.fx.Node, i: int, default: Any) -> Any:
    return node.args[i] if len(node.args) > i else default


def _check_cat(node: torch.fx.Node) -> str | None:
    tensors = node.args[0]
    if (why := _rejection(node, list(tensors), {"dim": _arg_at(node, 1, 0)})) is not None:
        return why
    if any(t.meta["val"].dim() != node.meta["val"].dim() and not _skipped(t) for t in tensors):
        return "an input of another rank that is not a 1-D empty tensor (which cat skips)"
    return None


def _skipped(tensor: torch.fx.Node) -> bool:
    """cat skips 1-D empty tensors whatever the other inputs' rank (an empty KV cache)."""
    shape = tensor.meta["val"].shape
    return len(shape) == 1 and isinstance(shape[0], int) and shape[0] == 0


def _check_pad(node: torch.fx.Node) -> str | None:
    value = _arg_at(node, 2, 0)
    if (why := _rejection(node, [node.args[0]], {})) is not None:  # pad widths may be SymInts
        return why
    if not _scalar_ok(value):
        return f"the fill value {value!r} is not a kernel literal (bool, float, int64 int)"
    dtype = node.meta["val"].dtype
    return scalar_rejection(value, dtype)


def _check_slice_scatter(node: torch.fx.Node) -> str | None:
    step = _arg_at(node, 5, 1)
    why = _rejection(node, [node.args[0], node.args[1]], {"dim": _arg_at(node, 2, 0)})  # start, step may be SymInts
    if why is None and isinstance(step, int) and step < 1:
        return f"step {step}: slices step forward"
    return why


def _check_select_scatter(node: torch.fx.Node) -> str | None:
    return _rejection(node, [node.args[0], node.args[1]], {"dim": node.args[2]})  # index may be a SymInt


def _check_diagonal_scatter(node: torch.fx.Node) -> str | None:
    dims = (_arg_at(node, 3, 0), _arg_at(node, 4, 1))
    why = _rejection(node, [node.args[0], node.args[1]], {"offset": _arg_at(node, 2, 0), "dim1": dims[0], "dim2": dims[1]})
    if why is None and node.meta["val"].dim() < 2:
        return "a result of fewer than 2 dims has no diagonal"
    return why


def _dense(sizes: list[sympy.Expr], strides: list[sympy.Expr], equal: Callable[[Any, Any], bool]) -> bool:
    """Whether the strides provably address each of the prod(sizes) positions from 0 once,
    for every size: a permutation of the dims, contiguous (a dim of size 1 may have any
    stride)."""
    left = [d for d in range(len(sizes)) if not equal(sizes[d], 1)]
    extent: sympy.Expr = sympy.Integer(1)
    while left:  # innermost first: the dim whose stride is the extent so far
        d = next((d for d in left if equal(strides[d], extent)), None)
        if d is None:
            return False
        left.remove(d)
        extent = extent * sizes[d]
    return True


def _check_as_strided_scatter(node: torch.fx.Node) -> str | None:
    """A view that covers every element of a dense input once (AOTAutograd's gradient of a
    view of a channels-last tensor: the gradient scattered into zeros): the result is the
    source read at each element's storage position. Eager's result is a clone of the
    input's whole storage, which the view's offset and strides address: the input must sit
    at its storage's start, which a graph input's unguarded offset does not promise."""
    x, src, size, stride = node.args[:4]
    if (why := _rejection(node, [x, src], {})) is not None:
        return why
    if not isinstance(size, (list, tuple)) or not all(is_size(a) for a in (*size, *stride, _arg_at(node, 4, 0) or 0)):
        return "sizes, strides or offset that are not ints or SymInts"
    val = node.meta["val"]
    equal = lambda a, b: provably_equal(sympy.sympify(a), sympy.sympify(b), val)  # noqa: E731
    offsets = (sym_expr(x.meta["val"].storage_offset()), _int_expr(_arg_at(node, 4, 0) or 0))
    if graph_input_under(x) is not None or not all(equal(offset, 0) for offset in offsets):
        return "an input or a view not at its storage's start (a graph input's offset is not guarded): eager addresses the storage"
    if not _dense(list(_sizes(node)), [sym_expr(s) for s in val.stride()], equal):
        return "an input that is not dense: eager's clone keeps its storage's other elements"
    view_sizes = [_int_expr(a) for a in size]
    covers = equal(sympy.Mul(*view_sizes), sympy.Mul(*_sizes(node)))
    if not _dense(view_sizes, [_int_expr(a) for a in stride], equal) or not covers:
        return "a view that does not cover every element of the input once: elements of the input would remain"
    return None


def _check_flip(node: torch.fx.Node) -> str | None:
    return _rejection(node, [node.args[0]], {})


def _check_repeat(node: torch.fx.Node) -> str | None:
    if any(isinstance(s, int) and s == 0 for s in node.args[0].meta["val"].shape):
        return "an empty input: nothing to repeat"
    return _rejection(node, [node.args[0]], {})


def _same_device(given: Any, made: torch.device) -> bool:
    """`device=` names the device the result is made on: None, or `cuda` for a result on
    cuda:0 (an index-less name is the current device, which made it)."""
    if given is None:
        return True
    given = torch.device(given)
    return given.type == made.type and given.index in (None, made.index)


def _check_arange(node: torch.fx.Node) -> str | None:
    """Integer start, end and step (ints or SymInts), any result dtype but bool: the
    values are exact integers, rounded once to a float result, wrapped to a uint8/int8/int16
    one (see _arange)."""
    val = node.meta.get("val")
    if (why := _tensor_rejection(val, INTS + FLOATS + SMALL, "result")) is not None:
        return why
    if isinstance(val.shape[0], int) and val.shape[0] == 0:
        return "a statically empty result: nothing to place"
    if not _same_device(node.kwargs.get("device"), val.device) or node.kwargs.get("layout") not in (None, torch.strided):
        return "an arange on another device or layout"
    if set(node.kwargs) - {"dtype", "device", "layout", "pin_memory"} or node.kwargs.get("pin_memory"):
        return f"keyword arguments {sorted(node.kwargs)}: this lowering takes dtype, device, layout"
    start, end, step = (*node.args, 1)[:3]
    if not all(type(a) is int or type(a) is float and a.is_integer() and abs(a) < 2**53
               or isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.SymInt) for a in (start, step)):
        return "a start or step that is not an integer (an int, a SymInt or a whole float)"
    if not (type(end) in (int, float) or isinstance(end, torch.fx.Node) and isinstance(end.meta.get("val"), torch.SymInt)):
        return "an end that is not an int, a float or a SymInt"
    return None


# -- rules -----------------------------------------------------------------------------
def _compare(b: Any, node: torch.fx.Node, op: str, expr: sympy.Expr, bound: sympy.Expr) -> int:
    return b.compute(op, (b.index_value(expr), b.index_value(sympy.sympify(bound))), node, torch.bool)


def _in_range(b: Any, node: torch.fx.Node, expr: sympy.Expr, lo: Any = None, hi: Any = None) -> int | None:
    """lo <= expr < hi (a bound of None is not checked), or None when neither is."""
    conditions = [] if lo is None else [_compare(b, node, "ge", expr, lo)]
    conditions += [] if hi is None else [_compare(b, node, "lt", expr, hi)]
    return b.all_of(conditions, node)


def _pick(b: Any, node: torch.fx.Node, inside: int | None, value: int, otherwise: int) -> int:
    return value if inside is None else b.compute("where", (inside, value, otherwise), node, _out_cdt(node))


def _cat(b: Any, node: torch.fx.Node, tensors: list[torch.fx.Node], dim: int = 0) -> int:
    """Input k holds positions [offset_k, offset_k + size_k) along dim: a chain of wheres,
    the last input's load first."""
    tensors = [t for t in tensors if not _skipped(t)]
    sizes = _sizes(node)
    d = dim % len(sizes)
    coords = b.element_coords(sizes)
    offsets = [sympy.Integer(0)]
    for tensor in tensors:
        offsets.append(offsets[-1] + _sizes(tensor)[d])
    value = None
    for k in reversed(range(len(tensors))):
        inside = _in_range(b, node, coords[d], offsets[k] if k else None, offsets[k + 1] if k < len(tensors) - 1 else None)
        at = coords[:d] + (coords[d] - offsets[k],) + coords[d + 1:]
        loaded = b.cast(b.gather(tensors[k], at, inside), _out_cdt(node), node)
        value = loaded if value is None else _pick(b, node, inside, loaded, value)
    return value


def _pad(b: Any, node: torch.fx.Node, x: torch.fx.Node, pad: list[Any], value: Any = 0) -> int:
    """pad[2k], pad[2k + 1]: elements before and after dim -1-k (negative: cropped; a
    symbolic width may be either)."""
    sizes, in_sizes = _sizes(node), _sizes(x)
    coords = list(b.element_coords(sizes))
    conditions = []
    for k in range(len(pad) // 2):
        d = len(sizes) - 1 - k
        before, after = _int_expr(pad[2 * k]), _int_expr(pad[2 * k + 1])
        coords[d] = coords[d] - before
        # a side that only crops cannot reach outside the input
        inside = _in_range(b, node, coords[d], None if before.is_number and before <= 0 else 0,
                           None if after.is_number and after <= 0 else in_sizes[d])
        conditions += [] if inside is None else [inside]
    inside = b.all_of(conditions, node)
    loaded = b.cast(b.gather(x, tuple(coords), inside), _out_cdt(node), node)
    return _pick(b, node, inside, loaded, _arg(b, value, _out_cdt(node), node))


def _position(index: Any, size: sympy.Expr, clamp: bool) -> sympy.Expr:
    """A position along a dim of `size` as torch reads it: negative counts from the end, a
    slice's start is clamped to [0, size]. A SymInt's sign is not known when compiling: a
    Piecewise, which the wrapper computes (KernelBuilder.wrapper_size)."""
    index = _int_expr(index)
    if not clamp:
        return sympy.Piecewise((index + size, index < 0), (index, True))
    return sympy.Piecewise((sympy.Max(index + size, 0), index < 0), (sympy.Min(index, size), True))


def _slice_scatter(b: Any, node: torch.fx.Node, x: Any, src: torch.fx.Node, dim: int = 0, *rest: Any) -> int:
    """src's element k along dim lands at start + k * step (src's size says how many)."""
    start, step = _arg_at(node, 3, None), _int_expr(_arg_at(node, 5, 1))
    sizes = _sizes(node)
    d = dim % len(sizes)
    coords = b.element_coords(sizes)
    first = b.wrapper_size(_position(0 if start is None else start, sizes[d], clamp=True))
    offset = coords[d] - first
    conditions = [_in_range(b, node, coords[d], first, first + _sizes(src)[d] * step)]
    if step != 1:
        conditions.append(_compare(b, node, "eq", ModularIndexing(offset, 1, step), 0))
    inside = b.all_of(conditions, node)
    at = coords[:d] + (FloorDiv(offset, step) if step != 1 else offset,) + coords[d + 1:]
    cdt = _out_cdt(node)
    return _pick(b, node, inside, b.cast(b.gather(src, at, inside), cdt, node), _arg(b, x, cdt, node))


def _select_scatter(b: Any, node: torch.fx.Node, x: Any, src: torch.fx.Node, dim: int, index: Any) -> int:
    sizes = _sizes(node)
    d = dim % len(sizes)
    coords = b.element_coords(sizes)
    inside = _compare(b, node, "eq", coords[d], b.wrapper_size(_position(node.args[3], sizes[d], clamp=False)))
    cdt = _out_cdt(node)
    return _pick(b, node, inside, b.cast(b.gather(src, coords[:d] + coords[d + 1:], inside), cdt, node), _arg(b, x, cdt, node))


def _diagonal_scatter(b: Any, node: torch.fx.Node, x: Any, src: torch.fx.Node, offset: int = 0, dim1: int = 0,
                      dim2: int = 1) -> int:
    """An element is on the diagonal where its coordinate along dim2 less the one along dim1
    is the offset; src holds the other dims in order, then the position along the diagonal."""
    sizes = _sizes(node)
    d1, d2 = dim1 % len(sizes), dim2 % len(sizes)
    coords = b.element_coords(sizes)
    inside = _compare(b, node, "eq", coords[d2] - coords[d1], offset)
    at = tuple(c for d, c in enumerate(coords) if d not in (d1, d2)) + (coords[d1] if offset >= 0 else coords[d2],)
    cdt = _out_cdt(node)
    return _pick(b, node, inside, b.cast(b.gather(src, at, inside), cdt, node), _arg(b, x, cdt, node))


def _as_strided_scatter(b: Any, node: torch.fx.Node, x: Any, src: torch.fx.Node, size: list[Any], stride: list[Any],
                        *rest: Any) -> int:
    """The element at storage position p (its coordinates times the result's strides) is
    src's at view coordinates (p // stride_j) mod size_j."""
    sizes = _sizes(node)
    position = sum((c * sym_expr(s) for c, s in zip(b.element_coords(sizes), node.meta["val"].stride())), sympy.Integer(0))
    at = tuple(ModularIndexing(position, _int_expr(st), _int_expr(n)) for n, st in zip(size, stride))
    return b.cast(b.gather(src, at, None), _out_cdt(node), node)


def _flip(b: Any, node: torch.fx.Node, x: torch.fx.Node, dims: list[int]) -> int:
    """Element k along each flipped dim of size n is the input's n - 1 - k."""
    sizes = _sizes(node)
    coords = list(b.element_coords(sizes))
    for d in {d % len(sizes) for d in dims}:
        coords[d] = sizes[d] - 1 - coords[d]
    return b.cast(b.gather(x, tuple(coords), None), _out_cdt(node), node)


def _repeat(b: Any, node: torch.fx.Node, x: torch.fx.Node, repeats: list[Any]) -> int:
    """Element k along a dim the input has n of is the input's k mod n (the input's dims
    are the result's last ones)."""
    sizes, in_sizes = _sizes(node), _sizes(x)
    coords = b.element_coords(sizes)[len(sizes) - len(in_sizes):]
    at = tuple(sympy.Integer(0) if n == 1 else ModularIndexing(c, 1, n) for c, n in zip(coords, in_sizes))
    return b.cast(b.gather(x, at, None), _out_cdt(node), node)


def _arange(b: Any, node: torch.fx.Node, *args: Any) -> int:
    """start + i * step, in int64 (xindex is int32 unless the launch indexes past 2**31),
    then cast: a float result is the exact integer rounded once to nearest even. Eager
    computes start + step * i in its accumulate type (double on cpu, float on cuda) and
    rounds that: the same bits wherever the values are exact in float32 (|v| < 2**24;
    beyond it eager's vectorized cpu loop rounds each vector's first value before adding
    the step, so eager itself is not the exact integer there)."""
    (i,) = b.element_coords(_sizes(node))
    position = b.cast(b.index_value(i, torch.int32), torch.int64, node)
    start, step = (b.index_value(_int_expr(node.args[k] if len(node.args) > k else default)) for k, default in ((0, 0), (2, 1)))
    value = b.compute("add", (start, b.compute("mul", (position, step), node, torch.int64)), node, torch.int64)
    return b.cast(value, _out_cdt(node), node)


def _reg(target: Any, check: Callable[[torch.fx.Node], str | None], rule: Callable[..., int], gathers: tuple[int, ...],
         unread: tuple[int, ...] = ()) -> None:
    LOWERINGS.register(target, checker=check, gathers=gathers, coordinates=True, inlines=bool(gathers), places=bool(gathers),
                       unread=unread)(rule)


_reg(aten.cat.default, _check_cat, _cat, (0,))
_reg(aten.constant_pad_nd.default, _check_pad, _pad, (0,))
_reg(aten.slice_scatter.default, _check_slice_scatter, _slice_scatter, (1,))
_reg(aten.select_scatter.default, _check_select_scatter, _select_scatter, (1,))
_reg(aten.diagonal_scatter.default, _check_diagonal_scatter, _diagonal_scatter, (1,))
_reg(aten.as_strided_scatter.default, _check_as_strided_scatter, _as_strided_scatter, (1,), unread=(0,))
_reg(aten.flip.default, _check_flip, _flip, (0,))
_reg(aten.repeat.default, _check_repeat, _repeat, (0,))
_reg(aten.arange.start_step, _check_arange, _arange, ())
