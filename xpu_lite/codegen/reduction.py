"""A reduction ir.Kernel -> two Triton sources from the same IR: persistent and looped.

Each program handles XBLOCK rows (xindex, shape [XBLOCK, 1]) and walks their reduced
elements (rindex, shape [1, RBLOCK]). Values are per element ([XBLOCK, RBLOCK]: loads
indexed by rindex and what is computed from them), per row ([XBLOCK, 1]: reductions and
what is computed from them) or scalars.

A value's phase is the number of reductions it waits for. The persistent source
(RBLOCK >= rnumel, picked at launch) computes every value once, in order, with the whole
row in registers. The looped source walks the row in RBLOCK chunks once per phase:
loop p recomputes the per-element values it needs (re-reading their inputs), folds them
into per-lane accumulators and stores per-element results; after the loop the lanes are
combined into the row's result. So softmax is three passes over the input when looped
and one when persistent; variance is always two passes (mean, then squared deviations).
Both sources share the accumulator code: the persistent one is the looped one with a
single chunk and no recomputation. An ordered kernel (ir.Kernel.ordered: an adaptive
pool's window sums) has the looped source only, launched with RBLOCK 1: each row's
accumulator adds its elements one at a time, in rindex order, from 0, as eager's loop does.

A Scan (cumsum, cumprod) is per element and computed in the pass of its input: within a
chunk, the block's own scan, combined with a per-row carry of the chunks before it (the
carry starts again in each pass that recomputes the scan). Under the interpreter a float
scan is eager's cpu loop: carried in eager's acc_type, the carry entering at the chunk's
first lane, so every element is added in eager's order.
"""
from __future__ import annotations

import sympy
import torch

from ..lowering import ir
from .emitter import Emitter
from .mathfns import FLOAT32_FORMS
from .printer import pexpr
from .triton import (TL_DTYPE, argument_block, bounds_check, by_value_buffers, comment, helper_definitions, imports,
                     interpreter_bf16, lane_index, load_text, math_table, parameters, scalar_or_compute, stored_value,
                     used_values)

_ELEMENT, _ROW, _SCALAR = 2, 1, 0
_NO_INDEX = "rnumel"  # an arg* lane's index before it takes an element (never a real index)

# the cross-lane combine per target: the interpreter runs tl.reduce with these exact
# combine functions as numpy reductions (tl.sum/tl.max are not interpretable here); prod
# combines with the kernel's own _prod_combine helper on both
ROW_COMBINE: dict[str, dict[str, str]] = {
    "gpu": {"sum": "tl.sum({0}, 1)", "max": "tl.max({0}, 1)", "min": "tl.min({0}, 1)",
            "prod": "tl.reduce({0}, 1, _prod_combine)"},
    "interpreter": {
        "sum": "tl.reduce({0}, 1, tl.standard._sum_combine)",
        "max": "tl.reduce({0}, 1, tl.standard._elementwise_max)",
        "min": "tl.reduce({0}, 1, tl.standard._elementwise_min)",
        "prod": "tl.reduce({0}, 1, _prod_combine)",
    },
}
_PROD_HELPER = ("@triton.jit", "def _prod_combine(a, b):", "    return a * b")
# a scan within a block (the interpreter runs these combine functions as numpy cumsum/cumprod)
_SCAN: dict[str, dict[str, str]] = {
    "gpu": {"sum": "tl.cumsum({0}, 1)", "prod": "tl.cumprod({0}, 1)"},
    "interpreter": {"sum": "tl.associative_scan({0}, 1, tl.standard._sum_combine)",
                    "prod": "tl.associative_scan({0}, 1, tl.standard._prod_combine)"},
}


# logcumsumexp's carry on a gpu: a double. A float carried through a row's thousands of
# steps drifts ~10 ulps from float64 (H100, 2026-11-25), where eager's parallel cuda scan
# stays within 2. (Intel's Arc GPUs have no float64.) Under the interpreter: eager's cpu
# acc_type (ir.Scan.carry).
_GPU_LOGADDEXP_CARRY = "tl.float64"
_TL_CARRY = {torch.float64: "tl.float64", torch.float32: "tl.float32"}


def reduction_sources(kernel: ir.Kernel, target: str) -> dict[str, str]:
    """Both strategies' sources; an ordered kernel's looped one only (launched with RBLOCK 1)."""
    strategies = ("looped",) if kernel.ordered else ("persistent", "looped")
    return {f"{kernel.function}_{strategy}": _Source(kernel, target, strategy == "persistent").text() for strategy in strategies}


class _Source:
    def __init__(self, kernel: ir.Kernel, target: str, persistent: bool) -> None:
        self.k, self.target, self.persistent = kernel, target, persistent
        self.table = math_table(target)
        self.used = used_values(kernel)
        self.by_value, self.by_bits = by_value_buffers(kernel), interpreter_bf16(kernel, target)
        self.level: list[int] = []
        self.phase: list[int] = []
        for value in kernel.values:
            self.level.append(self._level(value))
            self.phase.append(self._phase(value))
        self.names: dict[int, str] = {}
        self.out = Emitter()

    # -- analysis -----------------------------------------------------------------------
    def _level(self, value: ir.Value) -> int:
        if isinstance(value, (ir.Load, ir.SymValue)):  # a SymValue may be a coordinate
            symbols = (value.index if isinstance(value, ir.Load) else value.expr).free_symbols
            level = _ELEMENT if ir.RINDEX in symbols else _ROW if ir.XINDEX in symbols else _SCALAR
            if isinstance(value, ir.Load):  # at least per row; per element under a per-element mask or at loaded positions
                level = max(level, _ROW, *(self.level[j] for j in ir.operands(value)))
            return level
        if isinstance(value, ir.Reduce):
            return _ROW
        if isinstance(value, ir.Scan):
            return _ELEMENT
        if isinstance(value, (ir.Compute, ir.Check)):
            return max((self.level[a] for a in ir.operands(value)), default=_SCALAR)
        return _SCALAR

    def _phase(self, value: ir.Value) -> int:
        if isinstance(value, ir.Reduce):
            return self.phase[value.arg] + 1
        if isinstance(value, ir.Scan):
            return self.phase[value.arg]  # the carry runs along the same pass
        if isinstance(value, ir.Compute):
            return max((self.phase[a] for a in value.args), default=0)
        if isinstance(value, (ir.Load, ir.Check)):
            return max((self.phase[j] for j in ir.operands(value)), default=0)
        return 0

    def _loops(self) -> int:
        phases = [self.phase[v.arg] for v in self.k.values if isinstance(v, ir.Reduce)]
        phases += [self.phase[s.value] for s in self.k.stores if ir.RINDEX in s.index.free_symbols]
        return max(phases) + 1

    def _needed(self, roots: list[int]) -> list[int]:
        """Per-element values the roots depend on without crossing a per-row value."""
        seen: set[int] = set()
        stack = [r for r in roots if self.level[r] == _ELEMENT]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            value = self.k.values[i]
            if isinstance(value, ir.Compute):
                stack.extend(a for a in value.args if self.level[a] == _ELEMENT)
            elif isinstance(value, ir.Scan) and self.level[value.arg] == _ELEMENT:
                stack.append(value.arg)
            elif isinstance(value, (ir.Load, ir.Check)):
                stack.extend(j for j in ir.operands(value) if self.level[j] == _ELEMENT)
        return sorted(seen)

    # -- emission ---------------------------------------------------------------------
    def text(self) -> str:
        k = self.k
        strategy = "persistent: the whole row in one block" if self.persistent else "looped: the row in RBLOCK chunks"
        out = self.out
        out.line(f"# xpu_lite {k.name} ({strategy}): fused {', '.join(k.nodes)} (target: {self.target})")
        out.lines(imports(k, self.target, first=("import triton",)))
        out.line()
        out.line()
        if any(isinstance(v, (ir.Reduce, ir.Scan)) and v.op == "prod" for v in k.values):
            out.lines(list(_PROD_HELPER))
            out.line()
            out.line()
        out.lines(helper_definitions(k, self.target))
        name = f"{k.function}_{'persistent' if self.persistent else 'looped'}"
        out.line(f"def {name}({parameters(k)}):")
        with out.indent():
            out.line("xindex = (tl.program_id(0).to(INDEX) * XBLOCK + tl.arange(0, XBLOCK))[:, None]")
            out.line("xmask = xindex < xnumel")
            if any(isinstance(v, ir.Scan) and v.op in ir.FOLDS for v in k.values):  # one element per chunk
                out.line("tl.static_assert(RBLOCK == 1, 'a fold walks its row one element at a time')")
            if self.persistent:
                self._persistent()
            else:
                self._looped()
        return out.text()

    def _persistent(self) -> None:
        self._chunk_header("tl.arange(0, RBLOCK)[None, :].to(INDEX)")
        reduces = [i for i, v in enumerate(self.k.values) if isinstance(v, ir.Reduce) and i in self.used]
        for i in reduces:
            self._init(i)
        for i, value in enumerate(self.k.values):
            if i not in self.used:
                continue
            if isinstance(value, ir.Reduce):
                self._update(i)
                self._finish(i)
            else:
                self._emit(i, f"tmp{i}")
        for store in self.k.stores:
            self._store(store)

    def _looped(self) -> None:
        k, out = self.k, self.out
        loops = self._loops()
        for p in range(loops + 1):
            # per-row values ready before this loop (or, after the last loop, the rest)
            for i, value in enumerate(k.values):
                if i in self.used and self.level[i] < _ELEMENT and not isinstance(value, ir.Reduce):
                    if self.phase[i] == p or (p == loops and self.phase[i] > p):
                        self._emit(i, f"tmp{i}")
            if p == loops:
                break
            reduces = [i for i, v in enumerate(k.values) if isinstance(v, ir.Reduce) and i in self.used and self.phase[v.arg] == p]
            stores = [s for s in k.stores if ir.RINDEX in s.index.free_symbols and self.phase[s.value] == p]
            for i in reduces:
                self._init(i)
            roots = [k.values[i].arg for i in reduces] + [s.value for s in stores]  # type: ignore[union-attr]
            needed = self._needed(roots)
            for i in needed:
                value = k.values[i]
                if isinstance(value, ir.Scan):
                    dtype = k.values[value.arg].dtype if value.op in ir.FOLDS else value.dtype  # a fold carries the value
                    carried = self._carry(value) if value.op == "logaddexp" or self._in_order(value) else TL_DTYPE[dtype]
                    self.out.line(f"carry{i} = tl.full([XBLOCK, 1], {self._identity(value.op, dtype)}, {carried})",
                                  f"{value.node}: the chunks before")
                    if value.op.startswith("arg"):
                        self.out.line(f"carry{i}_index = tl.full([XBLOCK, 1], 0, tl.int64)")
            out.line("for roffset in range(0, rnumel, RBLOCK):", f"pass {p + 1} of {loops} over the row")
            with out.indent():
                self._chunk_header("(roffset + tl.arange(0, RBLOCK)[None, :]).to(INDEX)")
                for i in needed:
                    self._emit(i, f"tmp{i}" if p == 0 else f"tmp{i}_{p}")
                for i in reduces:
                    self._update(i)
                for store in stores:
                    self._store(store)
            for i in reduces:
                self._finish(i)
        for store in k.stores:
            if ir.RINDEX not in store.index.free_symbols:
                self._store(store)

    def _chunk_header(self, rindex: str) -> None:
        self.out.line(f"rindex = {rindex}")
        self.out.line("rmask = rindex < rnumel")
        self.out.line("mask = xmask & rmask")
        for i in self.names.copy():  # a new chunk: per-element names from the last one are stale
            if self.level[i] == _ELEMENT:
                del self.names[i]

    def _emit(self, i: int, name: str) -> None:
        value = self.k.values[i]
        if isinstance(value, ir.Load) and value.buffer in self.by_value:  # the same in every row (and element)
            text = argument_block(value, "[XBLOCK, RBLOCK]" if self.level[i] == _ELEMENT else "[XBLOCK, 1]")
            if value.mask is not None:  # 0 outside the element's window, as the masked load's `other`
                text = f"tl.where({self.names[value.mask]}, {text}, 0)"
        elif isinstance(value, ir.Load):
            # positions loaded in this pass (an embedding before its norm) by their names here
            at = {ir.value_symbol(j): sympy.Symbol(self.names[j], integer=True) for j, _ in value.bounds}
            index = lane_index(value.index.xreplace(at), (ir.XINDEX,))
            mask = "mask" if self.level[i] == _ELEMENT else "xmask"
            if value.mask is not None:  # lanes outside the element's window (adaptive pools)
                mask += f" & {self.names[value.mask]}"
            if value.bounds:  # the assert and the lanes it lets load
                self.out.lines(bounds_check(self.k, name, value.bounds, value.message, mask, self.names.__getitem__))
                mask += f" & {name}_ok"
            text = load_text(value, f"{value.buffer} + ({index})", mask, self.by_bits)
        elif isinstance(value, ir.Check):  # per row or per element, as its positions are
            mask = "mask" if self.level[i] == _ELEMENT else "xmask"
            self.out.lines(bounds_check(self.k, name, value.bounds, value.message, mask, self.names.__getitem__))
            text = f"{name}_ok"
        elif isinstance(value, ir.Scan):
            self._scan(i, name)
            return
        elif isinstance(value, ir.SymValue) and value.expr.free_symbols & {ir.XINDEX, ir.RINDEX}:
            # a coordinate computes in the index dtype (int32 unless a launch indexes past 2**31):
            # as wide as its value says, so an int64 constant (a reduction's identity) meets it
            text = f"({pexpr(value.expr)}).to({TL_DTYPE[value.dtype]})"
        else:
            prelude, text = scalar_or_compute(value, name, [self.names[a] for a in getattr(value, "args", ())], self.table,
                                              "[XBLOCK, 1]")
            self.out.lines(prelude)
        self.out.line(f"{name} = {text}", comment(value, self.k))
        self.names[i] = name

    def _scan(self, i: int, name: str) -> None:
        """A scan of the chunk (masked lanes hold the identity), after the carry when looped."""
        value = self.k.values[i]
        assert isinstance(value, ir.Scan)
        if value.op in ir.FOLDS:
            self._fold(i, name)
            return
        op, dt = value.op, TL_DTYPE[value.dtype]
        if self._in_order(value):
            self._scan_in_order(i, name)
            return
        self.out.line(f"scan{i} = tl.where(mask, {self.names[value.arg]}, {self._identity(op, value.dtype)}).to({dt})", value.node)
        scanned = _SCAN[self.target][op].format(f"scan{i}")
        if self.persistent:
            self.out.line(f"{name} = {scanned}")
        else:
            symbol = {"sum": "+", "prod": "*"}[op]
            whole = ROW_COMBINE[self.target][op]
            self.out.line(f"{name} = carry{i} {symbol} {scanned}")
            self.out.line(f"carry{i} = carry{i} {symbol} {whole.format(f'scan{i}')}[:, None]")
        self.names[i] = name

    def _in_order(self, value: ir.Scan) -> bool:
        """A float cumsum/cumprod under the interpreter: eager's cpu loop (ir.Scan.carry)."""
        return self.target == "interpreter" and value.op in ("sum", "prod") and value.carry is not None

    def _scan_in_order(self, i: int, name: str) -> None:
        """Eager's cpu loop, `acc += x[k]; out[k] = acc` in its acc_type: the chunk in the
        carry's dtype, the carry added to its first lane, then the interpreter's scan (numpy's
        cumsum/cumprod, in order). Persistent, the carry is the identity: `0 + -0.0` is +0.0,
        as eager's first step. The next chunk's carry is the last lane (masked lanes hold the
        identity, so it is the row's running value)."""
        value = self.k.values[i]
        assert isinstance(value, ir.Scan)
        op, carried, identity = value.op, self._carry(value), self._identity(value.op, value.dtype)
        symbol, combine = {"sum": "+", "prod": "*"}[op], ROW_COMBINE[self.target][op]
        carry = identity if self.persistent else f"carry{i}"
        lane = "tl.arange(0, RBLOCK)[None, :]"
        self.out.line(f"scan{i} = tl.where(mask, {self.names[value.arg]}, {identity}).to({carried})", value.node)
        self.out.line(f"scan{i} = tl.where({lane} == 0, {carry} {symbol} scan{i}, scan{i})", "the carry, then each element in order")
        self.out.line(f"scan{i} = {_SCAN[self.target][op].format(f'scan{i}')}")
        self.out.line(f"{name} = scan{i}.to({TL_DTYPE[value.dtype]})")
        if not self.persistent:
            last = f"tl.where({lane} == RBLOCK - 1, scan{i}, {identity})"
            self.out.line(f"carry{i} = {combine.format(last)}[:, None]")
        self.names[i] = name

    def _fold(self, i: int, name: str) -> None:
        """cummax/cummin's running extreme (or its index), an ordered kernel's: each chunk is one
        element (RBLOCK 1), which replaces the carry where it is at least as large (small), or
        NaN, as eager's `isnan(x) || (!isnan(out) && x >= out)`."""
        value = self.k.values[i]
        assert isinstance(value, ir.Scan) and not self.persistent
        if value.op == "logaddexp":
            self._log_add_exp(i, name)
            return
        x = self.names[value.arg]
        cmp = ">=" if value.op.removeprefix("arg") == "max" else "<="
        better = f"({x} {cmp} carry{i})"
        if self.k.values[value.arg].dtype.is_floating_point:
            better = f"(({x} != {x}) | ((carry{i} == carry{i}) & {better}))"
        self.out.line(f"take{i} = mask & {better}", value.node)
        self.out.line(f"carry{i} = tl.where(take{i}, {x}, carry{i})")
        if value.op.startswith("arg"):
            self.out.line(f"carry{i}_index = tl.where(take{i}, rindex, carry{i}_index)")
        self.out.line(f"{name} = carry{i}{'_index' if value.op.startswith('arg') else ''}")
        self.names[i] = name

    def _formula(self, op: str) -> str:
        """`op`'s one-expression form: the table's, or where the table evaluates it in float64
        (the interpreter's Steps), the formula itself: the caller widens its operand."""
        entry = self.table[op]
        return entry if isinstance(entry, str) else FLOAT32_FORMS[op]

    def _carry(self, value: ir.Scan) -> str:
        return _GPU_LOGADDEXP_CARRY if self.target == "gpu" else _TL_CARRY[value.carry]

    def _log_add_exp(self, i: int, name: str) -> None:
        """logcumsumexp's fold, eager's _log_add_exp_helper(x, carry): with lo/hi the min/max
        of the two (the carry where it is NaN, else std::min/max's choice, x for a NaN x),
        log1p(exp(lo - hi)) + hi, or x itself where both are the same infinity."""
        value = self.k.values[i]
        assert isinstance(value, ir.Scan)
        c, v = f"carry{i}", f"lse{i}"
        self.out.line(f"{v}_x = {self.names[value.arg]}.to({self._carry(value)})", value.node)
        self.out.line(f"{v}_lo = tl.where({c} != {c}, {c}, tl.where({c} < {v}_x, {c}, {v}_x))")
        self.out.line(f"{v}_hi = tl.where({c} != {c}, {c}, tl.where({v}_x < {c}, {c}, {v}_x))")
        # a float carry under the interpreter: eager's expf and log1pf, correctly rounded (each
        # in double, rounded to float: numpy's float32 exp is not, the interpreter's log1p is composed)
        wide, narrow = (".to(tl.float64)", ".to(tl.float32)") if self._carry(value) == "tl.float32" else ("", "")
        difference = f"({v}_lo - {v}_hi){wide}" if wide else f"{v}_lo - {v}_hi"
        self.out.line(f"{v}_e = " + _unary(self._formula("exp"), difference) + narrow)
        self.out.line(f"{v}_sum = " + _unary(self._formula("log1p"), f"{v}_e{wide}") + f"{narrow} + {v}_hi")
        self.out.line(f"{c} = tl.where(mask, tl.where(({v}_lo != {v}_hi) | (tl.abs({v}_lo) < float('inf')), {v}_sum, "
                      f"{v}_x), {c})")
        self.out.line(f"{name} = {c}.to({TL_DTYPE[value.dtype]})")
        self.names[i] = name

    # -- accumulators -------------------------------------------------------------------
    def _identity(self, op: str, dtype: torch.dtype) -> str:
        if op in ("sum", "any"):
            return "0"
        if op in ("prod", "all"):
            return "1"
        if dtype.is_floating_point:
            return "float('-inf')" if op in ("max", "argmax", "logaddexp") else "float('inf')"
        info = torch.iinfo(dtype)
        return str(info.min if op in ("max", "argmax") else info.max)

    def _acc_dtype(self, value: ir.Reduce) -> str:
        if value.op in ("any", "all"):
            return "tl.int32"
        if value.op in ("argmax", "argmin"):
            return TL_DTYPE[self.k.values[value.arg].dtype]
        return TL_DTYPE[value.dtype]

    def _init(self, i: int) -> None:
        value = self.k.values[i]
        assert isinstance(value, ir.Reduce)
        dtype = self.k.values[value.arg].dtype if value.op in ("argmax", "argmin") else value.dtype
        self.out.line(f"acc{i} = tl.full([XBLOCK, RBLOCK], {self._identity(value.op, dtype)}, {self._acc_dtype(value)})", value.node)
        if value.op in ("argmax", "argmin"):
            self.out.line(f"acc{i}_index = tl.full([XBLOCK, RBLOCK], 0, INDEX) + {_NO_INDEX}")

    def _update(self, i: int) -> None:
        value = self.k.values[i]
        assert isinstance(value, ir.Reduce)
        op, acc = value.op, f"acc{i}"
        arg = self.names[value.arg]
        if op in ("any", "all"):
            arg = f"{arg}.to(tl.int32)"
        masked = f"tl.where(mask, {arg}, {self._identity(op, value.dtype)})"
        if op == "sum":
            self.out.line(f"{acc} = {acc} + {masked}", value.node)
        elif op == "prod":
            self.out.line(f"{acc} = {acc} * {masked}", value.node)
        elif op in ("max", "min", "any", "all"):
            combine = {"max": "maximum", "min": "minimum", "any": "maximum", "all": "minimum"}[op]
            self.out.line(f"{acc} = " + self.table[combine].format(acc, masked), value.node)
        else:  # argmax / argmin: a lane takes an element that beats it, or a NaN, or its first element
            cmp = ">" if op == "argmax" else "<"
            floating = self.k.values[value.arg].dtype.is_floating_point
            nan = f" | (({arg} != {arg}) & ({acc} == {acc}))" if floating else ""
            take = f"mask & (({arg} {cmp} {acc}){nan} | ({acc}_index == {_NO_INDEX}))"
            self.out.line(f"take{i} = {take}", value.node)
            self.out.line(f"{acc} = tl.where(take{i}, {arg}, {acc})")
            self.out.line(f"{acc}_index = tl.where(take{i}, rindex, {acc}_index)")

    def _finish(self, i: int) -> None:
        value = self.k.values[i]
        assert isinstance(value, ir.Reduce)
        op, acc = value.op, f"acc{i}"
        combine = ROW_COMBINE[self.target]
        name = f"tmp{i}"
        if op in ("sum", "prod"):
            self.out.line(f"{name} = {combine[op].format(acc)}[:, None]", value.node)
        elif op in ("any", "all"):
            self.out.line(f"{name} = {combine['max' if op == 'any' else 'min'].format(acc)}[:, None] != 0", value.node)
        else:
            extreme = "max" if op in ("max", "argmax") else "min"
            floating = self.k.values[value.arg].dtype.is_floating_point
            best = f"best{i}" if op.startswith("arg") else name
            self.out.line(f"{best} = {combine[extreme].format(acc)}[:, None]", value.node)
            if floating:  # a NaN anywhere in the row is the result (tl.max/tl.min may drop it)
                has_nan = combine["max"].format(f"({acc} != {acc}).to(tl.int32)")
                self.out.line(f"{best} = tl.where({has_nan}[:, None] > 0, float('nan'), {best})")
            if op.startswith("arg"):
                hit = f"({acc} == {best})" + (f" | (({acc} != {acc}) & ({best} != {best}))" if floating else "")
                first = combine["min"].format(f"tl.where({hit}, {acc}_index, {_NO_INDEX})")
                self.out.line(f"{name} = {first}[:, None].to(tl.int64)")
        self.names[i] = name

    def _store(self, store: ir.Store) -> None:
        buf = next(b for b in self.k.outputs if b.name == store.buffer)
        index = lane_index(store.index, (ir.XINDEX,))
        element = ir.RINDEX in store.index.free_symbols
        value = self.names[store.value]
        self.out.line(f"tl.store({store.buffer} + ({index}), {stored_value(value, buf.dtype, self.target)}, "
                      f"mask={'mask' if element else 'xmask'})", buf.node)


def _unary(entry: object, operand: str) -> str:
    """A one-expression math table entry applied to `operand` (an expression)."""
    assert isinstance(entry, str), entry
    return entry.replace("{0}", f"({operand})")
