"""The math table: each op's Triton expression (or named lines, `Steps`), per target.

"interpreter" (cpu) is the base column: libdevice functions are stubs there and
tl.maximum drops NaN, so NaN handling, signed zeros and the functions libdevice would give
(asin, erfc, digamma, ...) are composed from tl's exp/log/sqrt and fp32 bits, the
transcendental ones in float64 and rounded once (numpy's float32 exp and log are 2 ulps
off, and a float32 formula rounds at every step: tanh reached 6.7 ulps). "gpu"
(xpu/cuda) overrides entries with the libdevice function eager's kernels call, and with
the correctly rounded division and square root. codegen/triton.py formats the entries.
"""
from __future__ import annotations

import dataclasses

from .bessel_series import I0E_A, I0E_B, I1E_A, I1E_B

_F32_MAX = "3.4028234663852886e38"
_FLOOR_HALF = "tl.floor({0} + 0.5)"
# C's pow (what eager calls): |x|**y from exp2/log2, negative for a negative x (-0.0
# included) and an odd integer y, NaN for a finite negative x and a non-integer y, 1 for
# y == 0, x == 1 and (-1) ** ±inf. {0} must be a tensor (the lowering broadcasts a scalar base).
_SIGNBIT = "({0}.to(tl.int32, bitcast=True) < 0)"
_REMAINDER = "tl.where(({m} != 0) & (({m} < 0) != ({1} < 0)), {m} + {1}, {m})"  # {m}: fmod(a, b)
_ODD = "((tl.floor({1}) == {1}) & (tl.floor({1} * 0.5) * 2.0 != {1}))"
_MAGNITUDE = "tl.exp2({1} * tl.log2(tl.abs({0})))"
_POW = ("tl.where(({1} == 0.0) | ({0} == 1.0) | ((tl.abs({0}) == 1.0) & (tl.abs({1}) == float('inf'))), 1.0, "
        "tl.where(({0} < 0.0) & ({0} > float('-inf')) & (tl.floor({1}) != {1}), float('nan'), "
        "tl.where(" + _SIGNBIT + " & " + _ODD + ", -" + _MAGNITUDE + ", " + _MAGNITUDE + ")))")


def _gelu_tanh(tanh: str) -> str:
    """gelu's tanh approximation around a tanh template."""
    return "0.5 * {0} * (1.0 + " + tanh.replace("{0}", _GELU_INNER) + ")"


_GELU_INNER = "(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0}))"


def _tanh_steps(arg: str) -> tuple[tuple[str, str], ...]:
    """Steps ending in `{t}tanh`: tanh of the float32 `arg` in float64, rounded once (as
    eager's, within half an ulp; in float32, (1 - e) / (1 + e) with e = exp(-2|x|) rounds
    three times, 1.4 ulps near 1, where tanh's gradient 1 - tanh(x)**2 is that rounding).
    Near 0 the series (its next term is 2e-16 of x below 2**-8); ±0 and NaN stay."""
    return (("d", f"tl.cast({arg}, tl.float64)"), ("a", "tl.abs({t}d)"), ("e", "tl.exp(-2.0 * {t}a)"),
            ("m", "tl.where({t}a < 0.00390625, {t}a - {t}a * {t}a * {t}a / 3.0 + 2.0 * {t}a * {t}a * {t}a * {t}a * {t}a / 15.0, "
                  "(1.0 - {t}e) / (1.0 + {t}e))"),
            ("tanh", "tl.cast(tl.where({t}d == 0.0, {t}d, tl.where({t}d < 0.0, -{t}m, {t}m)), tl.float32)"))


# integers have no NaN: their max/min need none of the float forms' checks
INT_MATH = {"maximum": "tl.maximum({0}, {1})", "minimum": "tl.minimum({0}, {1})",
            "clamp_min": "tl.maximum({0}, {1})", "clamp_max": "tl.minimum({0}, {1})",
            "fmax": "tl.maximum({0}, {1})", "fmin": "tl.minimum({0}, {1})",
            # an integer to an integer tensor's power: eager's powi, a loop over the
            # exponent's bits ({bits}: 31 or 63) in a helper of the kernel's source (helpers.py)
            "integer_pow": "_integer_power({0}, {1}, {bits})"}


@dataclasses.dataclass(frozen=True)
class Steps:
    """A math entry too long for one expression: statements `<name>_<local> = expr`, then
    the value's expression. Placeholders: {0}, {1}, ... the operands, {dt} the value's tl
    dtype, {t} the value's name and "_" (so `{t}a` is the local `tmp5_a`)."""

    steps: tuple[tuple[str, str], ...]
    result: str


MathTable = dict[str, "str | Steps"]


def _with_sign(magnitude: str) -> str:
    """`magnitude` (a local) with {0}'s sign: -0.0 and -NaN included, as C's odd functions."""
    return "tl.where(" + _SIGNBIT + ", -" + magnitude + ", " + magnitude + ")"


def _rounded_once(expr: str) -> Steps:
    """`expr` of {0} (float32; any other operand a scalar or float32) in float64, rounded
    once to the value's dtype: within half an ulp where `expr` is exact math. The
    interpreter's float32 exp and log are numpy's SIMD ones (2 ulps), and a float32 formula
    of them rounds at each step (expm1's and log1p's reached 3 ulps); eager's cpu kernels
    (Sleef) are within 1."""
    return _steps_rounded_once(Steps((), expr))


def _steps_rounded_once(entry: Steps) -> Steps:
    """A float32 Steps entry of {0} (and {1}) evaluated in float64 and rounded once: its
    formula's own error only. An operand that is a Python scalar is a float32 first, as
    eager's scalar operand (pow's exponent 1.7); the sign tests on the operands' bits stay
    on the float32 operands."""
    bits = [_SIGNBIT.replace("{0}", f"{{{i}}}") for i in (0, 1)]

    def in_float64(text: str) -> str:
        for i, b in enumerate(bits):
            text = text.replace(b, f"<signbit {i}>")
        text = text.replace("{0}", "{t}x64").replace("{1}", "{t}y64")
        for i, b in enumerate(bits):
            text = text.replace(f"<signbit {i}>", b)
        return text
    binary = any("{1}" in text for _, text in entry.steps) or "{1}" in entry.result
    widen = lambda i: "tl.cast(tl.cast({%d}, tl.float32), tl.float64)" % i  # noqa: E731
    cast = (("x64", widen(0)),) + ((("y64", widen(1)),) if binary else ())
    return Steps(cast + tuple((name, in_float64(e)) for name, e in entry.steps),
                 "tl.cast(" + in_float64(entry.result) + ", {dt})")


def _laplace_fraction(x: str, terms: int) -> str:
    """Laplace's continued fraction for erfc, x + (1/2) / (x + 1 / (x + (3/2) / ...)), cut
    after `terms` terms: erfc(x) = exp(-x*x) / (sqrt(pi) * it)."""
    fraction = x
    for k in range(terms, 0, -1):
        fraction = f"{x} + {k / 2!r} / ({fraction})"
    return fraction


# Cephes' polynomials: asinf.c's single-precision asin(s) for |s| <= 0.5 from z = s*s; atan.c's
# double-precision atan(r), a rational function of z = r*r for |r| <= 0.66 (used for |r| <= tan(pi/8))
_ASIN_POLY = ("((((4.2163199048e-2 * {t}z + 2.4181311049e-2) * {t}z + 4.5470025998e-2) * {t}z + 7.4953002686e-2) * {t}z"
              " + 1.6666752422e-1) * {t}z * {s} + {s}")
_ATAN_RATIONAL = ("{t}r + {t}r * {t}z * ((((-8.750608600031904122785e-1 * {t}z - 1.615753718733365076637e1) * {t}z"
                  " - 7.500855792314704667340e1) * {t}z - 1.228866684490136173410e2) * {t}z - 6.485021904942025371773e1)"
                  " / (((((({t}z + 2.485846490142306297962e1) * {t}z + 1.650270098316988542046e2) * {t}z"
                  " + 4.328810604912902668951e2) * {t}z + 4.853903996359136964868e2) * {t}z + 1.945506571482613964425e2))")
_PI, _PI_2, _PI_4, _LN2 = "3.141592653589793", "1.5707963267948966", "0.7853981633974483", "0.6931471805599453"
_BEYOND_LOG = "268435456.0"  # 2**28: past it, x*x loses 1 against x and asinh(x), acosh(x) are log(2x)


def negate(value: str, gpu: bool) -> str:
    """-value as IEEE negation: a zero's sign and a NaN's flip too, as eager's. Triton 3.6
    (the lent H100's) compiles a float's `-x` as `0.0 - x`, and folds `-0.0 - x` to it too,
    so -(+0.0) is +0.0 there (its TTIR; fixed upstream by triton-lang/triton#10270, 3.9's is
    fneg). `x * -1.0` is exact, and LLVM folds it to fneg: an xor of the sign bit in the
    PTX of 3.6 and 3.9. The interpreter's `-x` is numpy's negative."""
    return f"({value} * -1.0)" if gpu else f"-{value}"


def _log1p_of(local: str) -> str:
    return MATH_LOG1P.replace("{0}", local)


def _digamma(gpu: bool) -> Steps:
    """digamma as eager's calc_digamma (Cephes' psi): for x < 0, -pi / tan(pi * frac(x))
    and x = 1 - x; x pushed to >= 10 by ten masked steps of the recurrence (eager's loop
    runs at most ten); then psi(10) exactly, or the asymptotic series. +-0 give -+inf, a
    negative integer (-inf too) NaN. The interpreter's in float64, rounded once (eager's
    float64 one); `gpu`'s as eager's cuda kernel: the reflection in double (modf, tan: pi
    times a float fraction near a pole loses every digit), the rest in float32 with IEEE
    division, libdevice's log and the jiterator string's order of the last sum."""
    if gpu:
        dtype, div = "tl.float32", "tl.div_rn({0}, {1})"
        frac = "({t}x - tl.where({t}neg, tl.ceil({t}x), tl.floor({t}x))).to(tl.float64)"  # exact: Sterbenz
        refl = "(" + _PI + " / libdevice.tan(" + _PI + " * {t}r)).to(tl.float32)"
        tail = "libdevice.log({t}v10) - tl.div_rn(0.5, {t}v10) - {t}y + {t}c10"  # the jiterator's order
    else:
        dtype, div = "tl.float64", "{0} / {1}"
        frac = "{t}x - tl.where({t}neg, tl.ceil({t}x), tl.floor({t}x))"
        refl = _PI + " / (tl.sin(" + _PI + " * {t}r) / tl.cos(" + _PI + " * {t}r))"
        tail = "{t}c10 + tl.log({t}v10) - 0.5 / {t}v10 - {t}y"  # calc_digamma's (Math.h)
    steps = [("x", "{0}.to(" + dtype + ")"), ("neg", "{t}x < 0.0"), ("r", frac),
             ("c0", "tl.where({t}neg, " + negate("(" + refl + ")", gpu) + ", 0.0)"), ("v0", "tl.where({t}neg, 1.0 - {t}x, {t}x)")]
    for i in range(10):
        more = f"{{t}}v{i} < 10.0"
        steps += [(f"c{i + 1}", f"tl.where({more}, {{t}}c{i} - {div.format('1.0', f'{{t}}v{i}')}, {{t}}c{i})"),
                  (f"v{i + 1}", f"tl.where({more}, {{t}}v{i} + 1.0, {{t}}v{i})")]
    steps += [("z", div.format("1.0", "({t}v10 * {t}v10)")),
              ("y", "tl.where({t}v10 < 1e17, {t}z * ((((((8.33333333333333333333e-2 * {t}z - 2.10927960927960927961e-2) "
                    "* {t}z + 7.57575757575757575758e-3) * {t}z - 4.16666666666666666667e-3) * {t}z "
                    "+ 3.96825396825396825397e-3) * {t}z - 8.33333333333333333333e-3) * {t}z + 8.33333333333333333333e-2), 0.0)"),
              ("m", "tl.where({t}v10 == 10.0, {t}c10 + 2.25175258906672110764, " + tail + ")")]
    result = ("tl.where({0} == 0.0, tl.where(" + _SIGNBIT + ", float('inf'), -float('inf')), "
              "tl.where({t}neg & ({t}x == tl.floor({t}x)), float('nan'), {t}m)).to(tl.float32)")
    return Steps(tuple(steps), result)


def _trigamma(gpu: bool) -> Steps:
    """polygamma(1, x) as eager's trigamma (ATen/native/Math.h): for x < 0.5,
    pi^2 / sin(pi x)^2 - trigamma(1 - x); six steps of the recurrence, then the asymptotic
    series. The interpreter's in float64; `gpu`'s in float32 as eager's cuda kernel (its
    acc_type), with IEEE division and libdevice's sin."""
    dtype, div, sin = ("tl.float32", "tl.div_rn({0}, {1})", "libdevice.sin") if gpu else ("tl.float64", "{0} / {1}", "tl.sin")
    steps = [("x", "{0}.to(" + dtype + ")"), ("refl", "{t}x < 0.5"), ("s", sin + "(" + _PI + " * {t}x)"),
             ("c0", "tl.where({t}refl, " + div.format("-9.869604401089358", "({t}s * {t}s)") + ", 0.0)"),  # -pi^2
             ("v0", "tl.where({t}refl, 1.0 - {t}x, {t}x)")]
    for i in range(6):
        steps += [(f"c{i + 1}", f"{{t}}c{i} + " + div.format("1.0", f"({{t}}v{i} * {{t}}v{i})")), (f"v{i + 1}", f"{{t}}v{i} + 1.0")]
    steps += [("ixx", div.format("1.0", "({t}v6 * {t}v6)")),
              ("m", "{t}c6 + " + div.format("(1.0 + " + div.format("1.0", "(2.0 * {t}v6)")
                                            + " + {t}ixx * (1.0 / 6.0 - {t}ixx * (1.0 / 30.0 - {t}ixx * (1.0 / 42.0))))", "{t}v6"))]
    return Steps(tuple(steps), "tl.where({t}refl, " + negate("{t}m", gpu) + ", {t}m).to(tl.float32)")


# fn -> (its value from x = |input| and the two series' sums, {t}ca over [0, 8] and {t}cb
# beyond, in eager's order of operations: the [0, 8] form, the numerator over sqrt(x); odd;
# the series). i1 and i1e are odd: eager negates for x < 0, so -0.0 gives +0.0.
_BESSEL = {"i0": ("{exp} * {t}ca", "{exp} * {t}cb", False, (I0E_A, I0E_B)),
           "i0e": ("{t}ca", "{t}cb", False, (I0E_A, I0E_B)),
           "i1": ("{exp} * {t}x * {t}ca", "{exp} * {t}cb", True, (I1E_A, I1E_B)),
           "i1e": ("{t}ca * {t}x", "{t}cb", True, (I1E_A, I1E_B))}
# the float coefficients eager's cuda i1e kernel sums (its cpu float kernels use them for i1
# too; cuda's i1 sums the double ones)
_BESSEL_FLOAT_SERIES = {"i1e": (I1E_A[12:], I1E_B[18:])}


def _plus(v: float) -> str:
    """` + v` or ` - |v|` (the same sum in IEEE arithmetic)."""
    return f" - {-v!r}" if v < 0 else f" + {v!r}"


def _chbevl(name: str, at: str, coefficients: tuple[float, ...]) -> list[tuple[str, str]]:
    """Cephes' chbevl (Clenshaw's recurrence, as eager's loop) at the local `at`: steps
    {t}<name>1, {t}<name>2, ..., then {t}c<name>, the sum. The first coefficient is inlined
    where eager reads b0 and b2: a literal held in a local would be an fp32 constant."""
    c, b = coefficients, [f"{{t}}{name}{i}" for i in range(len(coefficients))]
    steps = [(f"{name}1", f"{{t}}{at} * {c[0]!r}{_plus(c[1])}"),  # b2 is 0
             (f"{name}2", f"{{t}}{at} * {b[1]}{_plus(-c[0])}{_plus(c[2])}")]
    steps += [(f"{name}{i}", f"{{t}}{at} * {b[i - 1]} - {b[i - 2]}{_plus(c[i])}") for i in range(3, len(c))]
    return steps + [("c" + name, f"0.5 * ({b[-1]} - {b[-3]})")]


def _bessel(fn: str, gpu: bool = False) -> Steps:
    """i0, i0e, i1 or i1e as eager's calc_<fn> (Cephes): the [0, 8] series in x / 2 - 2,
    the other in 32 / x - 2, both summed, the value picked by x <= 8 (NaN: the second, NaN
    too), rounded to float32. The interpreter's in float64 with the double coefficients;
    `gpu`'s in float32 as eager's cuda kernels (its jiterator strings): libdevice's exp and
    correctly rounded division and square root (eager's expf, `/` and sqrtf), exp(x) times
    the series, then divided by sqrt(x), so i0 and i1 overflow from x = 88.7 as eager's do.
    An odd function's sign is set by `negate` (a true fneg on any Triton)."""
    near, over, odd, (small, large) = _BESSEL[fn]
    if gpu:
        small, large = _BESSEL_FLOAT_SERIES.get(fn, (small, large))
        exp, w = "libdevice.exp({t}x)", "tl.div_rn(32.0, {t}x) - 2.0"
        far = f"tl.div_rn({over.replace('{exp}', exp)}, tl.sqrt_rn({{t}}x))"
    else:
        exp, w = "tl.exp({t}x)", "32.0 / {t}x - 2.0"
        far = f"{over.replace('{exp}', exp)} / tl.sqrt({{t}}x)"
    dtype = "tl.float32" if gpu else "tl.float64"
    steps = [("x", "tl.abs({0}.to(" + dtype + "))"), ("y", "{t}x / 2.0 - 2.0"), ("w", w),  # x / 2: exact on both
             *_chbevl("a", "y", small), *_chbevl("b", "w", large),
             ("m", f"tl.where({{t}}x <= 8.0, {near.replace('{exp}', exp)}, {far})")]
    value = "tl.where({0} < 0.0, " + negate("{t}m", gpu) + ", {t}m)" if odd else "{t}m"
    return Steps(tuple(steps), value + ".to(tl.float32)")


# Lanczos' series for Gamma(z + 1) (g = 7, 9 terms), its sum part
_LANCZOS = ("0.99999999999980993 + 676.5203681218851 / ({t}z + 1.0) - 1259.1392167224028 / ({t}z + 2.0)"
            " + 771.32342877765313 / ({t}z + 3.0) - 176.61502916214059 / ({t}z + 4.0)"
            " + 12.507343278686905 / ({t}z + 5.0) - 0.13857109526572012 / ({t}z + 6.0)"
            " + 9.9843695780195716e-6 / ({t}z + 7.0) + 1.5056327351493116e-7 / ({t}z + 8.0)")
MATH_LOG1P = ("tl.where(1.0 + {0} == 1.0, {0}, tl.where(1.0 + {0} > " + _F32_MAX + ", tl.log(1.0 + {0}), "
              "tl.log(1.0 + {0}) * ({0} / ((1.0 + {0}) - 1.0))))")
# Inverse trigonometric and hyperbolic functions composed from the interpreter's primitives
# (exp, log, sqrt): Cephes' reductions for asin/acos/atan, glibc's (s_asinhf.c, e_acoshf.c,
# e_atanhf.c, e_sinhf.c, e_coshf.c) for the hyperbolic ones, each branch chosen by tl.where.
_FLOAT32_INTERPRETER_FUNCTIONS: MathTable = {
    "asin": Steps((("a", "tl.abs({0})"), ("big", "{t}a > 0.5"),
                   ("z", "tl.where({t}big, 0.5 * (1.0 - {t}a), {t}a * {t}a)"),  # |x| > 1: sqrt(z < 0) is NaN
                   ("s", "tl.where({t}big, tl.sqrt({t}z), {t}a)"),
                   ("p", _ASIN_POLY.replace("{s}", "{t}s")),
                   ("m", "tl.where({t}big, " + _PI_2 + " - 2.0 * {t}p, {t}p)")), _with_sign("{t}m")),
    "acos": Steps((("lo", "{0} < -0.5"), ("hi", "{0} > 0.5"),
                   ("s", "tl.where({t}lo, tl.sqrt(0.5 * (1.0 + {0})), tl.where({t}hi, tl.sqrt(0.5 * (1.0 - {0})), {0}))"),
                   ("z", "{t}s * {t}s"), ("p", _ASIN_POLY.replace("{s}", "{t}s"))),
                  "tl.where({t}lo, " + _PI + " - 2.0 * {t}p, tl.where({t}hi, 2.0 * {t}p, " + _PI_2 + " - {t}p))"),
    "atan": Steps((("a", "tl.abs({0})"), ("big", "{t}a > 2.414213562373095"), ("mid", "{t}a > 0.41421356237309503"),
                   ("r", "tl.where({t}big, -1.0 / {t}a, tl.where({t}mid, ({t}a - 1.0) / ({t}a + 1.0), {t}a))"),
                   ("z", "{t}r * {t}r"),
                   ("p", _ATAN_RATIONAL),  # the constants added to a tensor: in float64 (below), a double
                   ("m", "tl.where({t}big, " + _PI_2 + " + {t}p, tl.where({t}mid, " + _PI_4 + " + {t}p, {t}p))")),
                  _with_sign("{t}m")),
    # atan2(y={0}, x={1}): atan of the smaller |.| over the larger (1 for two infinities,
    # 0 for two zeros), then the octant; C's signed zeros and infinities, NaN from either
    "atan2": Steps((("ay", "tl.abs({0})"), ("ax", "tl.abs({1})"), ("swap", "{t}ay > {t}ax"),
                    ("q", "tl.where(({t}ay == float('inf')) & ({t}ax == float('inf')), 1.0, tl.where({t}swap, {t}ax / {t}ay, "
                          "tl.where({t}ax == 0.0, 0.0, {t}ay / {t}ax)))"),
                    ("mid", "{t}q > 0.41421356237309503"), ("r", "tl.where({t}mid, ({t}q - 1.0) / ({t}q + 1.0), {t}q)"),
                    ("z", "{t}r * {t}r"), ("p", _ATAN_RATIONAL), ("a", "tl.where({t}mid, " + _PI_4 + " + {t}p, {t}p)"),
                    ("b", "tl.where({t}swap, " + _PI_2 + " - {t}a, {t}a)"),
                    ("c", "tl.where(" + _SIGNBIT.replace("{0}", "{1}") + ", " + _PI + " - {t}b, {t}b)")),
                   "tl.where(({0} != {0}) | ({1} != {1}), {0} + {1}, " + _with_sign("{t}c") + ")"),
    "asinh": Steps((("a", "tl.abs({0})"), ("s", "{t}a * {t}a"),
                    ("u", "{t}a + {t}s / (1.0 + tl.sqrt(1.0 + {t}s))"),
                    ("m", "tl.where({t}a > " + _BEYOND_LOG + ", tl.log({t}a) + " + _LN2 + ", tl.where({t}a > 2.0, "
                          "tl.log(2.0 * {t}a + 1.0 / (tl.sqrt({t}s + 1.0) + {t}a)), " + _log1p_of("{t}u") + "))")),
                   _with_sign("{t}m")),
    "acosh": Steps((("d", "{0} - 1.0"), ("u", "{t}d + tl.sqrt(2.0 * {t}d + {t}d * {t}d)")),
                   "tl.where({0} < 1.0, float('nan'), tl.where({0} > " + _BEYOND_LOG + ", tl.log({0}) + " + _LN2
                   + ", tl.where({0} > 2.0, tl.log(2.0 * {0} - 1.0 / ({0} + tl.sqrt({0} * {0} - 1.0))), "
                   + _log1p_of("{t}u") + ")))"),
    "atanh": Steps((("a", "tl.abs({0})"), ("d", "1.0 - {t}a"),  # |x| = 1: a / 0 is inf; |x| > 1: log1p(< -1) is NaN
                    ("u", "tl.where({t}a < 0.5, 2.0 * {t}a + 2.0 * {t}a * {t}a / {t}d, 2.0 * {t}a / {t}d)"),
                    ("m", "0.5 * (" + _log1p_of("{t}u") + ")")), _with_sign("{t}m")),
    "sinh": Steps((("a", "tl.abs({0})"), ("e", "tl.exp({t}a)"),
                   ("t", "tl.where({t}e == 1.0, {t}a, tl.where({t}e > " + _F32_MAX + ", {t}e, "
                         "({t}e - 1.0) * ({t}a / tl.log({t}e))))"),  # expm1(a), as MATH's
                   ("w", "tl.exp(0.5 * {t}a)"),
                   ("m", "tl.where({t}a < 1.0, 0.5 * (2.0 * {t}t - {t}t * {t}t / ({t}t + 1.0)), tl.where({t}a < 22.0, "
                         "0.5 * ({t}t + {t}t / ({t}t + 1.0)), 0.5 * {t}w * {t}w))")), _with_sign("{t}m")),
    "cosh": Steps((("a", "tl.abs({0})"), ("e", "tl.exp({t}a)"), ("w", "tl.exp(0.5 * {t}a)")),
                  "tl.where({t}a < 88.0, 0.5 * {t}e + 0.5 / {t}e, 0.5 * {t}w * {t}w)"),  # 0.5 * w * w: no early overflow
    # erfc: 1 - erf(|x|) (the interpreter's erf is C's, in float64) below 3.9, where it
    # cancels to 3e-9 of the result; beyond, exp(-x*x) / (sqrt(pi) * K) with K Laplace's
    # continued fraction x + (1/2) / (x + 1 / (x + (3/2) / ...)), 12 terms (1e-11 relative at
    # 3.9; x*x of a float32 x is exact in float64); erfc(-x) = 2 - erfc(x)
    "erfc": Steps((("d", "tl.cast({0}, tl.float64)"), ("a", "tl.abs({t}d)"),
                   ("k", _laplace_fraction("{t}a", 12)),
                   ("m", "tl.where({t}a < 3.9, 1.0 - tl.erf({t}a), tl.where({t}a == float('inf'), 0.0, "
                         "tl.exp(-{t}a * {t}a) / (1.7724538509055159 * {t}k)))")),
                  "tl.cast(tl.where({t}d < 0.0, 2.0 - {t}m, {t}m), {dt})"),
    # erfinv as eager's cpu kernel: calc_erfinv (ATen/native/Math.h) in float64, rounded once
    # (within 0.5 ulps): a rational first guess (|y| <= 0.7, else in sqrt(-log((1 - |y|) /
    # 2))), then two Newton steps on erf(x) - y
    "erfinv": Steps((("y", "{0}.to(tl.float64)"), ("a", "tl.abs({t}y)"), ("z", "{t}y * {t}y"),
                     ("cn", "((-0.140543331 * {t}z + 0.914624893) * {t}z - 1.645349621) * {t}z + 0.886226899"),
                     ("cd", "(((0.012229801 * {t}z - 0.329097515) * {t}z + 1.442710462) * {t}z - 2.118377725) * {t}z + 1.0"),
                     ("w", "tl.sqrt(-tl.log((1.0 - {t}a) / 2.0))"),
                     ("tn", "((1.641345311 * {t}w + 3.429567803) * {t}w - 1.624906493) * {t}w - 1.970840454"),
                     ("td", "(1.6370678 * {t}w + 3.5438892) * {t}w + 1.0"),
                     ("x0", "tl.where({t}a <= 0.7, {t}y * {t}cn / {t}cd, " + _with_sign("{t}tn") + " / {t}td)"),
                     ("x1", "{t}x0 - (tl.erf({t}x0) - {t}y) / (1.1283791670955126 * tl.exp(-{t}x0 * {t}x0))"),
                     ("x2", "{t}x1 - (tl.erf({t}x1) - {t}y) / (1.1283791670955126 * tl.exp(-{t}x1 * {t}x1))")),
                    "tl.where({t}a > 1.0, float('nan'), tl.where({t}a == 1.0, " + _with_sign("float('inf')")
                    + ", {t}x2)).to(tl.float32)"),
    "digamma": _digamma(gpu=False),
    "trigamma": _trigamma(gpu=False),
    **{fn: _bessel(fn) for fn in _BESSEL},  # i0, i0e, i1, i1e: eager's Cephes series in float64
    # lgamma in float64, rounded once: Lanczos' series (g = 7, 9 terms: 1e-15 relative) at
    # max(x, 1 - x), reflected for x < 0.5 through log(pi / |sin(pi r)|), r = x - round(x)
    # (exact); +inf at the poles (0, negative integers) and at ±inf, as C's lgamma; 0 at 1 and 2
    "lgamma": Steps((("x", "{0}.to(tl.float64)"), ("refl", "{t}x < 0.5"),
                     ("z", "tl.where({t}refl, 1.0 - {t}x, {t}x) - 1.0"),
                     ("a", _LANCZOS),
                     ("w", "{t}z + 7.5"),
                     ("lg", "0.9189385332046727 + ({t}z + 0.5) * tl.log({t}w) - {t}w + tl.log({t}a)"),
                     ("r", "{t}x - tl.floor({t}x + 0.5)"),
                     ("m", "tl.where({t}refl, tl.log(" + _PI + " / tl.abs(tl.sin(" + _PI + " * {t}r))) - {t}lg, {t}lg)")),
                    "tl.where((tl.abs({0}) == float('inf')) | ({t}refl & ({t}r == 0.0)), float('inf'), "
                    "tl.where(({0} == 1.0) | ({0} == 2.0), 0.0, {t}m)).to(tl.float32)"),  # exact zeros, as C's
    # C's nextafter from the fp32 bits: NaN from either, y where x == y (so -0.0 toward 0.0 is
    # 0.0), the smallest subnormal with y's sign from a zero, else one step of x's bits
    # toward y (up in magnitude where y is beyond x on x's side of 0; inf from the largest)
    "nextafter": Steps((("bits", "{0}.to(tl.int32, bitcast=True)"),
                        ("step", "tl.where(({0} < {1}) == ({0} > 0.0), {t}bits + 1, {t}bits - 1).to(tl.float32, bitcast=True)"),
                        ("tiny", "(({1}.to(tl.int32, bitcast=True) & -2147483648) | 1).to(tl.float32, bitcast=True)")),
                       "tl.where(({0} != {0}) | ({1} != {1}), {0} + {1}, tl.where({0} == {1}, {1}, "
                       "tl.where({0} == 0.0, {t}tiny, {t}step)))"),
    # C's hypot: inf if either is infinite (a NaN beside it too), else NaN from either
    "hypot": Steps((("ax", "tl.abs({0})"), ("ay", "tl.abs({1})"), ("mx", "tl.where({t}ax > {t}ay, {t}ax, {t}ay)"),
                    ("r", "tl.where({t}ax > {t}ay, {t}ay, {t}ax) / {t}mx")),
                   "tl.where(({t}ax == float('inf')) | ({t}ay == float('inf')), float('inf'), tl.where(({t}ax != {t}ax) "
                   "| ({t}ay != {t}ay), {t}ax + {t}ay, tl.where({t}mx == 0.0, 0.0, {t}mx * tl.sqrt(1.0 + {t}r * {t}r))))"),
}
# the compositions above written as float32 ones (asin to hypot), evaluated in float64 and
# rounded once; the rest compute in float64 themselves
INTERPRETER_FUNCTIONS: MathTable = {
    name: _steps_rounded_once(entry) if name in ("asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh", "sinh",
                                                 "cosh", "hypot") else entry
    for name, entry in _FLOAT32_INTERPRETER_FUNCTIONS.items()}


# fp32 {0} rounded to the nearest bfloat16, to nearest even, still fp32 (its low 16 bits 0,
# so a truncating cast to bfloat16 is then exact). A NaN gets its quiet bit instead, as a
# hardware conversion sets it: rounding its bits would carry a payload held in the low 16
# bits into inf (0x7F800001) or past the sign bit into -0.0 (0x7FFFFFFF)
BF16_BY_HAND = ("tl.where({0} != {0}, ({0}.to(tl.uint32, bitcast=True) | 0x00400000).to(tl.float32, bitcast=True), "
                "(({0}.to(tl.uint32, bitcast=True) + 0x7FFF + (({0}.to(tl.uint32, bitcast=True) >> 16) & 1)) "
                "& 0xFFFF0000).to(tl.float32, bitcast=True))")


# Kahan's tricks: expm1 and log1p accurate near 0 without libdevice
_EXPM1 = ("tl.where(tl.exp({0}) == 1.0, {0}, tl.where(tl.exp({0}) - 1.0 == -1.0, -1.0, "
          "tl.where(tl.exp({0}) > " + _F32_MAX + ", tl.exp({0}), (tl.exp({0}) - 1.0) * ({0} / tl.log(tl.exp({0}))))))")
# Exact-math forms of the functions the interpreter evaluates in float64 (_rounded_once),
# as float32 expressions: the gpu column's exp, exp2, log, log2, sin and cos (Triton's
# own), and logcumsumexp's fold, which widens its operands itself.
FLOAT32_FORMS = {"exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})", "log2": "tl.log2({0})",
                 "sin": "tl.sin({0})", "cos": "tl.cos({0})", "expm1": _EXPM1, "log1p": MATH_LOG1P,
                 "sigmoid": "1.0 / (1.0 + tl.exp(-{0}))", "silu": "{0} / (1.0 + tl.exp(-{0}))"}


# op -> Triton expression over operands {0}, {1}, ... ({dt}: the value's tl dtype). Both
# targets share an entry unless TARGET_MATH overrides it. The interpreter's libdevice is
# a stub and tl.maximum drops NaN, so NaN handling and accurate compositions are spelled out.
MATH: MathTable = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}",
    "maximum": "tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.maximum({0}, {1})))",
    "minimum": "tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.minimum({0}, {1})))",
    # a NaN bound gives NaN too, as in torch.clamp
    "clamp_min": "tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.maximum({0}, {1})))",
    "clamp_max": "tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.minimum({0}, {1})))",
    "neg": "-{0}", "fneg": negate("{0}", gpu=False), "abs": "tl.abs({0})",
    "sign": "({0} > 0).to({dt}) - ({0} < 0).to({dt})",
    "relu": "tl.where({0} < 0, 0, {0})",  # NaN < 0 is false: NaN propagates as in torch
    # exp, log and their compositions: in float64, rounded once (_rounded_once); the gpu
    # column has each one's float32 form (FLOAT32_FORMS)
    **{op: _rounded_once(form) for op, form in FLOAT32_FORMS.items()},
    "log10": _rounded_once("tl.log({0}) * 0.4342944819032518"),
    "sqrt": "tl.sqrt({0})", "rsqrt": "1.0 / tl.sqrt({0})",
    "tan": _rounded_once("tl.sin({0}) / tl.cos({0})"),
    "tanh": Steps(_tanh_steps("{0}"), "{t}tanh"),
    "erf": "tl.erf({0})", "reciprocal": "1.0 / {0}",
    "floor": "tl.floor({0})", "ceil": "tl.ceil({0})",
    "trunc": "tl.where({0} < 0.0, tl.ceil({0}), tl.floor({0}))",
    # half to even; a zero result takes x's sign (round(-0.4) is -0.0)
    "round": "tl.where(tl.abs({0}) >= 8388608.0, {0}, tl.where(tl.abs({0}) <= 0.5, {0} * 0.0, tl.where((" + _FLOOR_HALF
             + " - {0} == 0.5) & (" + _FLOOR_HALF + " * 0.5 != tl.floor(" + _FLOOR_HALF + " * 0.5)), " + _FLOOR_HALF
             + " - 1.0, " + _FLOOR_HALF + ")))",
    "isnan": "{0} != {0}", "isinf": "tl.abs({0}) > " + _F32_MAX,
    "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}", "gt": "{0} > {1}", "ge": "{0} >= {1}",
    "logical_and": "{0} & {1}", "logical_or": "{0} | {1}", "logical_xor": "{0} ^ {1}", "logical_not": "{0} == 0",
    "bitwise_and": "{0} & {1}", "bitwise_or": "{0} | {1}", "bitwise_xor": "{0} ^ {1}", "bitwise_not": "~{0}",
    "lshift": "{0} << {1}", "rshift": "{0} >> {1}",  # amounts in [0, bits) only (lowering/shifts.py)
    "where": "tl.where({0}, {1}, {2})", "fma": "tl.fma({0}, {1}, {2})",  # rounds once (the interpreter's too)
    "leaky_relu": "tl.where({0} > 0.0, {0}, {0} * {1})",
    "gelu": "0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476))",
    "gelu_tanh": Steps(_tanh_steps(_GELU_INNER), "0.5 * {0} * (1.0 + {t}tanh)"),
    "nan_to_num": "tl.where({0} != {0}, {1}, tl.where({0} > " + _F32_MAX + ", {2}, tl.where({0} < -" + _F32_MAX + ", {3}, {0})))",
    "div_trunc": "tl.where({0} / {1} < 0.0, tl.ceil({0} / {1}), tl.floor({0} / {1}))",
    # copysign(0, x) of an fp32 tensor, from its bits: compiled for cuda, a select between
    # the constants -0.0 and 0.0 came out +0.0 for every lane
    "signed_zero": "(({0}.to(tl.int32, bitcast=True) & -2147483648).to(tl.float32, bitcast=True))",
    # float % is C's fmod under the interpreter; compiled, it is a - trunc(a / b) * b, off
    # by b when a / b rounds up to an integer (1.0 % 0.1), so the gpu column uses libdevice
    "fmod": "{0} % {1}",
    "remainder": _REMAINDER.replace("{m}", "({0} % {1})"),
    "pow": _steps_rounded_once(Steps((), _POW)),
    # eager's: expm1(x * input_scale) * (alpha * scale), expm1's float32 rounded once
    "elu": Steps((("d", "tl.cast({0} * {3}, tl.float64)"), ("m", "tl.cast(" + _EXPM1.replace("{0}", "{t}d") + ", tl.float32)")),
                 "tl.where({0} > 0.0, {0} * {2}, {t}m * ({1} * {2}))"),
    # integers (by a divisor that is not 0, and not -1 where INT_MIN overflows: lowering/division.py): `%` truncates on
    # both targets (srem; the interpreter's numpy fmod)
    "fmod_int": "{0} % {1}", "remainder_int": _REMAINDER.replace("{m}", "({0} % {1})"),
    # and `//` truncates (sdiv; the interpreter's (a - fmod(a, b)) // b), floored as Python's
    "div_trunc_int": "{0} // {1}",
    "div_floor_int": Steps((("q", "{0} // {1}"), ("r", "{0} % {1}")),
                           "tl.where(({t}r != 0) & (({t}r < 0) != ({1} < 0)), {t}q - 1, {t}q)"),
    "square": "{0} * {0}", "identity": "{0}", "one": "tl.where({0} == {0}, 1.0, 1.0)",
    # NaN-ignoring max/min (C's fmax/fmin): NaN only where both are; of equal operands
    # (-0.0 and 0.0) the first, as eager's cpu kernels give (the gpu column: maxnum/minnum)
    "fmax": "tl.where({0} != {0}, {1}, tl.where({1} > {0}, {1}, {0}))",
    "fmin": "tl.where({0} != {0}, {1}, tl.where({1} < {0}, {1}, {0}))",
    # bits of fp32 operands (the lowering broadcasts a scalar): exact in every float dtype
    "copysign": "(({0}.to(tl.int32, bitcast=True) & 2147483647) | ({1}.to(tl.int32, bitcast=True) & -2147483648))"
                ".to(tl.float32, bitcast=True)",
    "signbit": _SIGNBIT,
    # a float32 value as a float16/bfloat16 tensor holds it (KernelBuilder.round_to), still
    # float32: to nearest even (the interpreter's fp32 -> bf16 cast truncates: by hand)
    "round_float16": "{0}.to(tl.float16).to(tl.float32)",
    "round_bfloat16": BF16_BY_HAND,
    # an int32 value as a uint8/int8/int16 tensor holds it (KernelBuilder.round_to), still int32
    "wrap_uint8": "{0} & 255", "wrap_int8": "({0} << 24) >> 24", "wrap_int16": "({0} << 16) >> 16",
    # the argument of a real number, as eager's angle_impl: NaN stays, pi below 0 (-0.0: 0)
    "angle": "tl.where({0} != {0}, {0}, tl.where({0} < 0.0, " + _PI + ", 0.0))",
    **INTERPRETER_FUNCTIONS,
}
# xpu/cuda: Triton's `/` and tl.sqrt compile to approximate instructions (div.full.f32,
# sqrt.approx.ftz.f32 on cuda) where eager is correctly rounded, so division and sqrt are
# the IEEE forms; libdevice (real there, a stub under the interpreter) where it is the
# accurate C function eager calls.
TARGET_MATH: dict[str, MathTable] = {
    "interpreter": {},
    "gpu": {
        "fneg": negate("{0}", gpu=True),  # a float's: Triton 3.6's `-x` keeps +0.0 (negate)
        "truediv": "tl.div_rn({0}, {1})", "reciprocal": "tl.div_rn(1.0, {0})",
        "div_trunc": "libdevice.trunc(tl.div_rn({0}, {1}))",
        "sqrt": "tl.sqrt_rn({0})", "rsqrt": "tl.rsqrt({0})",
        "sigmoid": "tl.div_rn(1.0, 1.0 + tl.exp(-{0}))", "silu": "tl.div_rn({0}, 1.0 + tl.exp(-{0}))",
        **{op: FLOAT32_FORMS[op] for op in ("exp", "exp2", "log", "log2", "sin", "cos")},
        "tanh": "libdevice.tanh({0})", "expm1": "libdevice.expm1({0})", "log1p": "libdevice.log1p({0})",
        "elu": "tl.where({0} > 0.0, {0} * {2}, libdevice.expm1({0} * {3}) * ({1} * {2}))",
        "tan": "libdevice.tan({0})", "trunc": "libdevice.trunc({0})", "round": "libdevice.rint({0})",
        "pow": "libdevice.pow({0}, {1})", "fmod": "libdevice.fmod({0}, {1})",
        "remainder": _REMAINDER.replace("{m}", "libdevice.fmod({0}, {1})"),
        "gelu_tanh": _gelu_tanh("libdevice.tanh({0})"),
        # the C functions eager's gpu kernels call (asinf, atan2f, ...)
        **{op: f"libdevice.{op}({{0}})"
           for op in ("log10", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "erfc", "erfinv",
                      "lgamma")},
        "atan2": "libdevice.atan2({0}, {1})", "hypot": "libdevice.hypot({0}, {1})",
        "digamma": _digamma(gpu=True),  # eager's cuda kernel: float32, its reflection in double
        "trigamma": _trigamma(gpu=True),
        **{fn: _bessel(fn, gpu=True) for fn in _BESSEL},  # eager's cuda kernels' float32 series
        # maxnum/minnum (max.f32 on cuda), as eager's fmaxf/fminf: of -0.0 and 0.0 fmax gives 0.0
        "fmax": "tl.maximum({0}, {1})", "fmin": "tl.minimum({0}, {1})",
        "round_bfloat16": "{0}.to(tl.bfloat16).to(tl.float32)",  # cvt.rn
    },
}
