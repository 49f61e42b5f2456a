"""Division lowerings: `div` with a rounding mode, `fmod` and `remainder`. Floats follow
torch's algorithms; integers (which raise on a zero divisor in eager, a kernel cannot) are
lowered only by a divisor known not to be 0 or -1 (_check_division)."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from .. import _torch_compat as compat
from .pointwise import FLOATS, INTS, READABLE, SMALL, Rule, _arg, _out_cdt, _reg, checker

aten = torch.ops.aten


_DIV_MODES = (aten.div.Tensor_mode, aten.div.Scalar_mode)


def _check_division(node: torch.fx.Node) -> str | None:
    """fmod / remainder, and div with rounding_mode trunc or floor: floats; integers only by
    an int literal other than 0 (integer division by zero raises in eager, a kernel cannot)
    and -1 (INT_MIN % -1 and INT_MIN // -1 overflow), or by a size at least 1."""
    val = node.meta.get("val")
    kwargs = {"rounding_mode": ("trunc", "floor", None)} if node.target in _DIV_MODES else None
    if not isinstance(val, torch.Tensor) or val.dtype not in INTS + SMALL:
        return checker(FLOATS, READABLE, kwargs)(node)
    divisor = node.args[1]
    if not (type(divisor) is int and divisor not in (0, -1) or _positive_size(divisor, val)):
        what = repr(divisor) if not isinstance(divisor, torch.fx.Node) else "a tensor" if isinstance(
            divisor.meta.get("val"), torch.Tensor) else "a size that may be 0"
        return (f"an integer {node.target.__name__.split('.')[0]} by {what}: integers only by an int literal other "
                "than 0 (eager raises on a zero divisor, a kernel cannot) and -1, or a size provably at least 1")
    return checker(INTS + SMALL, INTS + SMALL, kwargs)(node)  # uint8/int8/int16: exact in int32


def _positive_size(divisor: Any, fake: torch.Tensor) -> bool:
    """A SymInt divisor the ShapeEnv proves at least 1 (roll's `% size`, say)."""
    val = divisor.meta.get("val") if isinstance(divisor, torch.fx.Node) else None
    return isinstance(val, torch.SymInt) and compat.provably_positive(compat.sym_expr(val), fake)


def _mod(op: str) -> Rule:
    """Integers: C's truncating `%` (LLVM srem; the interpreter's numpy fmod), then
    remainder's sign fix, in the "_int" entries of the math table."""

    def rule(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
        cdt = _out_cdt(node)
        name = op + "_int" if cdt in INTS else op
        return b.compute(name, (_arg(b, x, cdt, node), _arg(b, y, cdt, node)), node, cdt)

    return rule


def _div_mode(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
    """Integers (by a literal other than 0 and -1, or a size: _check_division): C's truncating `//`
    on both targets (the interpreter emulates it), floored where the remainder's sign differs
    from the divisor's, in the "_int" entries of the math table."""
    mode = node.kwargs.get("rounding_mode")
    cdt = _out_cdt(node)
    a, d = _arg(b, x, cdt, node), _arg(b, y, cdt, node)
    if cdt in INTS:
        return b.compute("div_floor_int" if mode == "floor" else "div_trunc_int", (a, d), node, cdt)
    if mode == "floor":
        return _floor_divide(b, node, a, d, cdt)
    return b.compute("div_trunc" if mode == "trunc" else "truediv", (a, d), node, cdt)


def _floor_divide(b: Any, node: torch.fx.Node, a: int, d: int, cdt: torch.dtype) -> int:
    """torch's div_floor_floating step by step: from fmod, so 1.0 // 0.1 is 9.0 as in eager
    (floor(1.0 / 0.1) is 10.0); a zero divisor gives a / d; a zero quotient keeps its sign."""
    def op(name: str, *args: int, dtype: torch.dtype = cdt) -> int:
        return b.compute(name, args, node, dtype)

    one, half, zero = (b.constant(v, cdt) for v in (1.0, 0.5, 0.0))
    mod = op("fmod", a, d)
    div = op("truediv", op("sub", a, mod), d)
    signs_differ = op("ne", op("lt", d, zero, dtype=torch.bool), op("lt", mod, zero, dtype=torch.bool), dtype=torch.bool)
    div = op("where", op("logical_and", op("ne", mod, zero, dtype=torch.bool), signs_differ, dtype=torch.bool), op("sub", div, one), div)
    floor = op("floor", div)
    floor = op("where", op("gt", op("sub", div, floor), half, dtype=torch.bool), op("add", floor, one), floor)
    quotient = op("truediv", a, d)
    signed_zero = op("signed_zero", quotient)
    floor = op("where", op("ne", div, zero, dtype=torch.bool), floor, signed_zero)
    return op("where", op("eq", d, zero, dtype=torch.bool), quotient, floor)


_reg(_DIV_MODES, _check_division, _div_mode)
_reg((aten.remainder.Tensor, aten.remainder.Scalar), _check_division, _mod("remainder"))
_reg((aten.fmod.Tensor, aten.fmod.Scalar), _check_division, _mod("fmod"))
