"""flex attention's forward as one Triton kernel (codegen/flex_attention.py), against eager's
dense math and a float64 run of it."""
from __future__ import annotations

import pytest
import torch
from torch.nn.attention.flex_attention import AuxRequest, BlockMask, create_block_mask, flex_attention

import xpu_lite
from xpu_lite.codegen import flex_attention as flex_module
from xpu_lite.report import capture

from .conftest import assert_bitwise

triton = pytest.importorskip("triton")
# eager's reference calls: "flex_attention called without torch.compile() - this will use an unfused implementation"
pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")

_BIAS = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))


def _causal(score, b, h, q, kv):
    return torch.where(q >= kv, score, -float("inf"))


def _softcap(score, b, h, q, kv):
    return 30 * torch.tanh(score / 30)


def _head_bias(score, b, h, q, kv):  # a captured tensor read at computed positions
    return score + _BIAS.to(score.device)[h, (q - kv).abs()]


def _alibi(score, b, h, q, kv):
    return score - (h + 1) * 0.25 * (q - kv).abs()


def _first_rows_masked(score, b, h, q, kv):  # rows 0-2 have no key: zeros and -inf, as eager
    return torch.where(q < 3, -float("inf"), score)


def _chunked(score, b, h, q, kv):  # chunked attention (q // 8 == kv // 8), a remainder and a clamp
    keep = (q // 8 == kv // 8) & (kv % 3 != 1)
    return torch.where(keep, score - torch.clamp(q - kv, min=0, max=5) * 0.1, -float("inf"))


def _functions(score, b, h, q, kv):  # float functions of the score, of indices and of the head (a scalar); powers
    bias = torch.log1p((q - kv).abs()) + torch.sign(q - kv) * torch.atan2(h + 1.0, score) + ((q - kv) ** 2) * 1e-3
    return torch.sin(score) + torch.erf(score) * torch.exp2(-score.abs()) + score.abs() ** 1.7 + torch.floor(score * 3) - bias


_TEMPERATURE = torch.tensor(0.75)


def _captured_scalars(score, b, h, q, kv):  # a captured 0-dim tensor read whole; an int index beside a tensor one; scalar ones
    return score * _TEMPERATURE.to(score.device) + _BIAS.to(score.device)[h, 5] - _BIAS.to(score.device)[b, h]


SCORE_MODS = {f.__name__.lstrip("_"): f for f in (_causal, _softcap, _head_bias, _alibi, _first_rows_masked, _chunked,
                                                   _functions, _captured_scalars)}


def _attention(score_mod, q, k, v, gqa=False, window=None, mask=None):
    if window is not None:  # mask_mod through a block mask
        mask = create_block_mask(lambda b, h, qi, ki: (ki <= qi) & (qi - ki < window), None, None, q.shape[2], k.shape[2],
                                 device=q.device.type)
    out, aux = flex_attention(q, k, v, score_mod=score_mod, block_mask=mask, enable_gqa=gqa,
                              return_aux=AuxRequest(lse=True))
    return out, aux.lse


def _inputs(device, dtype, length, heads=4, kv_heads=4, d=16, transposed=False):
    if transposed:  # (B, L, H, D) transposed: the output follows the query's strides
        q = torch.randn(2, length, heads, d).transpose(1, 2)
        k, v = (torch.randn(2, length + 3, kv_heads, d).transpose(1, 2) for _ in range(2))
    else:
        q = torch.randn(2, heads, length, d)
        k, v = (torch.randn(2, kv_heads, length + 3, d) for _ in range(2))
    return [t.to(device=device, dtype=dtype) for t in (q, k, v)]


def _check_against_float64(compiled, fn, inputs) -> None:
    """Ours no further from a float64 run than twice eager's error (and 2e-6): the output
    and the logsumexp, with eager's strides, dtypes and fully masked rows."""
    actual, expected = compiled(*inputs), fn(*inputs)
    reference = fn(*(t.double() for t in inputs))
    for a, e, r in zip(actual, expected, reference):
        assert a.shape == e.shape and a.dtype == e.dtype and a.stride() == e.stride()
        finite = torch.isfinite(r)
        assert torch.equal(torch.isfinite(a), finite) and torch.equal(a[~finite], e[~finite])
        ours, eagers = ((x.double() - r)[finite].abs().max().item() for x in (a, e))
        assert ours <= 2 * eagers + 2e-6, (ours, eagers)


@pytest.mark.parametrize("score_mod", SCORE_MODS)
def test_flex_attention_is_one_kernel(device: str, score_mod: str) -> None:
    """One graph for every sequence length, the op one Triton kernel (its decision says
    so), in float32 and bfloat16; for the causal one also with grouped-query heads, a head
    dim that is not a power of 2 and a transposed layout (the interpreter is slow)."""
    fn = SCORE_MODS[score_mod]
    cases = [dict(), dict(dtype=torch.bfloat16)]
    if score_mod == "causal":
        cases += [dict(kv_heads=2), dict(d=24), dict(transposed=True)]
    for case in cases:
        torch._dynamo.reset()
        xpu_lite.reset_counters()
        attention = lambda q, k, v: _attention(fn, q, k, v, gqa=case.get("kv_heads") == 2)  # noqa: E731
        with capture() as reports:
            compiled = torch.compile(attention, backend="xpu_lite", dynamic=True)
            for length in (20, 37):
                dtype = case.get("dtype", torch.float32)
                _check_against_float64(compiled, attention, _inputs(device, dtype, length, **{k: v for k, v in case.items()
                                                                                            if k != "dtype"}))
        assert xpu_lite.counters.forward_graphs == 1, case
        rows = [row for report in reports for row in report.rows() if row[3] == "template"]
        assert len(rows) == 1 and "flex_attention_0 (flex attention: score_mod and mask_mod inlined" in rows[0][4], rows


_LENGTHS = torch.tensor([15, 9])


def test_flex_attention_padding_masks_and_captured_sizes(device: str) -> None:
    """Padding masks, the most common flex masks: `kv < lengths[b]` reads a captured tensor
    at a scalar position (the batch), as a score_mod and as a block mask's mask_mod, and a
    captured size expression (`k.shape[2] - 3`, a SymInt under dynamic=True) with a score
    made from `zeros_like`. Each inlined and against float64. Before, the first two failed
    at the call (a scalar pointer loaded under the block's mask: "Mask argument cannot be
    block type if pointer argument is not a block"); the last kept eager's op."""
    lengths = _LENGTHS.to(device)

    def by_score(q, k, v):
        return _attention(lambda score, b, h, qi, ki: torch.where(ki < lengths[b], score, -float("inf")), q, k, v)

    def by_block_mask(q, k, v):
        mask = create_block_mask(lambda b, h, qi, ki: ki < lengths[b], 2, None, q.shape[2], k.shape[2], device=q.device.type)
        return _attention(None, q, k, v, mask=mask)

    def by_size(q, k, v):
        return _attention(lambda score, b, h, qi, ki: torch.where(ki < k.shape[2] - 3, torch.zeros_like(score) + qi * 0.1, score),
                          q, k, v)

    for fn in (by_score, by_block_mask, by_size):
        torch._dynamo.reset()
        with capture() as reports:
            _check_against_float64(torch.compile(fn, backend="xpu_lite", dynamic=True), fn, _inputs(device, torch.float32, 20))
        rows = [row for report in reports for row in report.rows() if row[2] == "flex_attention"]
        assert [row[3] for row in rows] == ["template"], (fn.__name__, rows)


def test_flex_attention_mask_mod_of_ints_raises_eagers_error(device: str) -> None:
    """A mask_mod that gives ints is an error of flex attention's own ("mask.dtype must be
    torch.bool"), compiled as in eager. Its trace holds a `_to_copy` of a Python int, on
    which the cast's lowering checker raised an AttributeError inside the compile."""
    def attention(q, k, v):
        ints = lambda b, h, qi, ki: (ki <= qi).to(torch.int32) * 0 + (ki <= qi)  # noqa: E731
        mask = create_block_mask(ints, None, None, q.shape[2], k.shape[2], device=q.device.type)
        return flex_attention(q, k, v, block_mask=mask)

    inputs = _inputs(device, torch.float32, 20)
    with pytest.raises(AssertionError, match="mask.dtype must be torch.bool, got torch.int32"):
        attention(*inputs)
    with pytest.raises(AssertionError, match="mask.dtype must be torch.bool, got torch.int32"):
        torch.compile(attention, backend="xpu_lite", dynamic=True)(*inputs)


def test_flex_attention_mask_mod_and_region(device: str) -> None:
    """A block mask's mask_mod, inlined: in the default mode, and in lite mode inside a
    compile region only (outside one it stays eager's op, bitwise)."""
    def windowed(q, k, v):
        return _attention(None, q, k, v, window=7)

    def in_region(q, k, v):
        with xpu_lite.compile_region():
            return windowed(q, k, v)

    _check_against_float64(torch.compile(windowed, backend="xpu_lite", dynamic=True), windowed, _inputs(device, torch.float32, 33))
    torch._dynamo.reset()
    with capture() as reports:
        _check_against_float64(torch.compile(in_region, backend="xpu_lite", mode="lite", dynamic=True), windowed,
                               _inputs(device, torch.float32, 33))
    assert any(row[3] == "template" for report in reports for row in report.rows())
    torch._dynamo.reset()
    inputs = _inputs(device, torch.float32, 33)
    assert_bitwise(list(torch.compile(windowed, backend="xpu_lite", mode="lite", dynamic=True)(*inputs)), list(windowed(*inputs)))


def _windowed(b, h, q, kv):
    return (kv <= q) & (q - kv < 20)


def _masked(q, k, v, mask):
    return flex_attention(q, k, v, block_mask=mask)


def test_flex_attention_visits_the_block_masks_nonempty_blocks(device: str) -> None:
    """Where the block mask's blocks are multiples of the kernel's, the loop visits the key
    blocks its lists name for each query block, partial and full (a sliding window: 2 of 3
    per query block), lists shared by every batch and head or one per batch and head: eager's
    result. Blocks of 8: every key block. A list that leaves out a block mask_mod allows:
    the block is skipped; a block listed as full: mask_mod is not applied there; both as in
    Inductor's kernel (eager's math reads no lists)."""
    q = torch.randn(2, 4, 96, 16, device=device)
    k, v = (torch.randn(2, 4, 70, 16, device=device) for _ in range(2))
    per_head = create_block_mask(lambda b, h, qi, ki: ki <= qi + b + h, 2, 4, 96, 70, device=device, BLOCK_SIZE=(32, 64))
    cases = {"shared": (create_block_mask(_windowed, None, None, 96, 70, device=device, BLOCK_SIZE=(16, 32)), "nonempty"),
             "per_head": (per_head, "nonempty"),
             "blocks_of_8": (create_block_mask(_windowed, None, None, 96, 70, device=device, BLOCK_SIZE=8), "every key block")}
    for name, (mask, visits) in cases.items():
        torch._dynamo.reset()
        with capture() as reports:
            _check_against_float64(lambda *t: torch.compile(_attention, backend="xpu_lite")(None, *t, mask=mask),
                                   lambda *t: _attention(None, *t, mask=mask), [q, k, v])
        [label] = [row[4] for report in reports for row in report.rows() if row[3] == "template"]
        assert visits in label, (name, label)
    # query block 3 (rows 48-63) lists no key block; the others one each
    listed = torch.tensor([[[1, 1, 1, 0, 1, 1]]], dtype=torch.int32, device=device)
    indices = torch.zeros(1, 1, 6, 3, dtype=torch.int32, device=device)
    indices[..., 0] = torch.tensor([0, 0, 1, 1, 2, 2])
    partial = BlockMask.from_kv_blocks(listed, indices, BLOCK_SIZE=(16, 32), seq_lengths=(96, 70))
    torch._dynamo.reset()
    actual = torch.compile(_masked, backend="xpu_lite")(q, k, v, partial)
    block_of = torch.tensor([0, 0, 1, 1, 2, 2], device=device)
    same = create_block_mask(lambda b, h, qi, ki: (qi // 16 != 3) & (ki // 32 == block_of[qi // 16]), None, None, 96, 70,
                             device=device)
    expected = _masked(q, k, v, same)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)
    assert torch.equal(actual[:, :, 48:64], torch.zeros_like(actual[:, :, 48:64]))
    # the same blocks listed as full: mask_mod holds there by the mask's contract and is not
    # applied (this one masks every score, which eager's math applies: its output is zeros)
    none = torch.zeros_like(listed)
    full = BlockMask.from_kv_blocks(none, indices, listed, indices, BLOCK_SIZE=(16, 32), seq_lengths=(96, 70),
                                    mask_mod=lambda b, h, qi, ki: qi < 0)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(_masked, backend="xpu_lite")(q, k, v, full), expected, rtol=1e-5, atol=1e-6)


def test_flex_attention_compiled_with_dynamic_block_sizes_and_head_dims(device: str) -> None:
    """`torch.compile(flex_attention, dynamic=True)`: the block mask's block sizes and the
    head dims come as symbols; the kernel is compiled for their values, each guarded (as
    Inductor's flex kernel guards them), so it still visits the listed blocks and another
    block size or head dim compiles again: every result eager's."""
    compiled = torch.compile(flex_attention, backend="xpu_lite", dynamic=True)
    labels = []
    for length, blocks, d in ((40, (16, 32), 16), (40, (32, 64), 16), (40, (32, 64), 24)):
        q, k, v = (torch.randn(1, 2, length, d, device=device) for _ in range(3))
        mask = create_block_mask(_windowed, None, None, length, length, device=device, BLOCK_SIZE=blocks)
        with capture() as reports:
            actual = compiled(q, k, v, block_mask=mask)
        torch.testing.assert_close(actual, _masked(q, k, v, mask), rtol=1e-5, atol=1e-6)
        labels += [row[4] for report in reports for row in report.rows() if row[3] == "template"]
    assert len(labels) == 3 and all("nonempty key blocks only" in label for label in labels), labels


def test_flex_attention_kernel_options(device: str) -> None:
    """kernel_options' BLOCK_M and BLOCK_N (powers of 2 from 16) size the kernel's blocks;
    what it does not use is named in explain (BLOCK_M=24, num_warps, PRESCALE_QK=True)."""
    q = torch.randn(1, 2, 70, 16, device=device)
    mask = create_block_mask(_windowed, None, None, 70, 70, device=device, BLOCK_SIZE=(32, 64))
    cases = [({"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 8}, "32 query rows per program, online softmax over 16-key blocks",
              "kernel_options not used: num_warps=8)"),
             ({"BLOCK_M": 24, "PRESCALE_QK": True}, "over 32-key blocks", "kernel_options not used: BLOCK_M=24, PRESCALE_QK=True)")]
    for options, blocks, unused in cases:
        torch._dynamo.reset()
        with capture() as reports:
            actual = torch.compile(lambda q: flex_attention(q, q, q, block_mask=mask, kernel_options=options), backend="xpu_lite")(q)
        torch.testing.assert_close(actual, _masked(q, q, q, mask), rtol=1e-5, atol=1e-6)
        [label] = [row[4] for report in reports for row in report.rows() if row[3] == "template"]
        assert blocks in label and "nonempty key blocks only" in label and label.endswith(unused), label


@pytest.mark.parametrize("splits", [3, 5])
def test_flex_attention_keys_split_among_programs(device: str, monkeypatch, splits: int) -> None:
    """Flash decoding, forced (on a GPU split_keys picks it where few programs would run): each
    of `splits` programs per row block takes a share of the keys (every block, or the
    listed ones) and the combine kernel weighs their pieces. Eager's result, fully masked
    rows included; 5 splits of 2 key blocks leave some with no keys."""
    monkeypatch.setattr(flex_module, "split_keys", lambda device, programs, key_blocks: splits)
    for fn, dtype in ((_causal, torch.float32), (_first_rows_masked, torch.bfloat16)):
        torch._dynamo.reset()
        xpu_lite.reset_counters()
        attention = lambda q, k, v: _attention(fn, q, k, v)  # noqa: E731
        _check_against_float64(torch.compile(attention, backend="xpu_lite"), attention, _inputs(device, dtype, 37))
        assert xpu_lite.counters.kernel_launches >= 2  # the kernel and its combine
    q, k, v = (torch.randn(1, 2, 96, 16, device=device) for _ in range(3))
    mask = create_block_mask(_windowed, None, None, 96, 96, device=device, BLOCK_SIZE=(16, 32))
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(_masked, backend="xpu_lite")(q, k, v, mask), _masked(q, k, v, mask),
                               rtol=1e-5, atol=1e-6)


def test_split_keys_fills_the_gpu_only_where_programs_are_few(monkeypatch) -> None:
    """1 on cpu; on a GPU of 132 multiprocessors: enough splits for two programs per
    multiprocessor, at most 16, each of 4 key blocks or more; 1 where the programs fill it."""
    monkeypatch.setattr(flex_module, "_multiprocessors", lambda device_type, index: 132)
    gpu = torch.device("cuda")
    assert flex_module.split_keys(torch.device("cpu"), 1, 1000) == 1
    assert flex_module.split_keys(gpu, 32, 256) == 9  # one decoding row, 32 heads: 264 / 32 programs
    assert flex_module.split_keys(gpu, 8, 1000) == 16
    assert flex_module.split_keys(gpu, 32, 8) == 2  # 8 key blocks: 4 each
    assert flex_module.split_keys(gpu, 1024, 256) == 1  # a prefill fills the GPU


def test_flex_attention_named_in_compile_ops_or_keep_ops(device: str) -> None:
    """Lite mode, `compile_ops=["higher_order.flex_attention"]`: compiled outside any region,
    its score_mod and mask_mod decomposed as in a region (`where.ScalarOther`, `new_ones`
    and `__and__` otherwise stay, which the kernel does not inline). The default mode,
    `keep_ops=[torch.ops.higher_order.flex_attention]`: eager's op, bitwise, with the reason."""
    def windowed(q, k, v):
        return _attention(_causal, q, k, v, window=7)

    inputs = _inputs(device, torch.float32, 20)
    with capture() as reports:
        _check_against_float64(torch.compile(windowed, backend="xpu_lite", dynamic=True,
                                             options={"mode": "lite", "compile_ops": ["higher_order.flex_attention"]}),
                               windowed, inputs)
    assert [row[3] for report in reports for row in report.rows() if row[2] == "flex_attention"] == ["template"]
    torch._dynamo.reset()
    with capture() as reports:
        actual = torch.compile(windowed, backend="xpu_lite", options={"keep_ops": [torch.ops.higher_order.flex_attention]})(*inputs)
    assert_bitwise(list(actual), list(windowed(*inputs)))
    reasons = [row[4] for report in reports for row in report.rows() if row[2] == "flex_attention"]
    assert reasons == ["kept op: keep_ops option"], reasons


@pytest.mark.parametrize("score_mod, why", [
    (lambda score, b, h, q, kv: score + torch.special.bessel_j0(score),
     "its subgraph calls aten.special_bessel_j0.default, which the flex attention kernel does not inline"),
    (lambda score, b, h, q, kv: score - ((q - kv) ** 3) * 1e-3, "an integer power 3 (of ints, squares are inlined)"),
    (lambda score, b, h, q, kv: score + _BIAS.to(score.device)[h][(q - kv).abs()],  # a row, then an element of it
     "it indexes something other than one element of a captured tensor"),
], ids=["bessel_j0", "cube_of_an_int", "row_of_a_captured_tensor"])
def test_flex_attention_score_mod_it_cannot_inline_stays_eager(device: str, score_mod, why: str) -> None:
    """What the kernel does not inline keeps eager's op, bitwise, with the reason."""
    def attention(q, k, v):
        return _attention(score_mod, q, k, v)

    inputs = _inputs(device, torch.float32, 20)
    with capture() as reports:
        actual = torch.compile(attention, backend="xpu_lite", dynamic=True)(*inputs)
    assert_bitwise(list(actual), list(attention(*inputs)))
    reasons = [row[4] for report in reports for row in report.rows() if row[2] == "flex_attention"]
    assert reasons == [f"no lowering: flex attention stays eager's (dense) math: {why}"], reasons


def test_flex_attention_kernel_compiles_for_cuda(monkeypatch) -> None:
    """The gpu source of each score_mod's kernel and its combine kernel, and of a windowed
    mask_mod's (its block lists read), through Triton's cuda pipeline (sm_90), as
    load_kernel compiles them on a GPU."""
    from xpu_lite import runtime

    from .test_gpu_codegen import _NO_CUDA_COMPILER, _cuda_target

    if _NO_CUDA_COMPILER is not None:
        pytest.skip(_NO_CUDA_COMPILER)
    sources = []

    def capture_source(name, source, device_type, signature, checks_bounds=False):
        sources.append((name, source, signature, checks_bounds))
        if name.endswith("_combine"):  # loaded after the kernel: the op then runs eagerly
            raise flex_module.NotTranslated("captured for the cuda compile")

    monkeypatch.setattr(flex_module, "target_for", lambda device_type: "gpu")
    monkeypatch.setattr(flex_module, "load_kernel", capture_source)
    for fn, window in [*((fn, None) for fn in SCORE_MODS.values()), (None, 7)]:  # the window's: its block lists read
        for dtype in (torch.float32, torch.bfloat16):
            torch._dynamo.reset()
            torch.compile(lambda q, k, v: _attention(fn, q, k, v, window=window), backend="xpu_lite", dynamic=True)(
                *_inputs("cpu", dtype, 20))
    assert len(sources) == 2 * (2 * len(SCORE_MODS) + 2) and all("KV_IDX" in source for _, source, _, _ in sources[-4:])
    for name, source, signature, checks_bounds in sources:
        jit = triton.jit(runtime.kernel_function(name, source))
        compiled = runtime.compile_ahead(jit, signature, _cuda_target(), checks_bounds=checks_bounds)
        assert compiled.asm["cubin"] and ".entry " + name in compiled.asm["ptx"], source


def test_flex_attention_kernel_that_fails_to_compile_runs_eagerly(monkeypatch) -> None:
    """A kernel Triton refuses: a warning, eager's op (bitwise) and the reason."""
    def refuse(*args, **kwargs):
        raise RuntimeError("refused by the test")

    monkeypatch.setattr(flex_module, "load_kernel", refuse)

    def attention(q, k, v):
        return _attention(_causal, q, k, v)

    inputs = _inputs("cpu", torch.float32, 20)
    with capture() as reports, pytest.warns(UserWarning, match="flex_attention_0 failed to compile: RuntimeError"):
        actual = torch.compile(attention, backend="xpu_lite", dynamic=True)(*inputs)
    assert_bitwise(list(actual), list(attention(*inputs)))
    reasons = [row[4] for report in reports for row in report.rows() if row[2] == "flex_attention"]
    assert reasons == ["no lowering: flex attention stays eager's (dense) math: its kernel failed to compile (RuntimeError: "
                       "refused by the test)"], reasons
