"""ir.Kernel -> Triton source text (deterministic).

Every size symbol the kernel uses is a runtime int argument; XBLOCK is a constexpr the
wrapper picks from the runtime numel. Values are computed in fp32. The math table
(codegen/mathfns.py) has one column per target: "gpu" (xpu/cuda, real libdevice) and
"interpreter" (cpu).
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable

import sympy
import torch

from ..lowering import ir
from .emitter import Emitter
from .helpers import HELPER_DECORATOR, HELPERS
from .mathfns import BF16_BY_HAND, INT_MATH, MATH, TARGET_MATH, MathTable
from .printer import pexpr, pexpr_int64


# the imports a kernel source of each target starts with
TARGET_IMPORTS = {
    "interpreter": ("import triton.language as tl",),
    "gpu": ("import triton.language as tl", "from triton.language.extra import libdevice"),
}
TL_DTYPE = {
    torch.float32: "tl.float32", torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16",
    torch.int32: "tl.int32", torch.int64: "tl.int64", torch.bool: "tl.int1",
    torch.uint8: "tl.uint8", torch.int8: "tl.int8", torch.int16: "tl.int16",
}
# the type Triton's JIT gives a tensor of each dtype in a kernel signature ("*fp32", ...)
SIGNATURE_DTYPE = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
                   torch.int32: "i32", torch.int64: "i64", torch.bool: "i1", torch.uint8: "u8", torch.int8: "i8",
                   torch.int16: "i16"}


def target_for(device_type: str) -> str:
    return "interpreter" if device_type == "cpu" else "gpu"


def math_table(target: str) -> MathTable:
    return {**MATH, **TARGET_MATH[target]}


def kernel_sources(kernel: ir.Kernel, target: str) -> dict[str, str]:
    """{function name: source}: one pointwise kernel, or a reduction's two strategies."""
    if kernel.is_reduction:
        from .reduction import reduction_sources

        return reduction_sources(kernel, target)
    return {kernel.function: kernel_source(kernel, target)}


def kernel_signature(kernel: ir.Kernel) -> dict[str, str]:
    """{argument: Triton signature type}, in the order the wrapper passes them: buffers,
    xnumel (and rnumel, or a tile's ynumel), size symbols, then the constexprs: block sizes
    and INDEX, the index dtype (tl.int32, or tl.int64 when a launch indexes past 2**31
    elements)."""
    numels, blocks = ["xnumel"], ["XBLOCK"]
    if kernel.is_reduction:
        numels, blocks = ["xnumel", "rnumel"], ["XBLOCK", "RBLOCK"]
    elif kernel.tile is not None:
        numels, blocks = ["xnumel", "ynumel"], ["XBLOCK", "YBLOCK"]
    sig = {b.name: "fp32" if b.by_value else "*" + SIGNATURE_DTYPE[b.dtype] for b in (*kernel.inputs, *kernel.outputs)}
    sig.update({name: "i32" for name in numels})
    sig.update({str(s): "i32" if s.is_integer else "fp32" for s in kernel.size_symbols})  # fp32: a SymFloat operand
    sig.update({name: "constexpr" for name in [*blocks, "INDEX"]})
    return sig


def parameters(kernel: ir.Kernel) -> str:
    return ", ".join(f"{name}: tl.constexpr" if kind == "constexpr" else name
                     for name, kind in kernel_signature(kernel).items())


def kernel_source(kernel: ir.Kernel, target: str) -> str:
    table = math_table(target)
    out = Emitter()
    out.line(f"# xpu_lite {kernel.name}: fused {', '.join(kernel.nodes)} (target: {target})")
    out.lines(imports(kernel, target))
    out.line()
    out.line()
    out.lines(helper_definitions(kernel, target))
    out.line(f"def {kernel.function}({parameters(kernel)}):")
    with out.indent():
        if kernel.tile is None:
            out.line("xindex = tl.program_id(0).to(INDEX) * XBLOCK + tl.arange(0, XBLOCK)")
            out.line("xmask = xindex < xnumel")
        else:  # one YBLOCK x XBLOCK tile per program, x tiles fastest, then y tiles, then z
            out.line("pid = tl.program_id(0).to(INDEX)")
            out.line("xtiles = (xnumel + XBLOCK - 1) // XBLOCK")
            out.line("ytiles = (ynumel + YBLOCK - 1) // YBLOCK")
            out.line("xindex = pid % xtiles * XBLOCK + tl.arange(0, XBLOCK)[None, :].to(INDEX)")
            out.line("yindex = pid // xtiles % ytiles * YBLOCK + tl.arange(0, YBLOCK)[:, None].to(INDEX)")
            out.line("zindex = pid // (xtiles * ytiles)", f"dims before {kernel.tile.dim}: one position per program")
            out.line("xmask = (yindex < ynumel) & (xindex < xnumel)")
        used = used_values(kernel)
        lanes = (ir.XINDEX,) if kernel.tile is None else (ir.YINDEX, ir.XINDEX)
        by_value, by_bits = by_value_buffers(kernel), interpreter_bf16(kernel, target)
        for i, value in enumerate(kernel.values):
            if i in used:
                if isinstance(value, (ir.Load, ir.Check)) and value.bounds:
                    out.lines(bounds_check(kernel, f"tmp{i}", value.bounds, value.message, _live(value)))
                prelude, text = _value(value, table, lanes, i, by_value, by_bits)
                out.lines(prelude)
                out.line(f"tmp{i} = {text}", comment(value, kernel))
        for k, store in enumerate(kernel.stores):
            buf = next(b for b in kernel.outputs if b.name == store.buffer)
            # a 0-dim result (a constant) is written once, by lane 0 (a tiled kernel stores none)
            mask = "xmask" if ir.XINDEX in store.index.free_symbols or store.bounds else "xmask & (xindex == 0)"
            if store.bounds:  # a scatter: lanes whose position is out of range store nothing
                out.lines(bounds_check(kernel, f"store{k}", store.bounds, store.message, mask))
                mask += f" & store{k}_ok"
            value = stored_value(f"tmp{store.value}", buf.dtype, target)
            pointer = f"{store.buffer} + ({lane_index(store.index, lanes)})"
            if store.accumulate in ("max", "min") and buf.dtype is torch.float32:
                out.line(f"store{k}_value = {value}")
                out.line(f"store{k}_value = {sticky_nan(f'store{k}_value', store.accumulate)}",
                         f"a NaN's sign bit {'cleared' if store.accumulate == 'max' else 'set'}: the atomic keeps it")
                value = f"store{k}_value"
            if store.accumulate:  # sem="relaxed": only the result matters, not the order of the atomics
                out.line(f"tl.atomic_{store.accumulate}({pointer}, {value}, mask={mask}, sem='relaxed')", kernel.node_of(store.buffer))
            else:
                out.line(f"tl.store({pointer}, {value}, mask={mask})", kernel.node_of(store.buffer))
    return out.text()


def _helpers(kernel: ir.Kernel) -> list[str]:
    return sorted({v.op for v in kernel.values if isinstance(v, ir.Compute)} & HELPERS.keys())


def imports(kernel: ir.Kernel, target: str, first: tuple[str, ...] = ()) -> list[str]:
    """The source's imports: `first` (a reduction's `import triton`), the target's, and the
    one its helpers' decorator needs, each once."""
    helper = (HELPER_DECORATOR[target][0],) if _helpers(kernel) else ()
    return list(dict.fromkeys((*first, *TARGET_IMPORTS[target], *helper)))


def helper_definitions(kernel: ir.Kernel, target: str) -> list[str]:
    """The source lines of the helpers (helpers.HELPERS) the kernel's math calls, each once
    in a fixed order with the target's decorator and two blank lines after it; none for a
    kernel that calls none."""
    decorator = HELPER_DECORATOR[target][1]
    return [line for op in _helpers(kernel) for line in (decorator, *HELPERS[op], "", "")]


def used_values(kernel: ir.Kernel) -> set[int]:
    """Values some store depends on (a full_like's input, say, is never read), and every
    indirect load and Check: its bounds assert runs even where nothing reads the value, as
    eager raises on an index out of range whatever comes of the result (`zeros_like(x[idx])`)."""
    used: set[int] = set()
    stack = [store.value for store in kernel.stores] + [j for store in kernel.stores for j, _ in store.bounds]
    stack += [i for i, value in enumerate(kernel.values) if isinstance(value, (ir.Load, ir.Check)) and value.bounds]
    while stack:
        i = stack.pop()
        if i not in used:
            used.add(i)
            stack.extend(ir.operands(kernel.values[i]))
    return used


def bounds_check(kernel: ir.Kernel, name: str, bounds: tuple[tuple[int, sympy.Expr], ...], message: str,
                 live: str, names: Callable[[int], str] = "tmp{}".format) -> list[str]:
    """An indirect load's or store's check: `<name>_ok` (every position in range) and an
    assert over the `live` lanes. Triton compiles the assert only with its debug option,
    which the wrapper passes to a kernel that checks bounds (the interpreter: runtime.py).
    `names`: the text of value j (a reduction's loop names a value per pass)."""
    ok = " & ".join(f"({names(j)} >= 0) & ({names(j)} < {pexpr(size)})" for j, size in bounds)
    message = f"{message} (xpu_lite {kernel.name})"
    return [f"{name}_ok = {ok}", f"tl.device_assert({name}_ok | (({live}) == 0), {message!r})"]


def _live(value: ir.Load | ir.Check) -> str:
    return "xmask" if getattr(value, "mask", None) is None else f"xmask & tmp{value.mask}"


def stored_value(value: str, dtype: torch.dtype, target: str) -> str:
    if dtype is torch.bfloat16 and target == "interpreter":
        # the interpreter truncates fp32 -> bf16 and mangles subnormals (interpreter_bf16):
        # round to nearest even by hand, then store the high 16 bits
        return f"({BF16_BY_HAND.format(value)}.to(tl.uint32, bitcast=True) >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)"
    return f"{value}.to({TL_DTYPE[dtype]})"


def interpreter_bf16(kernel: ir.Kernel, target: str) -> frozenset[str]:
    """The bfloat16 inputs the interpreter loads by their bits: its bf16 -> fp32 cast
    mangles subnormals (1e-39 read as 5.9e-39; a compiled kernel's cast is a shift)."""
    return frozenset(b.name for b in kernel.inputs if b.dtype is torch.bfloat16) if target == "interpreter" else frozenset()


def load_text(value: ir.Load, pointer: str, mask: str, by_bits: frozenset[str]) -> str:
    """A load, converted to the value's compute dtype (by its bits: interpreter_bf16)."""
    text = f"tl.load({pointer}, mask={mask}, other=0)"
    if value.buffer in by_bits:
        text = f"({text}.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)"
        return text if value.dtype is torch.float32 else f"{text}.to({TL_DTYPE[value.dtype]})"
    return f"{text}.to({TL_DTYPE[value.dtype]})"


def sticky_nan(value: str, combine: str) -> str:
    """tl.atomic_max/min of float32 are integer atomics on the bits (signed for values with
    the sign bit clear, unsigned for those with it set): a NaN with the sign bit clear is
    above every number for max, one with it set below every number for min, so it stays,
    as eager's NaN does (`isnan(src) ? src : max(self, src)`); with the other sign it would
    be passed over. The NaN's sign bit is set accordingly (payload kept)."""
    bits = f"{value}.to(tl.uint32, bitcast=True)"
    nan = f"({bits} & 0x7FFFFFFF)" if combine == "max" else f"({bits} | 0x80000000)"
    return f"tl.where({value} != {value}, {nan}.to(tl.float32, bitcast=True), {value})"


def lane_index(index: sympy.Expr, lanes: tuple[sympy.Symbol, ...]) -> str:
    """Text of a load or store offset with one pointer per lane: a lane axis (xindex,
    yindex) the offset does not vary along is added as `0 * lane` (a broadcast read)."""
    terms = [] if index == 0 else [pexpr(index)]
    terms += [f"0 * {lane}" for lane in lanes if lane not in index.free_symbols]
    return " + ".join(terms)


def _value(value: ir.Value, table: MathTable, lanes: tuple[sympy.Symbol, ...], i: int,
           by_value: frozenset[str], by_bits: frozenset[str]) -> tuple[list[str], str]:
    block = "[XBLOCK]" if len(lanes) == 1 else "[YBLOCK, XBLOCK]"
    if isinstance(value, ir.Load) and value.buffer in by_value:
        text = argument_block(value, block)  # 0 where a masked load reads nothing, as its `other`
        return [], text if value.mask is None else f"tl.where(tmp{value.mask}, {text}, 0)"
    if isinstance(value, ir.Load):
        index = lane_index(value.index, lanes)
        mask = _live(value) + (f" & tmp{i}_ok" if value.bounds else "")
        return [], load_text(value, f"{value.buffer} + ({index})", mask, by_bits)
    if isinstance(value, ir.Check):
        return [], f"tmp{i}_ok"  # bounds_check computed it
    return scalar_or_compute(value, f"tmp{i}", [f"tmp{a}" for a in getattr(value, "args", ())], table, block)


def by_value_buffers(kernel: ir.Kernel) -> frozenset[str]:
    return frozenset(b.name for b in kernel.inputs if b.by_value)


def argument_block(value: ir.Load, block: str) -> str:
    """A by-value input's one element (a float32 argument) as a block of lanes, where a
    load of a 0-dim tensor would have read it broadcast."""
    text = f"tl.full({block}, {value.buffer}, tl.float32)"
    return text if value.dtype is torch.float32 else f"{text}.to({TL_DTYPE[value.dtype]})"


def scalar_or_compute(value: ir.Value, name: str, args: list[str], table: MathTable,
                      block: str) -> tuple[list[str], str]:
    """(statements, text) of a Constant, SymValue or Compute value named `name`, its operands
    already named `args`: the statements (a Steps entry's, naming `<name>_*`) come first."""
    if isinstance(value, ir.Constant):
        return [], literal(value.value, value.dtype)
    if isinstance(value, ir.SymValue):
        return [], f"({pexpr_int64(value.expr) if value.dtype is torch.int64 else pexpr(value.expr)})"
    assert isinstance(value, ir.Compute), value
    dt = TL_DTYPE[value.dtype]
    if value.op == "to":
        return [], f"({args[0]} != 0)" if value.dtype is torch.bool else f"{args[0]}.to({dt})"
    if value.op == "broadcast":
        return [], f"tl.full({block}, {args[0]}, {dt})"
    if value.op == "bitwise_not" and value.dtype is torch.bool:
        return [], f"({args[0]} == 0)"
    return math_text(value.op, args, value.dtype, table, name)


def math_text(op: str, args: list[str], dtype: torch.dtype, table: MathTable, name: str) -> tuple[list[str], str]:
    """(statements, text) of the math table's `op` of `args` for a value of `dtype` named
    `name` (an integer's own form where INT_MATH has one; a Steps entry's statements name
    `<name>_*`)."""
    entry = INT_MATH[op] if op in INT_MATH and dtype in (torch.int32, torch.int64) else table[op]
    dt = TL_DTYPE[dtype]
    bits = torch.iinfo(dtype).bits - dtype.is_signed if dtype in (torch.int32, torch.int64) else 0
    fill = lambda text: text.format(*args, dt=dt, t=f"{name}_", bits=bits)  # noqa: E731
    if isinstance(entry, str):
        return [], "(" + fill(entry) + ")"
    return [f"{name}_{local} = {fill(expr)}" for local, expr in entry.steps], "(" + fill(entry.result) + ")"


def literal(value: float | int | bool, dtype: torch.dtype) -> str:
    """A constant's source. A float is its float32 value (1e39 is inf, as C converts it;
    Triton types a Python float beyond float32's range, or below its smallest normal, as
    float64: the kernel would compute in double), a float32 subnormal a float32 tensor. An
    int64 constant within int32's range is an int64 tensor: compiled Triton makes the
    assigned literal an int32 tensor, so `100 >> 63` between two constants shifted in int32
    (undefined: 100 on an H200) where the interpreter's Python ints hid it."""
    if dtype is torch.bool:
        return "True" if value else "False"
    if dtype.is_floating_point:
        value = _float32(float(value))
        if not math.isfinite(value):
            return f"float('{value}')"
        return repr(value) if value == 0 or abs(value) >= 2.0 ** -126 else f"tl.full([], {value!r}, tl.float32)"
    if dtype is torch.int64 and -2 ** 31 <= int(value) < 2 ** 31:
        return f"tl.full([], {int(value)}, tl.int64)"
    return repr(int(value))


def _float32(value: float) -> float:
    """`value` rounded to float32 (to nearest even; past its largest finite value, inf)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def comment(value: ir.Value, kernel: ir.Kernel) -> str:
    """The FX node a value line comes from: a computation's node, the node a load reads."""
    if isinstance(value, ir.Load):
        return kernel.node_of(value.buffer)
    return value.node if isinstance(value, ir.Compute) else ""

