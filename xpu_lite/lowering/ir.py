"""A small frozen IR for kernels, with sympy sizes and index expressions.

A pointwise Kernel walks a flat iteration space of `numel` elements (xindex), or, when
tiled, (zindex, yindex, xindex) tiles of it (see Tile). A reduction
Kernel (rnumel set) walks `numel` output rows (xindex) times `rnumel` reduced elements
(rindex): values whose index involves rindex are per element, Reduce values are per row,
and Scan values (a running sum or product along rindex) are per element.
Each Load reads a buffer at an index expression of xindex, rindex and the size symbols
(where a bool value says so, for ops that read inputs at positions of their own: cat, pad,
the windows of pools;
and at positions loaded from another tensor, an indirect load: embedding, gather; a Check
asserts such positions in range where nothing loads at them);
Compute, Reduce and Scan nodes form an SSA list; each Store writes one value to an output
buffer (a scatter's writes or adds it at positions loaded from another tensor). Built by
kernel_builder.py (groups from fusion.py; scatters: scatter.py), printed by codegen/,
checked by verify() at the stage boundary.
"""
from __future__ import annotations

import dataclasses

import sympy
import torch

from .._torch_compat import FLOOR_INDEX_FUNCS, KERNEL_INDEX_FUNCS

XINDEX = sympy.Symbol("xindex", integer=True, nonnegative=True)
RINDEX = sympy.Symbol("rindex", integer=True, nonnegative=True)
YINDEX = sympy.Symbol("yindex", integer=True, nonnegative=True)
ZINDEX = sympy.Symbol("zindex", integer=True, nonnegative=True)
INDEX_SYMBOLS = frozenset({XINDEX, RINDEX, YINDEX, ZINDEX})


class Ref(int):
    """A value index handed to a lowering rule, so that a Python int scalar operand is never
    mistaken for one."""


def convert_scalar(value: float | int | bool, dtype: torch.dtype) -> float | int | bool:
    """A Python number as a `dtype` constant: an int32 one wrapped, as eager converts the
    Python int operand of `x_i32 + 2**32 + 3` (a wrapped number) without a check."""
    if dtype is torch.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    return (int(value) + 2**31) % 2**32 - 2**31 if dtype is torch.int32 else int(value)


@dataclasses.dataclass(frozen=True)
class Buffer:
    name: str  # the kernel's parameter for the tensor (in_ptr0, out_ptr0), passed in order by the wrapper
    dtype: torch.dtype
    sizes: tuple[sympy.Expr, ...]
    strides: tuple[sympy.Expr, ...]
    # a 0-dim float tensor in host memory (a tensorified Python float such as an eps, a
    # user's torch.tensor(2.0)): the wrapper passes its value (`.item()`, no device copy,
    # no sync) and the kernel reads a float32 argument, exact for float32/float16/bfloat16
    by_value: bool = False
    node: str = ""  # the FX node whose tensor it is (the root of the views read): the source's comments

    def extent(self) -> sympy.Expr:
        """1 + the largest element offset the tensor addresses (views of it stay inside)."""
        return sympy.expand(1 + sum(((s - 1) * st for s, st in zip(self.sizes, self.strides)), sympy.Integer(0)))


COMPUTE_DTYPES = (torch.float32, torch.int32, torch.int64, torch.bool)
# uint8/int8/int16 values are computed in int32, which holds every value exactly, and
# wrapped to their dtype where read (KernelBuilder.round_to: eager's arithmetic wraps at
# every op) and by the store's truncating cast
WRAPS = {torch.uint8: "wrap_uint8", torch.int8: "wrap_int8", torch.int16: "wrap_int16"}
SMALL_INTS = tuple(WRAPS)
STORAGE_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool) + SMALL_INTS


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp16/bf16 are computed in fp32 (and rounded once, on store, or where a value leaves
    its dtype: ROUNDINGS); uint8/int8/int16 values in int32 (wrapped: WRAPS)."""
    return torch.float32 if dtype in ROUNDINGS else torch.int32 if dtype in WRAPS else dtype


# the math-table op rounding a float32 value to each dtype computed in float32
# (KernelBuilder.round_to)
ROUNDINGS = {torch.float16: "round_float16", torch.bfloat16: "round_bfloat16"}
HELD_AS = {**ROUNDINGS, **WRAPS}  # the op giving a value as a tensor of each dtype holds it


def value_symbol(i: int) -> sympy.Symbol:
    """Value i in an index expression (an indirect load's position): printed as its name."""
    return sympy.Symbol(f"tmp{i}", integer=True)


@dataclasses.dataclass(frozen=True)
class Load:
    buffer: str
    index: sympy.Expr
    dtype: torch.dtype  # compute dtype of the loaded value
    mask: int | None = None  # a bool value: lanes where it is false load nothing (and read 0)
    # an indirect load: (value, size) for each integer value whose symbol (value_symbol) the
    # index holds; the kernel asserts 0 <= value < size in every live lane, as eager raises
    # on an index out of range, and loads nothing where it is not
    bounds: tuple[tuple[int, sympy.Expr], ...] = ()
    message: str = ""  # what an indirect load's assert says (the node, the dim)


@dataclasses.dataclass(frozen=True)
class Check:
    """An indirect load's assert without the load: the kernel asserts 0 <= value < size for
    each (value, size) of `bounds` in every live lane, as eager raises on an index out of
    range; the value is whether they hold (a bool). A scatter computed pointwise compares
    its positions with the element's coordinates rather than storing at them (scatter.py)."""

    bounds: tuple[tuple[int, sympy.Expr], ...]
    message: str
    dtype: torch.dtype = torch.bool


@dataclasses.dataclass(frozen=True)
class Constant:
    value: float | int | bool
    dtype: torch.dtype


@dataclasses.dataclass(frozen=True)
class SymValue:
    """A SymInt operand: its expression over the size symbols, which are kernel arguments;
    also an element's coordinate (an expression of xindex, and in a reduction of rindex)."""

    expr: sympy.Expr
    dtype: torch.dtype


@dataclasses.dataclass(frozen=True)
class Compute:
    op: str  # a key of codegen/mathfns.py's math table
    args: tuple[int, ...]  # indices of earlier values in Kernel.values
    dtype: torch.dtype
    node: str  # the FX node it comes from (for errors and explain)


REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")


@dataclasses.dataclass(frozen=True)
class Reduce:
    """One value per row: `op` over the rindex extent of value `arg` (masked lanes excluded).
    max/min propagate NaN; argmax/argmin give the first index of the max/min (NaN counts as
    the max, as in torch); any/all read `arg` as bool."""

    op: str  # one of REDUCTIONS
    arg: int
    dtype: torch.dtype  # accumulator and result dtype (int64 for arg* ops)
    node: str


SCANS = ("sum", "prod", "max", "min", "argmax", "argmin", "logaddexp")
FOLDS = ("max", "min", "argmax", "argmin", "logaddexp")  # scans an ordered kernel folds one element at a time


@dataclasses.dataclass(frozen=True)
class Scan:
    """One value per element: `op` over the elements of value `arg` from the row's start up
    to this one (inclusive, in rindex order; cumsum, cumprod). The FOLDS are cummax/cummin's,
    as eager's loop computes them, in ordered kernels only: the running max/min, which an
    element at least as large/small, or a NaN, replaces (a NaN stays until the next NaN);
    and arg*, the rindex of the element it holds (the latest of equal ones); and logaddexp,
    logcumsumexp's running log(exp(carry) + exp(x)) from -inf."""

    op: str  # one of SCANS
    arg: int
    dtype: torch.dtype  # accumulator and result dtype
    node: str
    # the carry under the interpreter of logaddexp and of a float sum/prod: eager's cpu
    # acc_type for the dtype (double for float32, float for float16/bfloat16); on a gpu
    # logaddexp carries a double, a sum/prod its dtype
    carry: torch.dtype | None = None


@dataclasses.dataclass(frozen=True)
class Store:
    buffer: str
    index: sympy.Expr
    value: int  # index into Kernel.values
    # an indirect store (a scatter): as Load.bounds, the positions come from integer values,
    # asserted in range; lanes out of range store nothing
    bounds: tuple[tuple[int, sympy.Expr], ...] = ()
    message: str = ""
    # "add", "max" or "min": combine the value with the element (an atomic add, maximum or
    # minimum) instead of writing it
    accumulate: str = ""


# what a kernel with a combining store does at its positions (a decision's note)
COMBINES = {"add": "adds", "max": "takes maxima", "min": "takes minima"}


Value = Load | Check | Constant | SymValue | Compute | Reduce | Scan


def operands(value: Value) -> tuple[int, ...]:
    """The earlier values `value` reads: a Compute's arguments, a Reduce's or Scan's row, a
    Load's mask and the positions it loads at, the positions a Check asserts."""
    if isinstance(value, Compute):
        return value.args
    if isinstance(value, (Reduce, Scan)):
        return (value.arg,)
    if isinstance(value, Load):
        return ((value.mask,) if value.mask is not None else ()) + tuple(j for j, _ in value.bounds)
    if isinstance(value, Check):
        return tuple(j for j, _ in value.bounds)
    return ()


@dataclasses.dataclass(frozen=True)
class Tile:
    """A pointwise kernel over a space whose reads are contiguous along a dim `dim` other
    than the last (a transpose): each program covers a YBLOCK x XBLOCK tile, yindex walking
    that dim, xindex the dims after it (flattened), and zindex (one per program) the dims
    before it, so loads and stores can both be contiguous (Triton transposes the tile
    through shared memory)."""

    dim: int
    znumel: sympy.Expr
    ynumel: sympy.Expr
    xnumel: sympy.Expr


@dataclasses.dataclass(frozen=True)
class Kernel:
    name: str
    numel: sympy.Expr
    inputs: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    values: tuple[Value, ...]
    stores: tuple[Store, ...]
    nodes: tuple[str, ...]  # FX nodes fused into this kernel
    rnumel: sympy.Expr | None = None  # reduced extent per row; None for a pointwise kernel
    tile: Tile | None = None  # pointwise kernels only: walked in 2D tiles
    lifted: tuple[tuple[sympy.Symbol, sympy.Expr], ...] = ()  # arguments the wrapper computes (lift_sizes)
    # reductions only: walk each row one element at a time, in rindex order (the looped
    # source with RBLOCK 1), so a sum adds its elements in the order eager's loop does
    ordered: bool = False
    title: str = ""  # the ops it computes, "mul_add_gelu" (fusion.titled): in its function's name

    @property
    def function(self) -> str:
        """The Triton function's name, as a GPU profile shows it: the kernel's name (explain's
        label) and the ops it computes, `kernel_0_mul_add_gelu` (a reduction's strategies
        add `_persistent` and `_looped`)."""
        return f"{self.name}_{self.title}" if self.title else self.name

    def node_of(self, buffer: str) -> str:
        """The FX node whose tensor the parameter `buffer` is (a load's, a store's comment)."""
        return next((b.node for b in (*self.inputs, *self.outputs) if b.name == buffer), "")

    @property
    def is_reduction(self) -> bool:
        return self.rnumel is not None

    @property
    def checks_bounds(self) -> bool:
        """Whether the kernel asserts (an indirect load, a Check): compiled with Triton's debug on."""
        return any(isinstance(v, (Load, Check)) and v.bounds for v in self.values) or any(s.bounds for s in self.stores)

    def value_symbols(self) -> frozenset[sympy.Symbol]:
        bounded = [*(v for v in self.values if isinstance(v, Load)), *self.stores]
        return frozenset(value_symbol(i) for v in bounded for i, _ in v.bounds)

    @property
    def size_symbols(self) -> tuple[sympy.Symbol, ...]:
        exprs = [self.numel, *self.kernel_exprs()]
        if self.rnumel is not None:
            exprs.append(self.rnumel)
        if self.tile is not None:
            exprs += [self.tile.ynumel, self.tile.xnumel]
        free = set().union(*(e.free_symbols for e in exprs)) - INDEX_SYMBOLS - self.value_symbols()
        return tuple(sorted(free, key=str))

    def kernel_exprs(self) -> list[sympy.Expr]:
        """The expressions printed inside the kernel (the numels are arguments)."""
        return [*(v.index for v in self.values if isinstance(v, Load)), *(s.index for s in self.stores),
                *(v.expr for v in self.values if isinstance(v, SymValue)),
                *(size for v in (*self.values, *self.stores) if isinstance(v, (Load, Check, Store)) for _, size in v.bounds)]


class IRError(RuntimeError):
    pass


def lifted_symbol(kernel: str, i: int, integer: bool = True) -> sympy.Symbol:
    """An argument the wrapper computes: a size (an int), or a SymFloat operand (a float)."""
    if integer:
        return sympy.Symbol(f"{kernel}_size{i}", integer=True)
    return sympy.Symbol(f"{kernel}_scalar{i}", real=True)


def lift_sizes(kernel: Kernel) -> Kernel:
    """The kernel with each size subexpression Triton cannot compute (outside
    KERNEL_INDEX_FUNCS, such as TruncToInt(1.7*ToFloat(s0)), an interpolate output size)
    replaced by a size argument, `<kernel>_size<i>`, that the wrapper computes: a new one,
    or the one a rule lifted for the same expression (KernelBuilder.wrapper_size), which
    the index math elsewhere in the kernel may hold unlifted too."""
    lifted: dict[sympy.Expr, sympy.Symbol] = {e: s for s, e in kernel.lifted}  # a rule's own (KernelBuilder.lifted)
    in_kernel = INDEX_SYMBOLS | kernel.value_symbols()

    found = False  # a subexpression to replace: a new one, or one a rule lifted already

    def visit(expr: sympy.Expr) -> None:
        nonlocal found
        if expr.is_Atom:
            return
        positive_power = not expr.is_Pow or (expr.exp.is_Integer and expr.exp > 0)  # s0**2 prints as s0*s0
        # Python's // and % floor, Triton's truncate: the same where the operands are not negative
        # (index math); size math that may be negative, roll's `(s0 - 5) % s0`, is the wrapper's
        signed = expr.func in FLOOR_INDEX_FUNCS and not (expr.args[0].is_nonnegative and expr.args[1].is_positive)
        wrappers = signed and not expr.free_symbols & in_kernel
        if expr.func in KERNEL_INDEX_FUNCS and positive_power and not wrappers:
            for arg in expr.args:
                visit(arg)
        elif expr.free_symbols & in_kernel:
            raise IRError(f"{kernel.name}: index expression {expr} is not computable in a kernel")
        else:
            found = True
            if expr not in lifted:
                lifted[expr] = lifted_symbol(kernel.name, len(lifted))

    for expr in kernel.kernel_exprs():
        visit(expr)
    if not found:
        return kernel

    def sub(expr: sympy.Expr) -> sympy.Expr:
        return expr.xreplace(lifted)

    values = tuple(
        dataclasses.replace(v, index=sub(v.index), bounds=tuple((i, sub(size)) for i, size in v.bounds)) if isinstance(v, Load)
        else dataclasses.replace(v, bounds=tuple((i, sub(size)) for i, size in v.bounds)) if isinstance(v, Check)
        else dataclasses.replace(v, expr=sub(v.expr)) if isinstance(v, SymValue) else v
        for v in kernel.values
    )
    stores = tuple(dataclasses.replace(s, index=sub(s.index), bounds=tuple((i, sub(size)) for i, size in s.bounds))
                   for s in kernel.stores)
    return dataclasses.replace(kernel, values=values, stores=stores, lifted=tuple((s, e) for e, s in lifted.items()))


def verify(kernel: Kernel) -> Kernel:
    """Cheap structural checks; names the node, op and dtype that break them."""
    buffers = {b.name for b in (*kernel.inputs, *kernel.outputs)}
    every_value = {value_symbol(j) for j in range(len(kernel.values))}
    for buf in (*kernel.inputs, *kernel.outputs):
        if buf.dtype not in STORAGE_DTYPES:
            raise IRError(f"{kernel.name}: buffer {buf.name} has unsupported dtype {buf.dtype}")
    for i, value in enumerate(kernel.values):
        if value.dtype not in COMPUTE_DTYPES:
            raise IRError(f"{kernel.name}: value {i} ({value}) computes in {value.dtype}")
        if isinstance(value, Load):
            if value.buffer not in {b.name for b in kernel.inputs}:
                raise IRError(f"{kernel.name}: value {i} loads {value.buffer!r}, which is not an input")
            if value.mask is not None and (kernel.tile is not None or not 0 <= value.mask < i
                                           or kernel.values[value.mask].dtype is not torch.bool):
                raise IRError(f"{kernel.name}: value {i} loads {value.buffer!r} under a mask that is not an earlier "
                              "bool value of an untiled kernel")
            indirect = {value_symbol(j) for j, _ in value.bounds}
            if value.bounds and (kernel.tile is not None or any(
                    not 0 <= j < i or kernel.values[j].dtype not in (torch.int32, torch.int64) for j, _ in value.bounds)):
                raise IRError(f"{kernel.name}: value {i} loads {value.buffer!r} at positions that are not earlier integer "
                              "values of an untiled kernel")
            if value.index.free_symbols & (every_value - indirect):
                raise IRError(f"{kernel.name}: value {i} indexes with a value it does not bound: {value.index}")
        elif isinstance(value, Check) and (not value.bounds or kernel.tile is not None or any(
                not 0 <= j < i or kernel.values[j].dtype not in (torch.int32, torch.int64) for j, _ in value.bounds)):
            raise IRError(f"{kernel.name}: value {i} checks positions that are not earlier integer values of an untiled kernel")
        elif isinstance(value, SymValue) and value.expr.free_symbols & INDEX_SYMBOLS and kernel.tile:
            raise IRError(f"{kernel.name}: value {i} computes a coordinate {value.expr} in a tiled kernel")
        elif isinstance(value, Compute):
            if any(a >= i or a < 0 for a in value.args):
                raise IRError(f"{kernel.name}: node {value.node} op {value.op} ({value.dtype}) uses a later value {value.args}")
        elif isinstance(value, Reduce):
            if not kernel.is_reduction or value.op not in REDUCTIONS or not 0 <= value.arg < i:
                raise IRError(f"{kernel.name}: node {value.node} reduction {value.op} ({value.dtype}) is malformed")
        elif isinstance(value, Scan):
            if not kernel.is_reduction or value.op not in SCANS or not 0 <= value.arg < i:
                raise IRError(f"{kernel.name}: node {value.node} scan {value.op} ({value.dtype}) is malformed")
            if value.op in FOLDS and not kernel.ordered:
                raise IRError(f"{kernel.name}: node {value.node} scan {value.op} folds a row in order: an ordered kernel's only")
        if isinstance(value, Load) and not kernel.is_reduction and RINDEX in value.index.free_symbols:
            raise IRError(f"{kernel.name}: value {i} indexes with rindex in a pointwise kernel")
        if isinstance(value, Load) and kernel.tile is None and value.index.free_symbols & {YINDEX, ZINDEX}:
            raise IRError(f"{kernel.name}: value {i} indexes with yindex/zindex in an untiled kernel")
    for store in kernel.stores:
        if store.buffer not in buffers or not 0 <= store.value < len(kernel.values):
            raise IRError(f"{kernel.name}: bad store to {store.buffer!r}")
        if store.bounds and (kernel.is_reduction or kernel.tile is not None or any(
                not 0 <= j < len(kernel.values) or kernel.values[j].dtype not in (torch.int32, torch.int64) for j, _ in store.bounds)):
            raise IRError(f"{kernel.name}: a store to {store.buffer!r} at positions that are not integer values of an "
                          "untiled pointwise kernel")
        if store.index.free_symbols & (every_value - {value_symbol(j) for j, _ in store.bounds}):
            raise IRError(f"{kernel.name}: a store to {store.buffer!r} indexes with a value it does not bound: {store.index}")
        if store.accumulate and store.accumulate not in COMBINES:
            raise IRError(f"{kernel.name}: a store to {store.buffer!r} combines by {store.accumulate!r}, not {sorted(COMBINES)}")
        if store.accumulate and not store.bounds:
            raise IRError(f"{kernel.name}: an accumulating store to {store.buffer!r} at its own positions (a scatter's only)")
    if not kernel.stores:
        raise IRError(f"{kernel.name}: stores nothing")
    if kernel.tile is not None and kernel.is_reduction:
        raise IRError(f"{kernel.name}: a reduction kernel cannot be tiled")
    if kernel.ordered and not kernel.is_reduction:
        raise IRError(f"{kernel.name}: only a reduction walks its rows in order")
    return kernel
