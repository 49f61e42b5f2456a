"""Pointwise lowerings: for each aten op, a checker (pure, on fake-tensor metadata) and a
rule that adds values to the kernel being built.

Dtypes: float32, float16, bfloat16 (computed in fp32, rounded once on store), int32, int64
and bool; uint8, int8 and int16 (computed in int32, wrapped where read: ir.WRAPS) as
inputs, and as results of casts, copies, fills and the ops exact in int32 then wrapped
(add, sub, mul, neg, abs, bitwise, where, clamps, maxima). Type promotion is torch's: the
output dtype is read from the node's fake value and operands are cast to its compute dtype.
Python int/float/bool scalars become constants (Dynamo specializes Python floats, so a
literal costs no extra compile); SymInt scalars are computed in the kernel from its runtime
size arguments, SymFloat ones (1 / numel in a norm's backward) by the wrapper, passed as a
float32 argument. Anything else (float64, complex, ints beyond int64) falls back with "no
lowering". How rules read operands (a cpu scalar as each device's eager kernel reads it):
operands.py. Division with a rounding mode, fmod and remainder: division.py; add/sub, lerp,
addcmul, addcdiv and fma: fma.py.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from . import ir
from .operands import Ref, _arg, _in_dtype, operand
from .registry import LOWERINGS

aten = torch.ops.aten
prims = torch.ops.prims
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
INTS = (torch.int32, torch.int64)
NUMERIC = FLOATS + INTS
ALL = NUMERIC + (torch.bool,)
SMALL = ir.SMALL_INTS
READABLE = ALL + SMALL  # every dtype a kernel loads and stores
WRAPPING = NUMERIC + SMALL  # results of the ops that wrap uint8/int8/int16 as eager does
# ops whose uint8/int8/int16 result converts any operand (int64 to uint8 wraps, as in eager)
_CASTS = frozenset({prims.convert_element_type.default, aten._to_copy.default, aten.clone.default,
                    aten.lift_fresh_copy.default, aten.copy.default})
Rule = Callable[..., int]


# -- checkers ------------------------------------------------------------------------
def _tensor_rejection(value: Any, dtypes: tuple[torch.dtype, ...], what: str) -> str | None:
    """None for a strided tensor of one of `dtypes`, else why not (`what`: "result", "input")."""
    if not isinstance(value, torch.Tensor):
        return f"its {what} is not a tensor"
    if value.layout is not torch.strided:
        return f"a {value.layout} {what} (kernels index strided memory)"
    if value.dtype not in dtypes:
        return f"a {str(value.dtype).removeprefix('torch.')} {what}; this lowering takes {_names(dtypes)}"
    return None


def _names(dtypes: tuple[torch.dtype, ...]) -> str:
    return ", ".join(str(d).removeprefix("torch.") for d in dtypes)


def _scalar_ok(value: Any) -> bool:
    """Python scalars become kernel literals: bools, floats (inf and NaN too), int64 ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return -(2**63) <= value < 2**63
    return isinstance(value, (bool, float))


Extra = Callable[[torch.fx.Node], bool]


def checker(out: tuple[torch.dtype, ...], inputs: tuple[torch.dtype, ...] = ALL, kwargs: dict[str, Any] | None = None,
            extra: tuple[Extra, str] | None = None) -> Callable[[torch.fx.Node], str | None]:
    """Output dtype in `out`, tensor inputs in `inputs` and broadcastable, scalars finite,
    kwargs only those listed (with those values, or any value for None), and `extra`'s
    predicate true (its text says what it asks for). Returns why not, or None."""

    def check(node: torch.fx.Node) -> str | None:
        val = node.meta.get("val")
        if (why := _tensor_rejection(val, out, "result")) is not None:
            return why
        if any(isinstance(s, int) and s == 0 for s in val.shape):
            return "a statically empty result: nothing to compute, eager makes it"
        if val.dtype in SMALL and node.target not in _CASTS and (why := _not_of_small_result(node, val.dtype)):
            return why
        if val.dtype in FLOATS + (torch.int32,) and node.target not in _CASTS and (why := _literal_out_of_range(node, val.dtype)):
            return why
        for key, value in node.kwargs.items():
            allowed = (kwargs or {}).get(key, ("absent",))
            if allowed is not None and value not in allowed:
                return f"{key}={value!r}: this lowering takes " + ("no " + key if allowed == ("absent",) else f"{key} in {allowed}")
        for arg in node.args:
            if isinstance(arg, torch.fx.Node):
                arg_val = arg.meta.get("val")
                if isinstance(arg_val, (torch.SymInt, torch.SymFloat)):
                    continue  # a size-valued scalar: computed in the kernel or the wrapper (KernelBuilder.sym)
                if (why := _tensor_rejection(arg_val, inputs, "input")) is not None:
                    return why
                if arg_val.dim() > val.dim():
                    return "an input of higher rank than the result"
            elif isinstance(arg, (list, tuple)):
                continue  # a size (full): the iteration space comes from the output
            elif isinstance(arg, torch.dtype):
                continue  # prims.convert_element_type's (the only positional one): the result's dtype, checked above
            elif not (_scalar_ok(arg) or arg is None):
                return f"the argument {arg!r} is not a kernel literal (bool, float, int64 int)"
        if extra is not None and not extra[0](node):
            return f"this lowering needs {extra[1]}"
        return None

    return check


def _not_of_small_result(node: torch.fx.Node, dtype: torch.dtype) -> str | None:
    """Why the operands of a uint8/int8/int16 result (not a cast) are not all values of its
    dtype, or None: tensors of a dtype that converts to it exactly, Python ints in its range.
    Eager wraps a wider 0-dim tensor or SymInt to the dtype first, and an int out of range
    too, or raises (clamp's bounds); a kernel's int32 op on the unwrapped value would give
    another result."""
    name = str(dtype).removeprefix("torch.")
    for arg in (*node.args, *node.kwargs.values()):
        val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
        if isinstance(arg, torch.fx.Node) and not isinstance(val, torch.Tensor):
            return f"a {name} result of a size or scalar operand (eager wraps it to {name} at run time)"
        if isinstance(arg, torch.fx.Node) and torch.promote_types(val.dtype, dtype) != dtype:
            return f"a {name} result of an operand wider than {name} (eager wraps it first)"
        if (why := scalar_rejection(val, dtype)) is not None:
            return why
    return None


def _literal_out_of_range(node: torch.fx.Node, dtype: torch.dtype) -> str | None:
    """Why a Python number operand of an int32 or float result is not a value of its dtype,
    or None (an int64 tensor or a SymInt converts to int32 in the kernel as in eager,
    wrapping). Floats only where the node is the op the program called: a decomposition's
    node with such a number is not what eager runs (eager's nan_to_num(posinf=1e39) gives
    inf where its decomposition's `where` raises), and its kernel converts as eager's
    unchecked conversions do, to inf."""
    original = node.meta.get("original_aten")
    if dtype in FLOATS and original is not None and str(original) != str(node.target):  # a decomposition's node
        return None
    args = node.args[:1] + node.args[2:] if node.target in _WRAPPED_OPERAND else node.args
    for arg in (*args, *node.kwargs.values()):
        if not isinstance(arg, torch.fx.Node) and (why := scalar_rejection(arg, dtype)) is not None:
            return why
    return None


# ops whose Python number operand (args[1]) eager converts as a wrapped number, without a
# check: `x_f16 * 1e6` is inf, `x_i32 + 2**32 + 3` adds 3 (the kernel's constants alike:
# ir.convert_scalar, codegen's float32 literals); their `alpha` is checked
_WRAPPED_OPERAND = frozenset({aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.mul.Tensor,
                              aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar, aten.rsub.Scalar})


def scalar_rejection(value: Any, dtype: torch.dtype) -> str | None:
    """Why a Python number is not a value of `dtype` as given, or None: for int32 and
    uint8/int8/int16 an int in its range or a whole float such as F.pad's 0.0; for float32,
    float16 and bfloat16 one within the largest finite value (or inf, or NaN). Eager
    converts it to the dtype, op by op wrapping it, raising ("value cannot be converted to
    type c10::Half without overflow": clamp's bounds, fills, pad values) or rounding it to
    inf; a kernel literal would keep it whole."""
    name = str(dtype).removeprefix("torch.")
    if dtype in FLOATS:
        finite = type(value) is int or type(value) is float and math.isfinite(value)
        beyond = finite and abs(value) > torch.finfo(dtype).max
        return f"a {name} result of the number {value}, beyond {name}'s largest finite value (eager raises or gives inf, op by op)" \
            if beyond else None
    if dtype not in SMALL + (torch.int32,):
        return None
    info = torch.iinfo(dtype)
    if type(value) is float and not value.is_integer():
        return f"a {name} result of the float {value} (eager converts it, checking its range op by op)"
    if type(value) in (int, float) and not info.min <= value <= info.max:
        return f"a {name} result of the {type(value).__name__} {value}, out of {name}'s range (eager wraps it or raises, op by op)"
    return None


def _out_cdt(node: torch.fx.Node) -> torch.dtype:
    return ir.compute_dtype(node.meta["val"].dtype)


# -- rules -----------------------------------------------------------------------------
def _elementwise(op: str, nargs: int) -> Rule:
    """Operands cast to the output's compute dtype, then `op`."""

    def rule(b: Any, node: torch.fx.Node, *operands: Any) -> int:
        cdt = _out_cdt(node)
        return b.compute(op, tuple(_arg(b, o, cdt, node) for o in operands[:nargs]), node, cdt)

    return rule


def _on_blocks(op: str, nargs: int, dtype: torch.dtype | None = None) -> Rule:
    """Operands cast to `dtype` (default the output's compute dtype), a scalar one
    broadcast to a block (the math reads fp32 bits: a literal has none), then `op`."""

    def rule(b: Any, node: torch.fx.Node, *operands: Any) -> int:
        cdt = _out_cdt(node) if dtype is None else dtype
        return b.compute(op, _blocks(b, node, operands[:nargs], cdt), node, _out_cdt(node))

    return rule


def _blocks(b: Any, node: torch.fx.Node, operands: tuple[Any, ...], dtype: torch.dtype) -> tuple[int, ...]:
    """Operands cast to `dtype` (read as eager's kernel reads them: operand), a scalar one
    broadcast to a block of lanes."""
    args = [operand(b, node, o, i, dtype) for i, o in enumerate(operands)]
    return tuple(b.compute("broadcast", (a,), node, dtype) if b.is_scalar(a) else a for a in args)


def _or_on_bools(op: str, on_bools: str) -> Rule:
    """`op` on numbers, `on_bools` on a bool result (eager multiplies two bool tensors as
    an and, takes the fmax of two as an or)."""

    def rule(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
        cdt = _out_cdt(node)
        return b.compute(on_bools if cdt is torch.bool else op, (_arg(b, x, cdt, node), _arg(b, y, cdt, node)), node, cdt)

    return rule


def _compare(op: str) -> Rule:
    """Both operands converted to torch's common dtype, as eager converts them, then
    compared: float16/bfloat16 rounded (x_f16 == 0.1 compares with float16's 0.1, a fused
    float16 result with its stored value), uint8/int8/int16 and int32 wrapped (u8 > -1
    compares with 255, i32 == 2**32 + 3 with 3, a 0-dim int64 tensor or a SymInt alike)."""

    def rule(b: Any, node: torch.fx.Node, *operands: Any) -> int:
        common = _common_dtype(node) if len(operands) == 2 else node.args[0].meta["val"].dtype  # isnan, isinf: one
        return b.compute(op, tuple(_in_dtype(b, o, common, node) for o in operands), node, torch.bool)

    return rule


def _common_dtype(node: torch.fx.Node) -> torch.dtype:
    """torch's promotion of a comparison's two operands (a SymInt/SymFloat as a Python number)."""
    def operand(a: Any) -> Any:
        val = a.meta["val"] if isinstance(a, torch.fx.Node) else a
        if isinstance(val, torch.SymInt):
            return 0
        return 0.0 if isinstance(val, torch.SymFloat) else val

    return torch.result_type(*map(operand, node.args[:2]))


def _logical(op: str) -> Rule:
    def rule(b: Any, node: torch.fx.Node, *operands: Any) -> int:
        as_bool = tuple(_arg(b, o, torch.bool, node) for o in operands)  # a cast to bool is `x != 0`
        result = b.compute(op, as_bool, node, torch.bool)
        return b.cast(result, _out_cdt(node), node)

    return rule


def _with_scalars(op: str, names: tuple[str, ...], defaults: tuple[Any, ...]) -> Rule:
    """op(x, p1, p2, ...) with scalar parameters from args or kwargs (leaky_relu, elu)."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *params: Any) -> int:
        cdt = _out_cdt(node)
        values = list(params) + [node.kwargs.get(n, d) for n, d in zip(names[len(params):], defaults[len(params):])]
        return b.compute(op, (_arg(b, x, cdt, node), *(_arg(b, v, cdt, node) for v in values)), node, cdt)

    return rule


def _clamp(names: tuple[str, str], defaults: tuple[Any, Any]) -> Rule:
    """clamp / hardtanh: either bound may be absent; NaN propagates."""

    def rule(b: Any, node: torch.fx.Node, x: Any, *params: Any) -> int:
        cdt = _out_cdt(node)
        values = list(params) + [node.kwargs.get(n, d) for n, d in zip(names[len(params):], defaults[len(params):])]
        value = _arg(b, x, cdt, node)
        for op, bound in zip(("clamp_min", "clamp_max"), values):
            if bound is not None:
                value = b.compute(op, (value, _arg(b, bound, cdt, node)), node, cdt)
        return value

    return rule


def _convert(b: Any, node: torch.fx.Node, x: Any, *rest: Any) -> int:
    """convert_element_type / _to_copy / clone / lift_fresh_copy: the value itself (cast), stored at the node's strides."""
    return _cast_to_node(b, node, x, node.args[0])


def _copy(b: Any, node: torch.fx.Node, dst: Any, src: Any, *rest: Any) -> int:
    """copy(dst, src) (functionalized `dst[...] = src`): src broadcast to dst's shape, cast to
    its dtype, stored at dst's strides; dst's values are not read (registered unread)."""
    return _cast_to_node(b, node, src, node.args[1])


def _cast_to_node(b: Any, node: torch.fx.Node, x: Any, source: Any) -> int:
    """x (the value of FX argument `source`) cast to node's dtype. A cast to float16 or
    bfloat16 from another dtype rounds: the user asked for it (`x - x.half().float()` is
    the rounding error, not 0), where a value computed in those dtypes is rounded once, on
    store (ir.compute_dtype)."""
    dtype = node.meta["val"].dtype
    from_dtype = source.meta["val"].dtype if isinstance(source, torch.fx.Node) else None
    if dtype in SMALL and from_dtype is not None and from_dtype.is_floating_point:
        x = Ref(_arg(b, x, torch.int64, node))  # through int64, as eager's c10 casts to uint8
    value = _arg(b, x, _out_cdt(node), node)
    if dtype in ir.ROUNDINGS and from_dtype != dtype:
        return b.round_to(value, dtype, node)
    return value


def _where(b: Any, node: torch.fx.Node, cond: Any, x: Any, y: Any) -> int:
    cdt = _out_cdt(node)
    return b.compute("where", (_arg(b, cond, torch.bool, node), _arg(b, x, cdt, node), _arg(b, y, cdt, node)), node, cdt)


def _full(b: Any, node: torch.fx.Node, *args: Any) -> int:
    value = args[0] if node.target in _SCALAR_TENSORS else args[1]  # full, full_like, fill: (_, value)
    cdt, dtype = _out_cdt(node), node.meta["val"].dtype
    value = _arg(b, value, cdt, node)
    if dtype in ir.ROUNDINGS:  # full(0.1, dtype=torch.half) holds 0.0999755859375
        value = b.round_to(value, dtype, node)
    return b.compute("broadcast", (value,), node, cdt)


def _gelu(b: Any, node: torch.fx.Node, x: Any) -> int:
    op = "gelu_tanh" if node.kwargs.get("approximate", "none") == "tanh" else "gelu"
    return b.compute(op, (_arg(b, x, torch.float32, node),), node, torch.float32)


def _round_decimals(b: Any, node: torch.fx.Node, x: Any) -> int:
    """Eager's round_decimals: nearbyint(x * p) / p, or nearbyint(x / p) * p for negative
    decimals, with p = float(10 ** |decimals|)."""
    decimals = node.kwargs.get("decimals", 0)
    p = b.constant(float(torch.tensor(10.0 ** abs(decimals), dtype=torch.float32)), torch.float32)
    value = _arg(b, x, torch.float32, node)
    scale, unscale = ("mul", "truediv") if decimals >= 0 else ("truediv", "mul")
    rounded = b.compute("round", (b.compute(scale, (value, p), node),), node)
    return b.compute(unscale, (rounded, p), node)


def _nan_to_num(b: Any, node: torch.fx.Node, x: Any, *params: Any) -> int:
    finfo = torch.finfo(node.meta["val"].dtype)
    names = ("nan", "posinf", "neginf")
    values = list(params) + [node.kwargs.get(n) for n in names[len(params):]]
    # a value given may be a symbol (Ref: a kernel argument), never read as a Python float
    consts = tuple(b.constant(default, torch.float32) if v is None else _arg(b, v, torch.float32, node)
                   for v, default in zip(values, (0.0, finfo.max, finfo.min)))
    return b.compute("nan_to_num", (_arg(b, x, torch.float32, node), *consts), node, torch.float32)


# -- the table -------------------------------------------------------------------------
def _reg(targets: tuple[Any, ...], check: Callable[[torch.fx.Node], bool], rule: Rule, unread: tuple[int, ...] = ()) -> None:
    LOWERINGS.register(*targets, checker=check, unread=unread)(rule)


_FLOAT_UNARY = ["exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                "sigmoid", "erf", "reciprocal", "floor", "ceil", "trunc", "round", "silu"]
for _op in _FLOAT_UNARY:
    _reg((getattr(aten, _op).default,), checker(FLOATS, ALL), _elementwise(_op, 1))
# composed from exp/log/sqrt and fp32 bits under the interpreter, libdevice on a gpu (codegen/mathfns.py)
for _op in ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "log10", "erfc", "erfinv", "digamma", "lgamma"]:
    _reg((getattr(aten, _op).default,), checker(FLOATS, ALL), _on_blocks(_op, 1))


# modified Bessel functions of the first kind: Cephes' series (codegen/mathfns.py)
for _target, _op in [(aten.i0.default, "i0"), (aten.special_i0e.default, "i0e"), (aten.special_i1.default, "i1"),
                     (aten.special_i1e.default, "i1e")]:
    _reg((_target,), checker(FLOATS, ALL), _on_blocks(_op, 1))


_POLYGAMMA = {0: _on_blocks("digamma", 1), 1: _on_blocks("trigamma", 1)}


def _polygamma(b: Any, node: torch.fx.Node, n: int, x: Any) -> int:
    return _POLYGAMMA[n](b, node, x)


_reg((aten.polygamma.default,), checker(FLOATS, ALL, extra=(lambda node: node.args[0] in (0, 1), "n 0 or 1 (digamma, trigamma)")),
     _polygamma)
_reg((aten.atan2.default,), checker(FLOATS, ALL), _on_blocks("atan2", 2))
_reg((aten.angle.default,), checker(FLOATS, ALL), _elementwise("angle", 1))
# float32 only: eager steps a float16/bfloat16 in its own precision, which fp32 compute has not
_reg((aten.nextafter.default,), checker((torch.float32,), (torch.float32,)), _on_blocks("nextafter", 2))
_reg((aten.hypot.default,), checker(FLOATS, FLOATS), _on_blocks("hypot", 2))
_reg((aten.copysign.Tensor, aten.copysign.Scalar), checker(FLOATS, ALL), _on_blocks("copysign", 2))
_reg((aten.signbit.default,), checker((torch.bool,), NUMERIC), _on_blocks("signbit", 1, torch.float32))
_reg((aten.fmax.default,), checker(ALL, ALL), _or_on_bools("fmax", "logical_or"))
_reg((aten.fmin.default,), checker(ALL, ALL), _or_on_bools("fmin", "logical_and"))


def _neg(b: Any, node: torch.fx.Node, x: Any) -> int:
    """A float's negation is "fneg" (a zero's sign flips on any Triton: mathfns.negate)."""
    cdt = _out_cdt(node)
    return b.compute("fneg" if cdt.is_floating_point else "neg", (_arg(b, x, cdt, node),), node, cdt)


_reg((aten.neg.default,), checker(WRAPPING, WRAPPING), _neg)
for _op in ["abs", "relu", "sign"]:
    _reg((getattr(aten, _op).default,), checker(WRAPPING, WRAPPING), _elementwise(_op, 1))
for _op in ["isnan", "isinf"]:
    _reg((getattr(aten, _op).default,), checker((torch.bool,), FLOATS), _compare(_op))

_reg((aten.mul.Tensor, aten.mul.Scalar), checker(READABLE, READABLE), _or_on_bools("mul", "logical_and"))
_reg((aten.maximum.default,), checker(WRAPPING, READABLE), _elementwise("maximum", 2))
_reg((aten.minimum.default,), checker(WRAPPING, READABLE), _elementwise("minimum", 2))
for _op in ["eq", "ne", "lt", "le", "gt", "ge"]:
    _reg((getattr(aten, _op).Tensor, getattr(aten, _op).Scalar),
         checker((torch.bool,), READABLE), _compare(_op))
for _op in ["logical_and", "logical_or", "logical_xor"]:
    _reg((getattr(aten, _op).default,), checker((torch.bool,), READABLE), _logical(_op))
_reg((aten.logical_not.default,), checker((torch.bool,), READABLE), _logical("logical_not"))
_BITS = INTS + SMALL + (torch.bool,)
for _op in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    _reg((getattr(aten, _op).Tensor, getattr(aten, _op).Scalar), checker(_BITS, _BITS), _elementwise(_op, 2))
_reg((aten.bitwise_not.default,), checker(_BITS, _BITS), _elementwise("bitwise_not", 1))
_reg((aten.where.self,), checker(READABLE, READABLE), _where)
_reg((aten.clamp.default,), checker(WRAPPING, WRAPPING, {"min": None, "max": None}), _clamp(("min", "max"), (None, None)))
_reg((aten.clamp.Tensor,), checker(WRAPPING, WRAPPING, {"min": None, "max": None}), _clamp(("min", "max"), (None, None)))
_reg((aten.clamp_min.default, aten.clamp_min.Tensor), checker(WRAPPING, WRAPPING), _elementwise("clamp_min", 2))
_reg((aten.clamp_max.default, aten.clamp_max.Tensor), checker(WRAPPING, WRAPPING), _elementwise("clamp_max", 2))
_reg((aten.hardtanh.default,), checker(FLOATS, FLOATS), _clamp(("min_val", "max_val"), (-1.0, 1.0)))
_reg((aten.leaky_relu.default,), checker(FLOATS, FLOATS), _with_scalars("leaky_relu", ("negative_slope",), (0.01,)))
_reg((aten.elu.default,), checker(FLOATS, FLOATS), _with_scalars("elu", ("alpha", "scale", "input_scale"), (1.0, 1.0, 1.0)))
_reg((aten.gelu.default,), checker(FLOATS, FLOATS, {"approximate": ("none", "tanh")}), _gelu)
_reg((aten.round.decimals,), checker(FLOATS, FLOATS, {"decimals": None}), _round_decimals)
_reg((aten.nan_to_num.default,), checker(FLOATS, FLOATS, {"nan": None, "posinf": None, "neginf": None}), _nan_to_num)
_reg((prims.convert_element_type.default,), checker(READABLE, READABLE, extra=(lambda n: isinstance(n.args[1], torch.dtype), "a dtype argument")), _convert)
_reg((aten._to_copy.default,), checker(READABLE, READABLE, {"dtype": None, "layout": (torch.strided, None), "device": None,
                                                  "memory_format": None},  # any: stored at the node's strides, as clone
     extra=(lambda n: isinstance(n.args[0], torch.fx.Node) and n.kwargs.get("device") in (None, n.args[0].meta["val"].device),
            "a copy of a tensor on its device")), _convert)
_reg((aten.clone.default,), checker(READABLE, READABLE, {"memory_format": None}), _convert)
_reg((aten.lift_fresh_copy.default,), checker(READABLE, READABLE), _convert)  # a fresh copy of a graph constant
_reg((aten.copy.default,), checker(READABLE, READABLE, {"non_blocking": None}), _copy, unread=(0,))
_SAME_DEVICE = {"dtype": None, "layout": (torch.strided, None), "device": None, "pin_memory": (False, None)}
# a literal; an int symbol (`torch.full(shape, k)` of an int argument under dynamic=True),
# which the kernel takes as an int64 argument and converts once, as eager does; or a float
# symbol (`n / 3`) filling a floating tensor: the wrapper computes it in float64 and the
# kernel takes it as float32 (KernelBuilder.sym), as eager's fill converts the double to
# float first for float16/bfloat16 too (c10's Half and BFloat16 convert from float). An
# integer or bool fill from a float symbol would need the double itself (truncated, or
# compared with 0): not lowered
def _fill_ok(node: torch.fx.Node) -> bool:
    value = node.args[1]
    if _scalar_ok(value):
        return True
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    return isinstance(val, torch.SymInt) or isinstance(val, torch.SymFloat) and node.meta["val"].dtype in FLOATS


_LITERAL_FILL = (_fill_ok, "a fill value that is a kernel literal, an int symbol, or a float symbol filling a floating tensor")
_reg((aten.full.default,), checker(READABLE, READABLE, _SAME_DEVICE, extra=_LITERAL_FILL), _full)
_SCALAR_TENSORS = (aten.scalar_tensor.default, prims.scalar_tensor.default)  # prims': xlogy's with a Python number
_reg(_SCALAR_TENSORS, checker(READABLE, READABLE, _SAME_DEVICE), _full)
# the tensor argument gives the result's size and dtype, which the node's meta has: the kernel reads nothing of it
_reg((aten.fill.Scalar,), checker(READABLE, READABLE), _full, unread=(0,))
_reg((aten.full_like.default,), checker(READABLE, READABLE, {**_SAME_DEVICE, "memory_format": None}, extra=_LITERAL_FILL), _full,
     unread=(0,))
