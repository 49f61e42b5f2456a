"""Reduction lowerings: sum, mean, prod, amax/amin, max/min with indices, argmax/argmin,
var/std/var_mean, any/all; and the scans cumsum/cumprod, which walk a row as a reduction
does but give a result per element. Each is a checker plus a rule, and a `reduces` function
naming the dims of its input it reduces (fusion builds the kernel's space from it).

Numerics follow torch: fp16/bf16 accumulate in fp32 and round once on store; integer and
bool sums and products accumulate in int64; max/min propagate NaN and arg* return the
first index of the extreme value (NaN counting as the max and the min); variance is two
passes (mean, then the sum of squared deviations, both corrected by the deviations' sum:
_variance) divided by max(n - correction, 0), so
n <= correction gives inf or NaN as in eager. Empty rows give the identity (sum 0, prod 1,
any False, all True, mean and var NaN); max/min/arg* of an empty row raise, as in eager,
from the wrapper. A 0-dim input has one element and nothing to reduce: those ops are
pointwise there (the value in the result's dtype, index 0), computed inline with their
0-dim neighbours; var/std of one element stay eager. Softmax, log_softmax, layer_norm, group_norm, logsumexp and the losses
reach these rules through the decomposition policy.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from . import ir
from .operands import _arg
from .pointwise import FLOATS, READABLE, WRAPPING, _tensor_rejection
from .registry import LOWERINGS

aten = torch.ops.aten

# reductions that have no identity: an empty row is an error in eager
NEEDS_ELEMENTS = ("max", "min", "argmax", "argmin")


# -- which dims ---------------------------------------------------------------------
def _dims_arg(node: torch.fx.Node) -> Any:
    if node.target in (aten.sum.default, aten.mean.default, aten.prod.default, aten.max.default,
                       aten.min.default, aten.any.default, aten.all.default):
        return None
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")


def _zero_dim(node: torch.fx.Node) -> bool:
    """A 0-dim input: one element, nothing to reduce (the rules compute it pointwise)."""
    return node.args[0].meta["val"].dim() == 0


def reduced_dims(node: torch.fx.Node) -> tuple[int, ...] | None:
    """The dims of the input the node reduces; None for a 0-dim input (pointwise)."""
    rank = node.args[0].meta["val"].dim()
    if rank == 0:
        return None
    dims = _dims_arg(node)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return tuple(sorted({d % rank for d in dims}))


# -- checker ------------------------------------------------------------------------
DtypeRule = tuple[Callable[[torch.dtype, torch.dtype, torch.dtype], bool], str]  # (input, dtype arg, result) -> ok; its text

# reductions: the dtype argument changes nothing, or a float input is read as the float result
WIDENS_A_FLOAT: DtypeRule = (lambda x, dtype, result: dtype == result and x in FLOATS + (dtype,),
                             "it changes nothing or widens a float")
# scans: eager converts the input to the dtype first, which the kernel skips: only where exact
CONVERTS_EXACTLY: DtypeRule = (
    lambda x, dtype, result: dtype == result and (x == dtype or (dtype is torch.int64 and not x.is_floating_point)
                                                  or (dtype is torch.float32 and x in (torch.float16, torch.bfloat16))),
    "the input converts to it exactly (integers and bools to int64, float16/bfloat16 to float32)")


def _checker(inputs: tuple[torch.dtype, ...], kwargs: tuple[str, ...] = (),
             dtype_rule: DtypeRule = WIDENS_A_FLOAT, zero_dim: bool = True,
             ) -> Callable[[torch.fx.Node], str | None]:
    """A tensor input in `inputs` (of rank >= 1 unless `zero_dim`), every result a supported
    dtype, nothing statically empty, keyword arguments only those named (and dtype only where
    `dtype_rule` says). Returns why not, or None."""

    def check(node: torch.fx.Node) -> str | None:
        x = node.args[0]
        if not isinstance(x, torch.fx.Node):
            return "its input is not a graph node"
        if (why := _tensor_rejection(x.meta.get("val"), inputs, "input")) is not None:
            return why
        if x.meta["val"].dim() == 0 and not zero_dim:
            return "a 0-dim input: the statistic of one element (eager's rules for it)"
        results = node.meta.get("val")
        results = results if isinstance(results, (tuple, list)) else (results,)
        for r in results:
            if (why := _tensor_rejection(r, READABLE, "result")) is not None:
                return why
        if any(isinstance(s, int) and s == 0 for s in x.meta["val"].shape):
            return "a statically empty input: eager knows the identity or the error"
        for key, value in node.kwargs.items():
            if key == "dtype":
                if value is not None and not dtype_rule[0](x.meta["val"].dtype, value, results[0].dtype):
                    return f"dtype={value}: this lowering takes a dtype only where {dtype_rule[1]}"
            elif key not in kwargs + ("dim", "keepdim"):
                return f"{key}={value!r}: this lowering takes no {key}"
        return None

    return check


# -- rules --------------------------------------------------------------------------
def _accumulate(op: str) -> Callable[..., int]:
    """sum / prod: in the result's compute dtype (int64 for integer and bool inputs)."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
        cdt = ir.compute_dtype(node.meta["val"].dtype)
        value = _arg(b, x, cdt, node)
        return value if _zero_dim(node) else b.reduce(op, value, node, cdt)

    return rule


def _first_index(b: Any, node: torch.fx.Node) -> int:
    """Index 0 (of a 0-dim input's one element), as a block of lanes."""
    return b.compute("broadcast", (b.constant(0, torch.int64),), node, torch.int64)


def _mean(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
    if _zero_dim(node):
        return _arg(b, x, torch.float32, node)  # x / 1
    total = b.reduce("sum", _arg(b, x, torch.float32, node), node, torch.float32)
    return b.compute("truediv", (total, b.cast(b.rnumel(), torch.float32, node)), node, torch.float32)


def _extreme(op: str) -> Callable[..., int]:
    """amax / amin / max / min without indices."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
        return int(x) if _zero_dim(node) else b.reduce(op, int(x), node, b.dtype(int(x)))

    return rule


def _with_index(op: str) -> Callable[..., tuple[int, int]]:
    """max.dim / min.dim: (values, indices)."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> tuple[int, int]:
        if _zero_dim(node):
            return int(x), _first_index(b, node)
        return b.reduce(op, int(x), node, b.dtype(int(x))), b.reduce(f"arg{op}", int(x), node, torch.int64)

    return rule


def _arg_extreme(op: str) -> Callable[..., int]:
    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
        return _first_index(b, node) if _zero_dim(node) else b.reduce(op, int(x), node, torch.int64)

    return rule


def _boolean(op: str) -> Callable[..., int]:
    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
        truth = _arg(b, x, torch.bool, node)
        result = truth if _zero_dim(node) else b.reduce(op, truth, node, torch.bool)
        return b.cast(result, ir.compute_dtype(node.meta["val"].dtype), node)

    return rule


def _variance(b: Any, node: torch.fx.Node, x: Any) -> tuple[int, int]:
    """(var, mean) in two passes, corrected (Chan, Golub and LeVeque's corrected two-pass
    algorithm): the mean m of the first pass, then the deviations d = x - m, whose sum (the
    rounding m missed) corrects both, mean = m + sum(d) / n and var = (sum(d * d) -
    sum(d)**2 / n) / divisor, clamped at 0. A row of one repeated value then has exactly
    that mean and variance 0, as eager's: `sum(x) / n` alone misses the value by an ulp,
    which a layer_norm of the row (exactly 0 in eager) multiplies by 1 / sqrt(eps)."""
    f32 = torch.float32
    value = _arg(b, x, f32, node)
    n = b.cast(b.rnumel(), f32, node)
    first = b.compute("truediv", (b.reduce("sum", value, node, f32), n), node, f32)
    deviation = b.compute("sub", (value, first), node, f32)
    drift = b.reduce("sum", deviation, node, f32)
    squares = b.reduce("sum", b.compute("square", (deviation,), node, f32), node, f32)
    mean = b.compute("add", (first, b.compute("truediv", (drift, n), node, f32)), node, f32)
    spread = b.compute("sub", (squares, b.compute("truediv", (b.compute("square", (drift,), node, f32), n), node, f32)), node, f32)
    zero = b.constant(0.0, f32)
    spread = b.compute("clamp_min", (spread, zero), node, f32)
    correction = node.kwargs.get("correction")  # a literal, or a symbol (an int under dynamic=True)
    correction_value = _arg(b, 1.0 if correction is None else correction, f32, node)
    divisor = b.compute("clamp_min", (b.compute("sub", (n, correction_value), node, f32), zero), node, f32)
    return b.compute("truediv", (spread, divisor), node, f32), mean


def _var(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
    return _variance(b, node, x)[0]


def _std(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
    return b.compute("sqrt", (_variance(b, node, x)[0],), node, torch.float32)


def _var_mean(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> tuple[int, int]:
    return _variance(b, node, x)


def _scan(op: str) -> Callable[..., int]:
    """cumsum / cumprod: in the result's compute dtype (int64 for integer and bool inputs;
    float32 for floats, as eager on GPU). Floats under the interpreter: eager's cpu loop,
    in order, carried in its acc_type (a double for float32, a float for float16/bfloat16)."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
        dtype = node.meta["val"].dtype
        cdt = ir.compute_dtype(dtype)
        value = _arg(b, x, cdt, node)
        carry = None if not dtype.is_floating_point else torch.float32 if dtype in ir.ROUNDINGS else torch.float64
        return value if _zero_dim(node) else b.scan(op, value, node, cdt, carry)

    return rule


def _running_extreme(op: str) -> Callable[..., tuple[int, int]]:
    """cummax / cummin: (values, indices), folded one element at a time in order (eager's
    loop: ties take the later index, a NaN stays until the next NaN)."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> tuple[int, int]:
        if _zero_dim(node):
            return int(x), _first_index(b, node)
        b.in_order()
        return b.scan(op, int(x), node, b.dtype(int(x))), b.scan(f"arg{op}", int(x), node, torch.int64)

    return rule


def _logcumsumexp(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
    """logcumsumexp: eager's cpu loop, one element at a time in order (codegen/reduction.py
    folds it), carried under the interpreter in eager's cpu acc_type, a double for float32
    and a float for float16/bfloat16 (a double carry there missed eager's result by an ulp
    on about one random row in seven); on a gpu in a double."""
    dtype = node.meta["val"].dtype
    cdt = ir.compute_dtype(dtype)
    value = _arg(b, x, cdt, node)
    if _zero_dim(node):
        return value  # log(exp(-inf) + exp(x)), eager's helper: x itself
    b.in_order()
    return b.scan("logaddexp", value, node, cdt, torch.float32 if dtype in ir.ROUNDINGS else torch.float64)


def scanned_dim(node: torch.fx.Node) -> tuple[int, ...] | None:
    """A scan's one dim, as the reductions' dims (fusion builds the kernel's space from it);
    None for a 0-dim input (pointwise)."""
    rank = node.args[0].meta["val"].dim()
    if rank == 0:
        return None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs["dim"]
    return (dim % rank,)


# -- the table ----------------------------------------------------------------------
def _reg(targets: tuple[Any, ...], check: Callable[[torch.fx.Node], bool], rule: Callable[..., Any]) -> None:
    LOWERINGS.register(*targets, checker=check, reduces=reduced_dims)(rule)


_reg((aten.sum.dim_IntList, aten.sum.default), _checker(READABLE, ("dtype",)), _accumulate("sum"))
_reg((aten.prod.dim_int, aten.prod.default), _checker(READABLE, ("dtype",)), _accumulate("prod"))
_reg((aten.mean.dim, aten.mean.default), _checker(FLOATS, ("dtype",)), _mean)
_reg((aten.amax.default, aten.max.default), _checker(WRAPPING), _extreme("max"))
_reg((aten.amin.default, aten.min.default), _checker(WRAPPING), _extreme("min"))
_reg((aten.max.dim,), _checker(WRAPPING), _with_index("max"))
_reg((aten.min.dim,), _checker(WRAPPING), _with_index("min"))
_reg((aten.argmax.default,), _checker(WRAPPING), _arg_extreme("argmax"))
_reg((aten.argmin.default,), _checker(WRAPPING), _arg_extreme("argmin"))
_reg((aten.any.default, aten.any.dim, aten.any.dims), _checker(READABLE), _boolean("any"))
_reg((aten.all.default, aten.all.dim, aten.all.dims), _checker(READABLE), _boolean("all"))
_reg((aten.var.correction,), _checker(FLOATS, ("correction",), zero_dim=False), _var)
_reg((aten.std.correction,), _checker(FLOATS, ("correction",), zero_dim=False), _std)
_reg((aten.var_mean.correction,), _checker(FLOATS, ("correction",), zero_dim=False), _var_mean)
# scans: a result per element, computed along the scanned dim as a reduction walks its row
LOWERINGS.register(aten.cumsum.default, checker=_checker(READABLE, ("dtype",), CONVERTS_EXACTLY), reduces=scanned_dim)(_scan("sum"))
LOWERINGS.register(aten.cumprod.default, checker=_checker(READABLE, ("dtype",), CONVERTS_EXACTLY), reduces=scanned_dim)(_scan("prod"))
LOWERINGS.register(aten.cummax.default, checker=_checker(WRAPPING), reduces=scanned_dim)(_running_extreme("max"))
LOWERINGS.register(aten.cummin.default, checker=_checker(WRAPPING), reduces=scanned_dim)(_running_extreme("min"))
LOWERINGS.register(aten.logcumsumexp.default, checker=_checker(FLOATS), reduces=scanned_dim)(_logcumsumexp)
