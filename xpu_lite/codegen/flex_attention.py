"""flex attention's forward as one Triton kernel of its own, score_mod and mask_mod inlined.

Input: a `flex_attention` node of the aten graph (the higher-order op `torch.nn.attention.
flex_attention` is traced as), selected for compilation. Output: the node's target becomes
a FlexAttentionKernel, which the wrapper calls with the node's own arguments and which
returns what the op returns, (out, logsumexp / ln 2, max / ln 2), the block mask passed as
its mask_mod alone; or node.meta[REJECTED]
says why the op stays eager's (the dense math: every score of a row in memory).

The kernel is eager's math, blocked (one program per BLOCK_M query rows of one batch and
head, a loop over the keys in BLOCK_N blocks with an online softmax): scores are float32
(query and key cast first, as eager does, and a float32 product, no TF32), score_mod and
mask_mod are the traced subgraphs' aten ops as Triton expressions (the math table's, as
fused kernels compute them), and a row every key of which is masked gets eager's zeros and
-inf. The block mask's block lists are not read: eager's math ignores them too and applies
mask_mod to every score, which is what the kernel does. Half precision as eager: the
scores float32 (a dot in the input dtype accumulating in float32 on a GPU: the products
are exact), the probabilities rounded to the input dtype for their product with the
values (unnormalized here, normalized in eager: within the dtype's rounding of eager's,
not bitwise). The backward (`flex_attention_backward`) stays eager's.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import torch
import torch.fx

from ..lowering.decisions import FLEX_REJECTED as REJECTED
from ..report import COUNTERS
from ..runtime import gpu_launch_options, load_kernel
from .reduction import ROW_COMBINE
from .triton import SIGNATURE_DTYPE, TL_DTYPE, literal, math_table, math_text, target_for

aten = torch.ops.aten
FLEX_ATTENTION = torch.ops.higher_order.flex_attention

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_BLOCKS = {"interpreter": (16, 32), "gpu": (64, 32)}  # (BLOCK_M, BLOCK_N)
# aten op of a score_mod / mask_mod subgraph -> the math table's entry
_MATH = {
    aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul", aten.div.Tensor: "truediv",
    aten.abs.default: "abs", aten.exp.default: "exp", aten.log.default: "log", aten.tanh.default: "tanh",
    aten.sigmoid.default: "sigmoid", aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt",
    aten.maximum.default: "maximum", aten.minimum.default: "minimum", aten.where.self: "where",
    aten.logical_and.default: "logical_and", aten.logical_or.default: "logical_or",
    aten.logical_not.default: "logical_not", aten.bitwise_and.Tensor: "bitwise_and", aten.bitwise_or.Tensor: "bitwise_or",
    **{getattr(aten, cmp).Tensor: cmp for cmp in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{getattr(aten, cmp).Scalar: cmp for cmp in ("eq", "ne", "lt", "le", "gt", "ge")},
}
_CASTS = (aten._to_copy.default, torch.ops.prims.convert_element_type.default)


class NotTranslated(Exception):
    """A subgraph the kernel cannot inline: why."""


def lower_flex_attention(gm: torch.fx.GraphModule, selected: Any, device_type: str) -> None:
    """Each selected flex_attention node of gm: its target a FlexAttentionKernel, or
    node.meta[REJECTED] why not. `selected(node)`: chosen for compilation."""
    index = 0
    for node in gm.graph.nodes:
        if node.target is not FLEX_ATTENTION or not selected(node):
            continue
        try:
            node.target = FlexAttentionKernel(f"flex_attention_{index}", node, gm, device_type)
            index += 1
            # the block mask's block lists are not read: only its mask_mod is passed, and
            # what computed the lists goes where nothing else reads it
            lists = [a for a in node.args[4][:-1] if isinstance(a, torch.fx.Node)]
            node.args = (*node.args[:4], (node.args[4][-1],), *node.args[5:])
            _erase_unread(gm, lists)
        except NotTranslated as why:
            node.meta[REJECTED] = f"flex attention stays eager's (dense) math: {why}"


def _erase_unread(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node]) -> None:
    """Erase these nodes and their inputs, each where nothing reads it and it has no effect
    (writes nothing, draws no random numbers)."""
    erased: set[torch.fx.Node] = set()
    while nodes:
        node = nodes.pop()
        if node in erased:  # reached again through another of its readers
            continue
        target = node.target
        effect = not isinstance(target, torch._ops.OpOverload) or target._schema.is_mutable or (
            torch.Tag.nondeterministic_seeded in target.tags)
        if node.op != "call_function" or node.users or (effect and target is not operator.getitem):
            continue
        nodes.extend(node.all_input_nodes)
        gm.graph.erase_node(node)
        erased.add(node)


class FlexAttentionKernel:
    """Called as the op: (query, key, value, score_mod, block_mask, scale, kernel_options,
    score_mod_other_buffers, mask_mod_other_buffers) -> (out, lse, max), as the op's own."""

    template = "flex attention"  # partition.py: a Triton kernel of its own, not fused

    def __init__(self, name: str, node: torch.fx.Node, gm: torch.fx.GraphModule, device_type: str) -> None:
        query, key, value, score_mod, block_mask, _, _, score_buffers, mask_buffers = node.args
        vals = [a.meta.get("val") for a in (query, key, value)]
        if not all(isinstance(v, torch.Tensor) and v.dim() == 4 and v.dtype in _DTYPES for v in vals):
            raise NotTranslated("query, key and value must be 4-d float32, float16 or bfloat16 tensors")
        if len({v.dtype for v in vals}) != 1:
            raise NotTranslated(f"query, key and value of different dtypes ({', '.join(str(v.dtype) for v in vals)})")
        d, dv = vals[0].shape[-1], vals[2].shape[-1]
        if not isinstance(d, int) or not isinstance(dv, int):
            raise NotTranslated("the head dims are symbolic (the kernel is compiled for its head dims)")
        self.__name__, self.dtype, self.device_type = name, vals[0].dtype, device_type
        self.buffers = [_buffer_kind(b) for b in (*score_buffers, *mask_buffers)]
        score_sub, mask_sub = getattr(gm, score_mod.target), getattr(gm, block_mask[-1].target)
        n_score = len(score_buffers)
        buffer_names = [f"buf{j}" for j in range(len(self.buffers))]
        score = _Translator("s", ["qk", "b", "h", "m", "n", *buffer_names[:n_score]], self.buffers[:n_score], target_for(device_type))
        mask = _Translator("k", ["b", "h", "m", "n", *buffer_names[n_score:]], self.buffers[n_score:], target_for(device_type),
                           offset=n_score)
        score_lines, score_out = score.run(score_sub, vals[0].device)
        mask_lines, mask_out = mask.run(mask_sub, vals[0].device)
        self.block_m, self.block_n = _BLOCKS[target_for(device_type)]
        self.source = _source(name, d, dv, self.block_m, self.block_n, self.buffers, score_lines, score_out, mask_lines,
                              mask_out, TL_DTYPE[self.dtype], target_for(device_type))
        self.checks_bounds = score.indexes or mask.indexes
        try:
            self.kernel = load_kernel(name, self.source, device_type, self._signature(), self.checks_bounds)
        except NotTranslated:
            raise
        except Exception as exc:  # noqa: BLE001  (generated code that does not compile: eager's op, said so)
            warnings.warn(f"xpu_lite: {name} failed to compile: {type(exc).__name__}: {exc}; flex attention runs eagerly",
                          stacklevel=2)
            raise NotTranslated(f"its kernel failed to compile ({type(exc).__name__}: {exc})") from None
        COUNTERS.kernels_compiled += 1
        # as the wrapper launches its kernels (the options compile_ahead compiled it with)
        self.options = {} if device_type == "cpu" else gpu_launch_options(self.checks_bounds, device_type)
        self.label = f"{name} (flex attention: score_mod and mask_mod inlined, online softmax over {self.block_n}-key blocks)"

    def _signature(self) -> dict[str, str]:
        pointer = f"*{SIGNATURE_DTYPE[self.dtype]}"
        signature = {"Q": pointer, "K": pointer, "V": pointer, "OUT": pointer, "LSE": "*fp32", "MAXS": "*fp32"}
        for j, (kind, dtype, ndim) in enumerate(self.buffers):
            if kind == "tensor":
                signature[f"buf{j}"] = f"*{SIGNATURE_DTYPE[dtype]}"
                signature.update({f"buf{j}_{what}{d}": "i64" for what in ("size", "stride") for d in range(ndim)})
            else:
                signature[f"buf{j}"] = "i64"
        signature.update({name: "i64" for name in _INTS})
        signature["SCALE"] = "fp32"
        return signature

    def __call__(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, score_mod: Any, block_mask: Any,
                 scale: float, kernel_options: Any, score_buffers: tuple[Any, ...], mask_buffers: tuple[Any, ...]) -> Any:
        batch, heads, rows, _ = query.shape
        if not (key.size(0) == batch or (batch > 1 and key.size(0) == 1)):
            raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={batch} and Bkv={key.size(0)}")
        out = torch.empty_strided((batch, heads, rows, value.size(-1)), _out_strides(query, value.size(-1)),
                                  dtype=query.dtype, device=query.device)
        lse = torch.empty((batch, heads, rows), dtype=torch.float32, device=query.device)
        maxs = torch.empty_like(lse)
        if out.numel() == 0:
            return out, lse.fill_(-math.inf), maxs.fill_(-math.inf)
        buffers: list[Any] = []
        for b, (kind, _, _) in zip((*score_buffers, *mask_buffers), self.buffers):
            buffers += [b, *b.shape, *b.stride()] if kind == "tensor" else [int(b)]
        shared = key.size(0) == 1 and batch > 1  # one key/value batch for every query batch
        ints = [rows, key.size(2), heads, heads // key.size(1), *query.stride(),
                *(0 if shared and d == 0 else s for d, s in enumerate(key.stride())),
                *(0 if shared and d == 0 else s for d, s in enumerate(value.stride())), *out.stride()]
        grid = ((rows + self.block_m - 1) // self.block_m, batch * heads)
        self.kernel[grid](query, key, value, out, lse, maxs, *buffers, *ints, float(scale), **self.options)
        COUNTERS.kernel_launches += 1
        return out, lse, maxs


_INTS = ("M", "N", "HQ", "G", *(f"{t}{d}" for t in ("sq", "sk", "sv", "so") for d in range(4)))


def _buffer_kind(value: Any) -> tuple[str, torch.dtype | None, int]:
    """('tensor', dtype, ndim) or ('int', None, 0) of an argument score_mod or mask_mod reads."""
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else value
    if isinstance(val, torch.Tensor) and val.dtype in SIGNATURE_DTYPE and val.layout is torch.strided:
        return "tensor", val.dtype, val.dim()
    if isinstance(val, (int, torch.SymInt)):
        return "int", None, 0
    raise NotTranslated(f"a captured {type(val).__name__} ({getattr(val, 'dtype', '')}) the kernel cannot read")


def _out_strides(query: torch.Tensor, dv: int) -> list[int]:
    """The op's output strides: its dims in the query's stride order (eager's _permute_strides),
    the head dim innermost."""
    strides = query.stride()
    descending = sorted(range(4), key=strides.__getitem__, reverse=True)  # equal strides: outer dims first
    fill = list(reversed(descending))
    if fill[0] != 3:
        fill.remove(3)
        fill.insert(0, 3)
    sizes, out, step = (*query.shape[:3], dv), [0] * 4, 1
    for d in fill:
        out[d], step = step, step * sizes[d]
    return out


class _Translator:
    """A score_mod or mask_mod subgraph as Triton statements over the kernel's names: `qk`
    (the scores, float32, [BLOCK_M, BLOCK_N]), `b` and `h` (this program's batch and head),
    `m` ([BLOCK_M, 1]) and `n` ([1, BLOCK_N]), each captured buffer `bufJ`. Every value is
    computed in float32 where eager's is a float (a half-precision one rounded to its dtype
    after each op, as eager rounds it), in its own dtype otherwise."""

    def __init__(self, prefix: str, names: list[str], buffers: list[tuple[str, Any, int]], target: str,
                 offset: int = 0) -> None:
        self.prefix, self.names, self.buffers, self.offset = prefix, names, buffers, offset
        self.table, self.lines, self.indexes = math_table(target), [], False

    def run(self, sub: torch.fx.GraphModule, device: torch.device) -> tuple[list[str], str]:
        env: dict[torch.fx.Node, str] = {}
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.names):
            raise NotTranslated(f"a subgraph of {len(placeholders)} arguments, where {len(self.names)} were passed")
        env.update(zip(placeholders, self.names))
        self.dtypes = _eager_dtypes(sub, self.names[0] == "qk", self.buffers, device)
        for node in sub.graph.nodes:
            if node.op == "output":
                (result,) = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
                return self.lines, self._operand(result, env)
            if node.op == "call_function":
                env[node] = self._emit(node, env)
            elif node.op != "placeholder":
                raise NotTranslated(f"its subgraph has a {node.op} node ({node.target})")
        raise NotTranslated("its subgraph has no output")

    def _emit(self, node: torch.fx.Node, env: dict[torch.fx.Node, str]) -> str:
        dtype = self.dtypes.get(node)
        if dtype not in TL_DTYPE:
            raise NotTranslated(f"{node.target} gives a {dtype} value")
        name = f"{self.prefix}{len(self.lines)}"
        target = node.target
        if target in (aten.scalar_tensor.default, aten.full.default):
            value = node.args[0] if target is aten.scalar_tensor.default else node.args[1]
            expr = f"tl.full([1, 1], {_scalar(value)}, {TL_DTYPE[_computed(dtype)]})"
        elif target in _CASTS:
            expr = f"{self._operand(node.args[0], env)}.to({TL_DTYPE[_computed(dtype)]})"
        elif target is aten.index.Tensor:
            expr = self._index(node, env)
        elif (target in _MATH or target is aten.neg.default) and not node.kwargs:
            entry = _MATH.get(target) or ("fneg" if dtype.is_floating_point else "neg")
            expr = self._math(name, entry, [self._operand(a, env) for a in node.args], node.args, dtype,
                              target is aten.where.self)
        elif target is aten.clamp.default and not node.kwargs:  # clamp(x, min, max): either bound may be None
            expr = self._operand(node.args[0], env)
            for bound, entry in zip(node.args[1:], ("clamp_min", "clamp_max")):
                if bound is not None:
                    expr = self._math(f"{name}_{entry}", entry, [expr, self._operand(bound, env)], (node.args[0], bound), dtype)
        elif (entry := _by_literal(node, dtype)) is not None:  # x // 8, x % 3 of indices
            expr = self._math(name, entry, [self._operand(a, env) for a in node.args[:2]], node.args[:2], dtype)
        else:
            raise NotTranslated(f"its subgraph calls {target}, which the flex attention kernel does not inline")
        if dtype in (torch.float16, torch.bfloat16):  # eager's value is rounded to its dtype after each op
            expr = self.table[f"round_{str(dtype).removeprefix('torch.')}"].format(f"({expr}).to(tl.float32)")
        elif dtype is torch.bool:
            expr = f"(({expr}) != 0)"
        else:
            expr = f"({expr}).to({TL_DTYPE[dtype]})"
        self.lines.append(f"{name} = {expr}  # {node.target}")
        return name

    def _math(self, name: str, entry_name: str, args: list[str], values: Any, dtype: torch.dtype, where: bool = False) -> str:
        """The math table's `entry_name` of `args` (its steps appended to the lines), in
        float32 where the result is a float (q_idx / 2: int operands widened first)."""
        if dtype.is_floating_point:
            args = [f"{a}.to(tl.float32)" if isinstance(v, torch.fx.Node) and i >= where else a
                    for i, (a, v) in enumerate(zip(args, values))]
        steps, text = math_text(entry_name, args, _computed(dtype), self.table, name)
        self.lines += steps
        return text

    def _index(self, node: torch.fx.Node, env: dict[torch.fx.Node, str]) -> str:
        source, indices = node.args
        first = len(self.names) - len(self.buffers)  # the captured buffers' names come last
        j = self.names.index(env[source]) - first if env.get(source) in self.names[first:] else -1
        if j < 0 or self.buffers[j][0] != "tensor" or any(i is None for i in indices) or len(indices) != self.buffers[j][2]:
            raise NotTranslated("it indexes something other than one element of a captured tensor")
        buf, offsets = f"buf{j + self.offset}", []
        for d, index in enumerate(indices):
            i = self._operand(index, env)
            wrapped = f"tl.where({i} < 0, {i} + {buf}_size{d}, {i})"  # a negative index counts from the end
            self.lines.append(f"tl.device_assert(((({wrapped}) >= 0) & (({wrapped}) < {buf}_size{d})) | (valid == 0), "
                              f"\"index out of bounds: {node.target} of a captured tensor\")")
            offsets.append(f"({wrapped}).to(tl.int64) * {buf}_stride{d}")
        self.indexes = True
        loaded = f"tl.load({buf} + {' + '.join(offsets)}, mask=valid, other=0)"
        dtype = self.buffers[j][1]
        return f"{loaded}.to(tl.float32)" if dtype in (torch.float16, torch.bfloat16) else loaded

    def _operand(self, value: Any, env: dict[torch.fx.Node, str]) -> str:
        if isinstance(value, torch.fx.Node):
            return env[value]
        if isinstance(value, (bool, int, float)):
            return _scalar(value)
        raise NotTranslated(f"an argument {value!r} the kernel cannot inline")


def _eager_dtypes(sub: torch.fx.GraphModule, scores: bool, buffers: list[tuple[str, Any, int]],
                  device: torch.device) -> dict[torch.fx.Node, torch.dtype]:
    """Each node's dtype as eager's math computes it: the subgraph was traced with the
    query's dtype for the score and int32 indices, but eager calls it with float32 scores
    and int64 indices (torch.arange), so a bfloat16 query's scores are never rounded to
    bfloat16 there. Found by running the subgraph once on 0-dim ones of those dtypes."""
    class Recorder(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            result = super().run_node(node)
            if isinstance(result, torch.Tensor):
                found[node] = result.dtype
            return result

    found: dict[torch.fx.Node, torch.dtype] = {}
    one = lambda dtype: torch.ones((), dtype=dtype, device=device)  # noqa: E731
    args = [one(torch.float32)] if scores else []
    args += [one(torch.int64) for _ in range(4)]
    args += [torch.ones([2] * ndim, dtype=dtype, device=device) if kind == "tensor" else 1 for kind, dtype, ndim in buffers]
    try:
        with torch.no_grad():
            Recorder(sub).run(*args)
    except Exception as exc:  # noqa: BLE001  (a subgraph eager's math could not run either way: not inlined)
        raise NotTranslated(f"its subgraph did not run on sample values ({type(exc).__name__}: {exc})") from None
    return found


def _by_literal(node: torch.fx.Node, dtype: torch.dtype) -> str | None:
    """The math entry of an integer floor division or remainder by a nonzero int literal
    (a chunked mask's `q_idx // 128`; by a tensor it may be 0, which eager raises on), or
    of a float remainder; None for anything else."""
    target, args = node.target, node.args
    if target is aten.div.Tensor_mode and node.kwargs.get("rounding_mode") == "floor":
        target = aten.floor_divide.default
    elif node.kwargs or len(args) != 2:
        return None
    divisor_ok = isinstance(args[1], int) and not isinstance(args[1], bool) and args[1] != 0
    if target is aten.floor_divide.default and not dtype.is_floating_point and divisor_ok:
        return "div_floor_int"
    if target in (aten.remainder.Scalar, aten.remainder.Tensor):
        return "remainder" if dtype.is_floating_point else ("remainder_int" if divisor_ok else None)
    return None


def _scalar(value: bool | int | float) -> str:
    """A Python number as the kernel's literal (a float as its float32 value, a wrapped
    number as in aten: it does not widen a tensor's dtype)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return literal(value, torch.float32) if math.isfinite(value) else f"float('{value}')"
    return repr(value)


def _computed(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _source(name: str, d: int, dv: int, block_m: int, block_n: int, buffers: list[tuple[str, Any, int]],
            score_lines: list[str], score_out: str, mask_lines: list[str], mask_out: str, dt: str, target: str) -> str:
    dpad, dvpad = (max(16, 1 << (x - 1).bit_length()) for x in (d, dv))
    params = ["Q", "K", "V", "OUT", "LSE", "MAXS"]
    for j, (kind, _, ndim) in enumerate(buffers):
        params.append(f"buf{j}")
        if kind == "tensor":
            params += [f"buf{j}_{what}{k}" for what in ("size", "stride") for k in range(ndim)]
    params += [*_INTS, "SCALE"]
    body = [*score_lines, *mask_lines]
    row_max, row_sum = (ROW_COMBINE[target][op] for op in ("max", "sum"))
    # to nearest even (the interpreter's own cast to bfloat16 truncates: the math table's form)
    stored = math_table(target)["round_bfloat16"].format("out") if dt == "tl.bfloat16" else "out"
    divide = math_table(target)["truediv"]  # correctly rounded, as eager's division (tl.div_rn on a GPU)
    ln2 = "tl.full([1], 0.6931471805599453, tl.float32)"  # eager divides by math.log(2) in float32
    log_sum = "tl.where(l_i == 0.0, float('-inf'), m_i + tl.log(l_i))"
    # Half precision: eager's scores are float32 products of the values widened, which a
    # dot in the input dtype accumulating in float32 gives too (a product of two half
    # values is exact in float32); its probabilities are rounded to the input dtype for the
    # product with the values, and so are the kernel's. On a GPU both dots run in the input
    # dtype (its tensor cores); under the interpreter, in float32 on the rounded values.
    half, gpu = dt in ("tl.float16", "tl.bfloat16"), target == "gpu"
    widen = "" if half and gpu else ".to(tl.float32)"
    precision = "" if half and gpu else ", input_precision='ieee'"
    if not half:
        probabilities = "p"
    elif gpu:
        probabilities = f"p.to({dt})"  # to nearest even (cvt.rn)
    else:  # the interpreter's cast to bfloat16 truncates: the math table's rounding
        probabilities = math_table(target)[f"round_{dt.removeprefix('tl.')}"].format("p")
    imports = ["import triton.language as tl"] + (["from triton.language.extra import libdevice"] if target == "gpu" else [])
    return "\n".join([
        *imports, "", "",
        f"def {name}({', '.join(params)}):",
        "    pid_m = tl.program_id(0)",
        "    bh = tl.program_id(1)",
        "    b = bh // HQ",
        "    h = bh % HQ",
        "    hk = h // G",
        f"    offs_m = pid_m * {block_m} + tl.arange(0, {block_m})",
        f"    offs_d = tl.arange(0, {dpad})",
        f"    offs_dv = tl.arange(0, {dvpad})",
        "    m = offs_m[:, None]",
        "    row_ok = m < M",
        "    q_base = b.to(tl.int64) * sq0 + h.to(tl.int64) * sq1",
        "    k_base = b.to(tl.int64) * sk0 + hk.to(tl.int64) * sk1",
        "    v_base = b.to(tl.int64) * sv0 + hk.to(tl.int64) * sv1",
        f"    q = tl.load(Q + q_base + m.to(tl.int64) * sq2 + offs_d[None, :] * sq3, mask=row_ok & (offs_d[None, :] < {d}),"
        f" other=0.0){widen}",
        f"    m_i = tl.full([{block_m}], float('-inf'), tl.float32)",
        f"    l_i = tl.full([{block_m}], 0.0, tl.float32)",
        f"    acc = tl.full([{block_m}, {dvpad}], 0.0, tl.float32)",
        f"    for start in range(0, N, {block_n}):",
        f"        n = start + tl.arange(0, {block_n})[None, :]",
        "        valid = row_ok & (n < N)",
        f"        k = tl.load(K + k_base + n.to(tl.int64) * sk2 + offs_d[:, None] * sk3, mask=(n < N) & (offs_d[:, None] < {d}),"
        f" other=0.0){widen}",
        f"        qk = tl.dot(q, k{precision}) * SCALE  # float32 scores, as eager's",
        *(f"        {line}" for line in body),
        f"        keep = valid & ({mask_out} != 0)",
        f"        scores = tl.where(keep, {score_out} + tl.full([{block_m}, {block_n}], 0.0, tl.float32), float('-inf'))",
        f"        m_new = tl.maximum(m_i, {row_max.format('scores')})",
        "        base = tl.where(m_new == float('-inf'), 0.0, m_new)  # a row masked so far: nothing to scale",
        "        alpha = tl.exp(m_i - base)",
        "        p = tl.exp(scores - base[:, None])",
        f"        l_i = l_i * alpha + {row_sum.format('p')}",
        f"        v = tl.load(V + v_base + tl.trans(n).to(tl.int64) * sv2 + offs_dv[None, :] * sv3,"
        f" mask=(tl.trans(n) < N) & (offs_dv[None, :] < {dv}), other=0.0){widen}",
        f"        acc = acc * alpha[:, None] + tl.dot({probabilities}, v{precision})",
        "        m_i = m_new",
        "    # a row whose every key is masked: eager's safe softmax gives zeros, its logsumexp and max -inf",
        f"    out = {divide.format('acc', 'tl.where(l_i == 0.0, 1.0, l_i)[:, None]')}",
        f"    lse = {divide.format(log_sum, ln2)}",
        "    rows = offs_m < M",
        "    o_base = b.to(tl.int64) * so0 + h.to(tl.int64) * so1",
        f"    tl.store(OUT + o_base + m.to(tl.int64) * so2 + offs_dv[None, :] * so3, ({stored}).to({dt}),"
        f" mask=row_ok & (offs_dv[None, :] < {dv}))",
        "    lse_at = bh.to(tl.int64) * M + offs_m",
        "    tl.store(LSE + lse_at, lse, mask=rows)",
        f"    tl.store(MAXS + lse_at, {divide.format('m_i', ln2)}, mask=rows)",
        "",
    ])

