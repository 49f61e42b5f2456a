"""Division lowerings: `div` with a rounding mode, `fmod` and `remainder`. Floats follow
torch's algorithms; integers (which raise on a zero divisor in eager, a kernel cannot) are
lowered only by a divisor known not to be 0 (_check_division): an int literal, a size the
ShapeEnv proves at least 1, or a tensor the graph proves has no 0 (_never_zero: the counts
of a scatter mean, `n.clamp(min=1)`). A divisor that may be -1 is guarded: INT_MIN // -1
overflows (LLVM leaves it undefined), and the kernel gives what eager's cpu kernels give
there, INT_MIN and a remainder of 0. A float divided by a cpu scalar is multiplied by its
reciprocal on cuda and xpu, as their eager kernels do (_reciprocal)."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from .. import _torch_compat as compat
from .operands import _arg, cpu_scalar, on_cpu, operand
from .pointwise import FLOATS, INTS, READABLE, SMALL, Rule, _out_cdt, _reg, checker

aten = torch.ops.aten


_DIV_MODES = (aten.div.Tensor_mode, aten.div.Scalar_mode)


def _check_division(node: torch.fx.Node) -> str | None:
    """fmod / remainder, and div with rounding_mode trunc or floor: floats; integers only by
    an int literal other than 0 (integer division by zero raises in eager, a kernel cannot),
    a size at least 1, or a tensor with no 0 (_never_zero)."""
    val = node.meta.get("val")
    kwargs = {"rounding_mode": ("trunc", "floor", None)} if node.target in _DIV_MODES else None
    if not isinstance(val, torch.Tensor) or val.dtype not in INTS + SMALL:
        return checker(FLOATS, READABLE, kwargs)(node)
    divisor = node.args[1]
    if not (type(divisor) is int and divisor != 0 or _positive_size(divisor, val) or _never_zero(divisor, val.dtype)):
        what = repr(divisor) if not isinstance(divisor, torch.fx.Node) else "a tensor that may hold 0" if isinstance(
            divisor.meta.get("val"), torch.Tensor) else "a size that may be 0"
        return (f"an integer {node.target.__name__.split('.')[0]} by {what}: integers only by an int literal other "
                "than 0 (eager raises on a zero divisor, a kernel cannot), a size provably at least 1, or a tensor "
                "the graph proves has no 0 (a nonzero fill, a clamp to at least 1, a where that replaces its zeros)")
    return checker(INTS + SMALL, INTS + SMALL, kwargs)(node)  # uint8/int8/int16: exact in int32


def _positive_size(divisor: Any, fake: torch.Tensor) -> bool:
    """A SymInt divisor the ShapeEnv proves at least 1 (roll's `% size`, say)."""
    val = divisor.meta.get("val") if isinstance(divisor, torch.fx.Node) else None
    return isinstance(val, torch.SymInt) and compat.provably_positive(compat.sym_expr(val), fake)


_ONES = (aten.ones.default, aten.ones_like.default, aten.new_ones.default)
_FILLS = {aten.full.default: 1, aten.full_like.default: 1, aten.new_full.default: 2, aten.scalar_tensor.default: 0}  # value's position


def _never_zero(node: Any, dtype: torch.dtype) -> bool:
    """Whether integer tensor `node`, converted to `dtype` as eager converts a divisor to the
    result's dtype, has no 0 element by its construction in the graph: ones, a fill of a
    number that is not 0 in either dtype, a clamp whose bounds keep it at least 1 or at most
    -1, or a where whose every chosen value is not 0 (a branch that is not 0 itself is
    chosen only where it is not 0: where(x == 0, 1, x), masked_fill's decomposition). Other
    values must convert to a dtype at least as wide, which keeps a value that is not 0."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not (isinstance(val, torch.Tensor) and val.dtype in INTS + SMALL):
        return False
    if node.target in _ONES:
        return True
    if node.target in _FILLS:
        value, bits = node.args[_FILLS[node.target]], min(torch.iinfo(d).bits for d in (val.dtype, dtype))
        return type(value) is int and value % 2 ** bits != 0
    if not _widens(node, dtype):
        return False
    if node.target in (aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default):
        bounds = [*node.args[1:], None, None][:2] if node.target is aten.clamp.default else (
            [node.args[1], None] if node.target is aten.clamp_min.default else [None, node.args[1]])
        low, high = node.kwargs.get("min", bounds[0]), node.kwargs.get("max", bounds[1])
        info = torch.iinfo(val.dtype)  # a bound out of the dtype's range: eager raises or wraps it
        if not all(bound is None or type(bound) is int and info.min <= bound <= info.max for bound in (low, high)):
            return False
        return all(bound is None or bound >= 1 for bound in (low, high)) and low is not None or (
            all(bound is None or bound <= -1 for bound in (low, high)) and high is not None)
    if node.target is aten.where.self:
        condition, chosen, other = node.args
        return ((_never_zero(chosen, val.dtype) or _tests_zero(condition, aten.ne.Scalar, chosen, val.dtype))
                and (_never_zero(other, val.dtype) or _tests_zero(condition, aten.eq.Scalar, other, val.dtype)))
    return False


def _widens(node: torch.fx.Node, dtype: torch.dtype) -> bool:
    return node.meta["val"].dtype.itemsize <= dtype.itemsize


def _tests_zero(condition: Any, test: Any, x: Any, dtype: torch.dtype) -> bool:
    """`condition` is `test(x, 0)`, and x converts to `dtype` keeping its values."""
    return isinstance(condition, torch.fx.Node) and condition.target is test and condition.args[0] is x and (
        type(condition.args[1]) in (int, float) and condition.args[1] == 0) and _widens(x, dtype)


def _reciprocal(b: Any, node: torch.fx.Node, d: int, cdt: torch.dtype) -> int | None:
    """1 / d in float32 where eager's kernel multiplies by it: its cuda and xpu kernels divide
    a float by a cpu scalar (a Python number, a size, a 0-dim cpu tensor) as a * (1 / d), the
    reciprocal in float32 ("may lose one bit"), in every rounding mode. That differs from the
    division in the last bit for a third of float32 values (x / 3.0), and x / 1e-40 is
    x * inf. cpu divides. None where the kernel divides."""
    if on_cpu(node) or not cdt.is_floating_point or not cpu_scalar(node.args[1]):
        return None
    return b.compute("reciprocal", (d,), node, cdt)


def _true_divide(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
    cdt = _out_cdt(node)
    a, d = _arg(b, x, cdt, node), _arg(b, y, cdt, node)
    inverse = _reciprocal(b, node, d, cdt)
    return b.compute("truediv", (a, d), node, cdt) if inverse is None else b.compute("mul", (a, inverse), node, cdt)


def _mod(op: str) -> Rule:
    """Integers: C's truncating `%` (LLVM srem; the interpreter's numpy fmod), then
    remainder's sign fix, in the "_int" entries of the math table."""

    def rule(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
        cdt = _out_cdt(node)
        if cdt in INTS:
            return _integer(b, node, op + "_int", _arg(b, x, cdt, node), _arg(b, y, cdt, node), cdt)
        return b.compute(op, (operand(b, node, x, 0, cdt), operand(b, node, y, 1, cdt)), node, cdt)

    return rule


def _div_mode(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
    """Integers (by a divisor that is not 0: _check_division): C's truncating `//`
    on both targets (the interpreter emulates it), floored where the remainder's sign differs
    from the divisor's, in the "_int" entries of the math table."""
    mode = node.kwargs.get("rounding_mode")
    cdt = _out_cdt(node)
    a, d = _arg(b, x, cdt, node), _arg(b, y, cdt, node)
    if cdt in INTS:
        return _integer(b, node, "div_floor_int" if mode == "floor" else "div_trunc_int", a, d, cdt)
    inverse = _reciprocal(b, node, d, cdt)
    if mode == "floor":
        return _floor_divide(b, node, a, d, cdt, inverse)
    if inverse is None:
        return b.compute("div_trunc" if mode == "trunc" else "truediv", (a, d), node, cdt)
    product = b.compute("mul", (a, inverse), node, cdt)
    return b.compute("trunc", (product,), node, cdt) if mode == "trunc" else product


def _integer(b: Any, node: torch.fx.Node, name: str, a: int, d: int, cdt: torch.dtype) -> int:
    """The math table's integer `name`(a, d). An int32/int64 divisor that may be -1 (a tensor,
    or the literal) is 1 there and the result eager's: INT_MIN // -1 and INT_MIN % -1
    overflow, which LLVM leaves undefined; eager's cpu kernels give -a (INT_MIN wraps to
    itself) and 0. uint8/int8/int16 compute in int32, where they cannot overflow."""
    divisor = node.args[1]
    if node.meta["val"].dtype not in INTS or (divisor != -1 if type(divisor) is int else not isinstance(
            divisor.meta.get("val"), torch.Tensor)):
        return b.compute(name, (a, d), node, cdt)
    minus_one = b.compute("eq", (d, b.constant(-1, cdt)), node, torch.bool)
    result = b.compute(name, (a, b.compute("where", (minus_one, b.constant(1, cdt), d), node, cdt)), node, cdt)
    exact = b.compute("neg", (a,), node, cdt) if name.startswith("div") else b.constant(0, cdt)
    return b.compute("where", (minus_one, exact, result), node, cdt)


def _floor_divide(b: Any, node: torch.fx.Node, a: int, d: int, cdt: torch.dtype, inverse: int | None) -> int:
    """torch's div_floor_floating step by step: from fmod, so 1.0 // 0.1 is 9.0 as in eager
    (floor(1.0 / 0.1) is 10.0); a zero divisor gives a / d; a zero quotient keeps its sign.
    Each division is a product with `inverse` where eager's kernel multiplies (_reciprocal)."""
    def op(name: str, *args: int, dtype: torch.dtype = cdt) -> int:
        return b.compute(name, args, node, dtype)

    def divide(numerator: int) -> int:
        return op("truediv", numerator, d) if inverse is None else op("mul", numerator, inverse)

    one, half, zero = (b.constant(v, cdt) for v in (1.0, 0.5, 0.0))
    mod = op("fmod", a, d)
    div = divide(op("sub", a, mod))
    signs_differ = op("ne", op("lt", d, zero, dtype=torch.bool), op("lt", mod, zero, dtype=torch.bool), dtype=torch.bool)
    div = op("where", op("logical_and", op("ne", mod, zero, dtype=torch.bool), signs_differ, dtype=torch.bool), op("sub", div, one), div)
    floor = op("floor", div)
    floor = op("where", op("gt", op("sub", div, floor), half, dtype=torch.bool), op("add", floor, one), floor)
    quotient = divide(a)
    signed_zero = op("signed_zero", quotient)
    floor = op("where", op("ne", div, zero, dtype=torch.bool), floor, signed_zero)
    return op("where", op("eq", d, zero, dtype=torch.bool), quotient, floor)


_reg((aten.div.Tensor, aten.div.Scalar, aten.true_divide.Tensor), checker(FLOATS, READABLE), _true_divide)
_reg(_DIV_MODES, _check_division, _div_mode)
_reg((aten.remainder.Tensor, aten.remainder.Scalar), _check_division, _mod("remainder"))
_reg((aten.fmod.Tensor, aten.fmod.Scalar), _check_division, _mod("fmod"))
