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
-inf. The loop visits the key blocks the block mask lists for a program's query block (its
partial blocks, then its full ones, where mask_mod holds everywhere and is not applied), as
Inductor's kernel does, where the mask's blocks are multiples of the kernel's; every key
block otherwise. Eager's math ignores the lists and applies mask_mod to every score: with
lists made from the mask_mod (create_block_mask) a block left out holds only masked
scores, whose terms are exactly 0, so the result is eager's either way (up to the order of
the sums). Half precision as eager: the scores float32 (a dot in the input dtype
accumulating in float32 on a GPU: the products are exact), the probabilities rounded to
the input dtype for their product with the values (unnormalized here, normalized in
eager: within the dtype's rounding of eager's, not bitwise). The backward
(`flex_attention_backward`) stays eager's. On a GPU, where the programs would be few
(decoding), the keys of a row block are split among several (split_keys) and a second
kernel combines their pieces. The source: codegen/flex_source.py.
"""
from __future__ import annotations

import functools
import math
import operator
import warnings
from typing import Any

import torch
import torch.fx

from .. import _torch_compat as compat
from ..lowering.decisions import FLEX_REJECTED as REJECTED
from ..report import COUNTERS
from ..runtime import gpu_launch_options, load_kernel
from .flex_source import COMBINE_PARAMS, INTS, LIST_DIMS, kernel_source, padded
from .flex_subgraphs import NotTranslated, Translator, buffer_kind
from .triton import SIGNATURE_DTYPE, TL_DTYPE, target_for

FLEX_ATTENTION = torch.ops.higher_order.flex_attention

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_BLOCKS = {"interpreter": (16, 32), "gpu": (64, 32)}  # (BLOCK_M, BLOCK_N)
# the block mask's tuple, as the op takes it (BlockMask.as_tuple): where its key-block lists
# (per batch, head and query block: how many, and which) and its block sizes are
_LISTS = {"KV_NUM": 2, "KV_IDX": 3, "FULL_NUM": 4, "FULL_IDX": 5}
_Q_BLOCK, _KV_BLOCK = -3, -2


def lower_flex_attention(gm: torch.fx.GraphModule, selected: Any, device_type: str) -> None:
    """Each selected flex_attention node of gm: its target a FlexAttentionKernel, or
    node.meta[REJECTED] why not. `selected(node)`: chosen for compilation."""
    index = 0
    for node in gm.graph.nodes:
        if node.target is not FLEX_ATTENTION or not selected(node):
            continue
        try:
            kernel = FlexAttentionKernel(f"flex_attention_{index}", node, gm, device_type)
            node.target = kernel
            index += 1
            # the block mask as the kernel takes it: the key-block lists it visits (none: it
            # visits every block) and the mask_mod; what computed the others goes where
            # nothing else reads it
            block_mask = node.args[4]
            kept = [block_mask[_LISTS[name]] for name in kernel.lists]
            node.args = (*node.args[:4], (*kept, block_mask[-1]), *node.args[5:])
            _erase_unread(gm, [a for a in block_mask[:-1] if isinstance(a, torch.fx.Node) and a not in kept])
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
        query, key, value, score_mod, block_mask, _, kernel_options, score_buffers, mask_buffers = node.args
        vals = [a.meta.get("val") for a in (query, key, value)]
        if not all(isinstance(v, torch.Tensor) and v.dim() == 4 and v.dtype in _DTYPES for v in vals):
            raise NotTranslated("query, key and value must be 4-d float32, float16 or bfloat16 tensors")
        if len({v.dtype for v in vals}) != 1:
            raise NotTranslated(f"query, key and value of different dtypes ({', '.join(str(v.dtype) for v in vals)})")
        self.__name__, self.dtype, self.device_type = name, vals[0].dtype, device_type
        self.buffers = [buffer_kind(b) for b in (*score_buffers, *mask_buffers)]
        score_sub, mask_sub = getattr(gm, score_mod.target), getattr(gm, block_mask[-1].target)
        n_score = len(score_buffers)
        buffer_names = [f"buf{j}" for j in range(len(self.buffers))]
        score = Translator("s", ["qk", "b", "h", "m", "n", *buffer_names[:n_score]], self.buffers[:n_score], target_for(device_type))
        mask = Translator("k", ["b", "h", "m", "n", *buffer_names[n_score:]], self.buffers[n_score:], target_for(device_type),
                           offset=n_score)
        score_lines, score_out = score.run(score_sub, vals[0].device)
        mask_lines, mask_out = mask.run(mask_sub, vals[0].device)
        (self.block_m, self.block_n), unused = _blocks(kernel_options, target_for(device_type))
        # the kernel is compiled for its head dims and block sizes: symbolic ones (dynamic=True)
        # are specialized, a guard on each, as Inductor's flex kernel specializes them
        d, dv = (compat.specialized_int(x) for x in (vals[0].shape[-1], vals[2].shape[-1]))
        self.q_block, self.kv_block = (compat.specialized_int(b.meta["val"] if isinstance(b, torch.fx.Node) else b)
                                       for b in (block_mask[_Q_BLOCK], block_mask[_KV_BLOCK]))
        self.lists, self.sparsity = _block_lists(block_mask, self.q_block, self.kv_block, self.block_m, self.block_n)
        self.source = kernel_source(name, d, dv, self.block_m, self.block_n, self.buffers, score_lines, score_out, mask_lines,
                                    mask_out, TL_DTYPE[self.dtype], target_for(device_type), (self.lists, self.q_block, self.kv_block))
        self.checks_bounds = score.indexes or mask.indexes
        self.dvpad = padded(dv)
        try:
            self.kernel = load_kernel(name, self.source, device_type, self._signature(), self.checks_bounds)
            self.combine = load_kernel(f"{name}_combine", self.source, device_type, self._combine_signature())
        except NotTranslated:
            raise
        except Exception as exc:  # noqa: BLE001  (generated code that does not compile: eager's op, said so)
            warnings.warn(f"xpu_lite: {name} failed to compile: {type(exc).__name__}: {exc}; flex attention runs eagerly",
                          stacklevel=2)
            raise NotTranslated(f"its kernel failed to compile ({type(exc).__name__}: {exc})") from None
        COUNTERS.kernels_compiled += 1
        # as the wrapper launches its kernels (the options compile_ahead compiled it with)
        self.options = {} if device_type == "cpu" else gpu_launch_options(self.checks_bounds, device_type)
        self.combine_options = {} if device_type == "cpu" else gpu_launch_options(False, device_type)  # it asserts nothing
        self.label = (f"{name} (flex attention: score_mod and mask_mod inlined, {self.block_m} query rows per program, "
                      f"online softmax over {self.block_n}-key blocks, {self.sparsity}"
                      + (f"; kernel_options not used: {', '.join(unused)})" if unused else ")"))

    def _combine_signature(self) -> dict[str, str]:
        floats = {"WS": "*fp32", "LSE": "*fp32", "MAXS": "*fp32", "OUT": f"*{SIGNATURE_DTYPE[self.dtype]}"}
        return {p: floats.get(p, "i64") for p in COMBINE_PARAMS}

    def _signature(self) -> dict[str, str]:
        pointer = f"*{SIGNATURE_DTYPE[self.dtype]}"
        signature = {"Q": pointer, "K": pointer, "V": pointer, "OUT": pointer, "LSE": "*fp32", "MAXS": "*fp32", "WS": "*fp32"}
        for j, (kind, dtype, ndim) in enumerate(self.buffers):
            if kind == "tensor":
                signature[f"buf{j}"] = f"*{SIGNATURE_DTYPE[dtype]}"
                signature.update({f"buf{j}_{what}{d}": "i64" for what in ("size", "stride") for d in range(ndim)})
            else:
                signature[f"buf{j}"] = "i64"
        for name in self.lists:
            signature[name] = "*i32"
            signature.update({f"{name}_stride{d}": "i64" for d in range(LIST_DIMS[name])})
        signature.update({name: "i64" for name in (*INTS, "SPLITS")})
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
        lists: list[Any] = []
        for name, block_list in zip(self.lists, block_mask):
            lists += [block_list, *_list_strides(name, block_list, batch, heads, -(-rows // self.q_block))]
        shared = key.size(0) == 1 and batch > 1  # one key/value batch for every query batch
        ints = [rows, key.size(2), heads, heads // key.size(1), *query.stride(),
                *(0 if shared and d == 0 else s for d, s in enumerate(key.stride())),
                *(0 if shared and d == 0 else s for d, s in enumerate(value.stride())), *out.stride()]
        row_blocks = (rows + self.block_m - 1) // self.block_m
        splits = split_keys(query.device, row_blocks * batch * heads, -(-key.size(2) // self.block_n))
        # one split writes no pieces: any float32 pointer will do (the output's lse)
        workspace = lse if splits == 1 else torch.empty(batch * heads * splits * rows * (self.dvpad + 2), dtype=torch.float32,
                                                        device=query.device)
        self.kernel[(row_blocks, batch * heads, splits)](query, key, value, out, lse, maxs, workspace, *buffers, *lists, *ints,
                                                          splits, float(scale), **self.options)
        COUNTERS.kernel_launches += 1
        if splits > 1:
            self.combine[(row_blocks, batch * heads)](workspace, out, lse, maxs, rows, heads, splits, *out.stride(),
                                                       **self.combine_options)
            COUNTERS.kernel_launches += 1
        return out, lse, maxs


# kernel_options flex_attention fills in, at their defaults; what the op returns (the kernel
# computes both) and the backward's: nothing for the forward kernel to use
_OPTION_DEFAULTS = {"BACKEND": "AUTO", "PRESCALE_QK": False, "ROWS_GUARANTEED_SAFE": False, "BLOCKS_ARE_CONTIGUOUS": False}
_OPTIONS_MOOT = ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX", "WRITE_DQ")


def split_keys(device: torch.device, programs: int, key_blocks: int) -> int:
    """How many programs share a row block's keys. On a GPU, where the programs of the row
    blocks, batches and heads would leave most of its multiprocessors idle (decoding: one
    query row per head), up to 16, each with 4 key blocks or more: flash decoding, the
    combine kernel weighs their pieces. On cpu 1 (the interpreter runs programs in turn)."""
    if device.type == "cpu":
        return 1
    wanted = -(-2 * _multiprocessors(device.type, device.index) // programs)
    return max(1, min(wanted, key_blocks // 4, 16))


@functools.lru_cache(maxsize=None)
def _multiprocessors(device_type: str, index: int | None) -> int:
    if device_type == "xpu":
        return torch.xpu.get_device_properties(index).gpu_subslice_count
    return torch.cuda.get_device_properties(index).multi_processor_count


def _blocks(kernel_options: Any, target: str) -> tuple[tuple[int, int], list[str]]:
    """(BLOCK_M, BLOCK_N): kernel_options' where they are powers of 2 from 16 (tl.dot's
    least), else the target's; and the options the kernel does not use, as `KEY=value`."""
    blocks, unused = dict(zip(("BLOCK_M", "BLOCK_N"), _BLOCKS[target])), []
    for key, value in (kernel_options or {}).items():
        if key in blocks and type(value) is int and value >= 16 and value & (value - 1) == 0:
            blocks[key] = value
        elif key not in _OPTIONS_MOOT and not (key in _OPTION_DEFAULTS and _OPTION_DEFAULTS[key] == value):
            unused.append(f"{key}={value!r}")
    return (blocks["BLOCK_M"], blocks["BLOCK_N"]), unused
_NO_MASK_BLOCK = 1 << 30  # the block size of the mask flex_attention makes where it is given none


def _block_lists(block_mask: tuple[Any, ...], q_block: Any, kv_block: Any, block_m: int, block_n: int) -> tuple[tuple[str, ...], str]:
    """The block mask's lists the kernel reads (("KV_NUM", "KV_IDX") and the full blocks'
    ("FULL_NUM", "FULL_IDX") where it has them), and what that means for the label. A
    program's query rows must lie in one of the mask's query blocks and the key blocks of
    the loop tile the mask's: otherwise it visits every key block."""
    if isinstance(q_block, int) and q_block >= _NO_MASK_BLOCK:  # flex_attention's own, one block of all keys
        return (), "every key block (no block mask)"
    if not (isinstance(q_block, int) and isinstance(kv_block, int) and q_block % block_m == 0 and kv_block % block_n == 0):
        return (), (f"every key block: the block mask's blocks ({q_block}, {kv_block}) are not multiples of the "
                    f"kernel's ({block_m}, {block_n})")
    present = [name for name, at in _LISTS.items() if isinstance(block_mask[at], torch.fx.Node)]
    if present[:2] != ["KV_NUM", "KV_IDX"] or len(present) not in (2, 4):
        return (), "every key block: the block mask has no key-block lists"
    return tuple(present), "the block mask's nonempty key blocks only"


def _list_strides(name: str, block_list: torch.Tensor, batch: int, heads: int, q_blocks: int) -> list[int]:
    """A block list's strides as the kernel reads it, 0 along a batch or head dim of size 1
    (one list for every batch or head). Lists that do not cover this call's query blocks,
    batches and heads are refused (the kernel would read past them)."""
    shape = block_list.shape
    if block_list.dim() != LIST_DIMS[name] or shape[0] not in (1, batch) or shape[1] not in (1, heads) or shape[2] < q_blocks:
        raise RuntimeError(f"flex attention: the block mask's {name.lower()} list has shape {tuple(shape)}, which does not "
                           f"cover batch {batch}, {heads} heads and {q_blocks} query blocks")
    return [0 if d < 2 and shape[d] == 1 else stride for d, stride in enumerate(block_list.stride())]


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
