"""flex attention's kernel source (codegen/flex_attention.py builds and launches it): one
program per BLOCK_M query rows of one batch and head and per split of the keys, a loop over
its keys in BLOCK_N blocks with an online softmax, score_mod and mask_mod inlined
(codegen/flex_subgraphs.py). With one split the program writes the output; with more
(flash decoding: few query rows, many keys) each writes its running max, sum and
unnormalized output to a workspace, and `<name>_combine` weighs them into the output."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .reduction import ROW_COMBINE
from .triton import math_table

# the kernel's int arguments after the tensors: query rows, keys, query heads, query heads
# per key head, then the strides of the query, key, value and output
INTS = ("M", "N", "HQ", "G", *(f"{t}{d}" for t in ("sq", "sk", "sv", "so") for d in range(4)))
LIST_DIMS = {"KV_NUM": 3, "KV_IDX": 4, "FULL_NUM": 3, "FULL_IDX": 4}  # the block lists' dims


def _key_loop(sparse: tuple[tuple[str, ...], Any, Any], block_m: int, block_n: int,
              step: Callable[[bool], list[str]]) -> list[str]:
    """The loop over this program's keys (its split's share), `start` each block's first,
    around `step(masked)` (its lines one level in; masked: mask_mod applied): every block,
    or the key blocks the block mask lists for this program's query block, its partial ones,
    then its full ones, where mask_mod holds everywhere and is not applied (as in Inductor's
    kernel), each in blocks of block_n, the last cut at N."""
    lists, q_block, kv_block = sparse
    if not lists:
        return [f"    share = ((N + {block_n - 1}) // {block_n} + SPLITS - 1) // SPLITS * {block_n}  # this split's keys",
                f"    for start in range(split * share, tl.minimum(split * share + share, N), {block_n}):",
                *(f"    {line}" for line in step(True))]

    def at(name: str) -> str:
        return f"b.to(tl.int64) * {name}_stride0 + h.to(tl.int64) * {name}_stride1 + q_block * {name}_stride2"

    lines = [f"    q_block = ((pid_m * {block_m}) // {q_block}).to(tl.int64)  # the block mask's query block of these rows"]
    for count, indices, masked in (("KV_NUM", "KV_IDX", True), ("FULL_NUM", "FULL_IDX", False)):
        if count in lists:
            lines += [f"    listed = tl.load({count} + {at(count)}).to(tl.int64)  # its {'partial' if masked else 'full'} key blocks",
                      "    share = (listed + SPLITS - 1) // SPLITS  # this split's",
                      "    for j in range(split * share, tl.minimum(split * share + share, listed)):",
                      f"        first = tl.load({indices} + {at(indices)} + j * {indices}_stride3).to(tl.int64) * {kv_block}",
                      f"        for start in range(first, tl.minimum(first + {kv_block}, N), {block_n}):",
                      *(f"        {line}" for line in step(masked))]
    return lines


def padded(dim: int) -> int:
    """A head dim as the kernel's blocks hold it: the next power of 2, at least 16 (tl.dot's)."""
    return max(16, 1 << (dim - 1).bit_length())


def kernel_source(name: str, d: int, dv: int, block_m: int, block_n: int, buffers: list[tuple[str, Any, int]],
                  score_lines: list[str], score_out: str, mask_lines: list[str], mask_out: str, dt: str, target: str,
                  sparse: tuple[tuple[str, ...], Any, Any]) -> str:
    """sparse: (the block lists read, the block mask's query and key block sizes)."""
    dpad, dvpad = padded(d), padded(dv)
    params = ["Q", "K", "V", "OUT", "LSE", "MAXS", "WS"]
    for j, (kind, _, ndim) in enumerate(buffers):
        params.append(f"buf{j}")
        if kind == "tensor":
            params += [f"buf{j}_{what}{k}" for what in ("size", "stride") for k in range(ndim)]
    for block_list in sparse[0]:
        params += [block_list, *(f"{block_list}_stride{k}" for k in range(LIST_DIMS[block_list]))]
    params += [*INTS, "SPLITS", "SCALE"]
    row_max, row_sum = (ROW_COMBINE[target][op] for op in ("max", "sum"))
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

    def step(masked: bool) -> list[str]:  # one block of keys
        return [
            f"    n = start + tl.arange(0, {block_n})[None, :]",
            "    valid = row_ok & (n < N)",
            f"    k = tl.load(K + k_base + n.to(tl.int64) * sk2 + offs_d[:, None] * sk3, mask=(n < N) & (offs_d[:, None] < {d}),"
            f" other=0.0){widen}",
            f"    qk = tl.dot(q, k{precision}) * SCALE  # float32 scores, as eager's",
            *(f"    {line}" for line in (*score_lines, *(mask_lines if masked else ()))),
            f"    keep = valid & ({mask_out} != 0)" if masked else "    keep = valid",
            f"    scores = tl.where(keep, {score_out} + tl.full([{block_m}, {block_n}], 0.0, tl.float32), float('-inf'))",
            f"    m_new = tl.maximum(m_i, {row_max.format('scores')})",
            "    base = tl.where(m_new == float('-inf'), 0.0, m_new)  # a row masked so far: nothing to scale",
            "    alpha = tl.exp(m_i - base)",
            "    p = tl.exp(scores - base[:, None])",
            f"    l_i = l_i * alpha + {row_sum.format('p')}",
            f"    v = tl.load(V + v_base + tl.trans(n).to(tl.int64) * sv2 + offs_dv[None, :] * sv3,"
            f" mask=(tl.trans(n) < N) & (offs_dv[None, :] < {dv}), other=0.0){widen}",
            f"    acc = acc * alpha[:, None] + tl.dot({probabilities}, v{precision})",
            "    m_i = m_new",
        ]

    imports = ["import triton.language as tl"] + (["from triton.language.extra import libdevice"] if target == "gpu" else [])
    return "\n".join([
        *imports, "", "",
        f"def {name}({', '.join(params)}):",
        "    pid_m = tl.program_id(0)",
        "    bh = tl.program_id(1)",
        "    split = tl.program_id(2)",
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
        *_key_loop(sparse, block_m, block_n, step),
        "    rows = offs_m < M",
        "    if SPLITS == 1:",
        *(f"    {line}" for line in _epilogue(dt, dv, target)),
        f"    else:  # this split's running max, sum and unnormalized output, which {name}_combine weighs",
        f"        ws_at = ((bh.to(tl.int64) * SPLITS + split) * M + offs_m) * {dvpad + 2}",
        "        tl.store(WS + ws_at, m_i, mask=rows)",
        "        tl.store(WS + ws_at + 1, l_i, mask=rows)",
        "        tl.store(WS + ws_at[:, None] + 2 + offs_dv[None, :], acc, mask=row_ok)",
        "", "",
        *_combine(name, block_m, dvpad, dt, dv, target),
        "",
    ])



def _epilogue(dt: str, dv: int, target: str) -> list[str]:
    """Normalize and store (OUT, LSE, MAXS) from m_i, l_i, acc (relative to m_i): a row whose
    every key is masked gets eager's safe softmax's zeros and -inf logsumexp and max."""
    table = math_table(target)
    # to nearest even (the interpreter's own cast to bfloat16 truncates: the math table's form)
    stored = table["round_bfloat16"].format("out") if dt == "tl.bfloat16" else "out"
    divide = table["truediv"]  # correctly rounded, as eager's division (tl.div_rn on a GPU)
    ln2 = "tl.full([1], 0.6931471805599453, tl.float32)"  # eager divides by math.log(2) in float32
    log_sum = "tl.where(l_i == 0.0, float('-inf'), m_i + tl.log(l_i))"
    return [
        f"    out = {divide.format('acc', 'tl.where(l_i == 0.0, 1.0, l_i)[:, None]')}",
        f"    lse = {divide.format(log_sum, ln2)}",
        "    o_base = b.to(tl.int64) * so0 + h.to(tl.int64) * so1",
        f"    tl.store(OUT + o_base + m.to(tl.int64) * so2 + offs_dv[None, :] * so3, ({stored}).to({dt}),"
        f" mask=row_ok & (offs_dv[None, :] < {dv}))",
        "    lse_at = bh.to(tl.int64) * M + offs_m",
        "    tl.store(LSE + lse_at, lse, mask=rows)",
        f"    tl.store(MAXS + lse_at, {divide.format('m_i', ln2)}, mask=rows)",
    ]


COMBINE_PARAMS = ("WS", "OUT", "LSE", "MAXS", "M", "HQ", "SPLITS", "so0", "so1", "so2", "so3")


def _combine(name: str, block_m: int, dvpad: int, dt: str, dv: int, target: str) -> list[str]:
    """`<name>_combine`: per BLOCK_M rows of one batch and head, the splits' pieces weighed by
    exp(their max - the row's max), summed, normalized and stored as one program would."""
    at = f"((bh.to(tl.int64) * SPLITS + split) * M + offs_m) * {dvpad + 2}"
    return [
        f"def {name}_combine({', '.join(COMBINE_PARAMS)}):",
        "    pid_m = tl.program_id(0)",
        "    bh = tl.program_id(1)",
        "    b = bh // HQ",
        "    h = bh % HQ",
        f"    offs_m = pid_m * {block_m} + tl.arange(0, {block_m})",
        f"    offs_dv = tl.arange(0, {dvpad})",
        "    m = offs_m[:, None]",
        "    row_ok = m < M",
        "    rows = offs_m < M",
        f"    m_i = tl.full([{block_m}], float('-inf'), tl.float32)",
        "    for split in range(0, SPLITS):",
        f"        m_i = tl.maximum(m_i, tl.load(WS + {at}, mask=rows, other=float('-inf')))",
        "    base = tl.where(m_i == float('-inf'), 0.0, m_i)  # a row masked in every split: weights 0",
        f"    l_i = tl.full([{block_m}], 0.0, tl.float32)",
        f"    acc = tl.full([{block_m}, {dvpad}], 0.0, tl.float32)",
        "    for split in range(0, SPLITS):",
        f"        ws_at = {at}",
        "        weight = tl.exp(tl.load(WS + ws_at, mask=rows, other=float('-inf')) - base)",
        "        l_i = l_i + tl.load(WS + ws_at + 1, mask=rows, other=0.0) * weight",
        "        acc = acc + tl.load(WS + ws_at[:, None] + 2 + offs_dv[None, :], mask=row_ok, other=0.0) * weight[:, None]",
        *_epilogue(dt, dv, target),
    ]
