"""Functions a kernel's source defines before its kernel, where a math entry calls them.

Some math needs a loop that no expression or straight-line Steps (mathfns.py) can spell:
eager's integer power walks the exponent's bits. Such an entry calls a helper by name
(mathfns.INT_MATH's integer_pow: `_integer_power(x, e, 63)`), and codegen/triton.py writes
the helper into each kernel source that calls it, decorated as the target runs it.
"""
from __future__ import annotations

# op -> the helper's source lines (without its decorator)
HELPERS = {"integer_pow": (
    "def _integer_power(base, exponent, BITS: tl.constexpr):",
    "    # eager's powi: square and multiply over the exponent's bits, each product wrapping as",
    "    # eager's; to a negative power 1 is 1, -1 is 1 or -1 (even or odd) and the rest 0",
    "    base, exponent = tl.broadcast(base, exponent)",
    "    result = tl.full(base.shape, 1, base.dtype)",
    "    square, bits = base, exponent",
    "    for _ in range(BITS):",
    "        result = tl.where((bits & 1) != 0, result * square, result)",
    "        square, bits = square * square, bits >> 1",
    "    odd = (exponent & 1) != 0",
    "    negative = tl.where(base == 1, 1, tl.where(base == -1, tl.where(odd, -1, 1), 0)).to(base.dtype)",
    "    return tl.where(exponent < 0, negative, result)",
)}


# target -> (the import its decorator needs, the decorator). Under the interpreter, a
# function the kernel calls must be an InterpretedFunction (what triton.jit returns where
# TRITON_INTERPRET=1 is set)
HELPER_DECORATOR = {
    "interpreter": ("from triton.runtime.interpreter import InterpretedFunction", "@InterpretedFunction"),
    "gpu": ("import triton", "@triton.jit"),
}
