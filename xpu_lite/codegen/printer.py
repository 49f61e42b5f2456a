"""sympy size expressions -> Python source (FloorDiv -> //, Max -> max, ...)."""
from __future__ import annotations

import sympy

from .._torch_compat import PythonPrinter


class SizePrinter(PythonPrinter):
    """torch's PythonPrinter: the same printer ShapeEnv uses for guards."""


_PRINTER = SizePrinter()


def pexpr(expr: sympy.Basic) -> str:
    if expr is sympy.true:
        return "True"
    if expr is sympy.false:
        return "False"
    return _PRINTER.doprint(expr)


def pexpr_int64(expr: sympy.Basic) -> str:
    """A kernel's int64 value of a size expression. Size arguments are i32: an expression with
    an integer beyond int32 (`x.shape[0] + 2**32`) computes from their int64 casts, as
    eager's does (Triton's interpreter rejects such a literal beside an i32)."""
    if all(abs(int(c)) < 2**31 for c in expr.atoms(sympy.Integer)):
        return pexpr(expr)
    return pexpr(expr.xreplace({s: sympy.Symbol(f"{s}.to(tl.int64)", integer=True) for s in expr.free_symbols}))
