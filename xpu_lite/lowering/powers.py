"""pow in Triton: exact forms for common scalar exponents, eager's products for 3 and -2,
exp2(y * log2|x|) with torch's rules otherwise; integers to a literal power as products,
to a tensor's power as eager's loop over the exponent's bits."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from ..held_values import held_value
from .operands import Ref, _arg, scalar_dtype, steps
from .pointwise import ALL, FLOATS, INTS, SMALL, _blocks, _out_cdt, _reg, checker

aten = torch.ops.aten

POW_SPECIAL = {2: "square", 0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal", 1: "identity", 0: "one"}


def _pow_by_products(b: Any, node: torch.fx.Node, x: Any, exponent: float) -> int:
    """Eager's products for the exponents 3 and -2 (pow_tensor_scalar_optimized_kernel,
    cuda's pow_tensor_scalar_kernel_impl): x * x * x and 1 / (x * x), each step rounded
    where the kernel computes in the dtype (operands.steps: cuda/xpu, and bfloat16 on cpu;
    cpu float16 takes powf, which x * x in float32 matches). As pow's composition, 249 of
    858 float32 `x ** -2` were one rounding off eager's 1 / (x * x)."""
    cdt = _out_cdt(node)
    step = steps(b, node, cpu=(torch.bfloat16,)) or (lambda value: value)
    value = _arg(b, x, cdt, node)
    square = step(b.compute("mul", (value, value), node, cdt))
    if exponent == 3:
        return b.compute("mul", (square, value), node, cdt)
    return b.compute("reciprocal", (square,), node, cdt)


def _integer_pow(b: Any, node: torch.fx.Node, x: Any, exponent: int) -> int:
    """An integer to a literal power >= 0 as products (square and multiply), which wrap as
    eager's products (its powi, and its x * x and x * x * x) wrap: the same ring."""
    cdt = _out_cdt(node)
    base, result = _arg(b, x, cdt, node), None
    if exponent == 1:
        return b.compute("identity", (base,), node, cdt)
    while exponent:
        if exponent & 1:
            result = base if result is None else b.compute("mul", (result, base), node, cdt)
        exponent >>= 1
        if exponent:
            base = b.compute("mul", (base, base), node, cdt)
    if result is None:  # x ** 0
        return b.compute("broadcast", (_arg(b, 1, cdt, node),), node, cdt)
    return result


def _pow(b: Any, node: torch.fx.Node, x: Any, exponent: Any) -> int:
    """Exact forms for common scalar exponents; exp2(y * log2|x|) with torch's sign, NaN,
    0 and 1 rules otherwise; integers to a literal power as products, to a tensor's power as
    eager's powi (a helper's loop over the exponent's bits)."""
    cdt, held = _out_cdt(node), scalar_dtype(node)
    if not cdt.is_floating_point and isinstance(exponent, Ref):  # eager's powi (codegen/helpers.py)
        return b.compute("integer_pow", _blocks(b, node, (x, exponent), cdt), node, cdt)
    if not cdt.is_floating_point:
        return _integer_pow(b, node, x, exponent)
    if held is not None and not isinstance(exponent, Ref):  # eager's exponent in the dtype, before the exact forms
        exponent = held_value(float(exponent), held)
    if not isinstance(exponent, Ref) and exponent in POW_SPECIAL:
        return b.compute(POW_SPECIAL[exponent], (_arg(b, x, cdt, node),), node, cdt)
    if not isinstance(exponent, Ref) and exponent in (3, -2) and isinstance(x, Ref):
        return _pow_by_products(b, node, x, exponent)
    # the composition reads the base's sign bit and combines tests of both operands: blocks
    return b.compute("pow", _blocks(b, node, (x, exponent), cdt), node, cdt)


_FLOAT_POW = checker(FLOATS, ALL)
_INTEGER_POW = checker(INTS + SMALL, ALL + SMALL, extra=(
    lambda n: n.target is not aten.pow.Tensor_Scalar or (type(n.args[1]) is int and n.args[1] >= 0),
    "an integer to a tensor's power or to a literal one >= 0 (a negative literal one is eager's error; "
    "a symbolic one could be either)"))


def _pow_check(node: torch.fx.Node) -> str | None:
    val = node.meta.get("val")
    return _INTEGER_POW(node) if isinstance(val, torch.Tensor) and val.dtype in INTS + SMALL else _FLOAT_POW(node)


_reg((aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar), _pow_check, _pow)
