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
