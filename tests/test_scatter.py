"""Kernels for ops that write values at positions loaded from an index tensor: index_put
(with and without accumulate), scatter (src and value) and scatter_add (lowering/
scatter.py), the backward of embedding, gather, indexing and nll_loss. The result gets a
buffer of its own (its input's where nothing else reads it, else a copy), then a kernel
stores or atomically adds each value at its position. On cpu the interpreter adds in index
order, so results are bitwise eager's, accumulation included; a position out of range
raises xpu_lite.IndexOutOfRange as eager raises. A scatter of one position per row into
a fill (nll_loss's gradient) is computed pointwise where it is read, its positions
asserted all the same.
"""
from __future__ import annotations

import dataclasses
import math
import re

import pytest
import sympy
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.lowering import DecisionKind, ir
from xpu_lite.lowering.scatter import ATOMIC_DTYPES
from xpu_lite.report import capture

from .conftest import assert_bitwise
from .test_gather import opinfo_decisions, raise_as_in_eager

OPINFOS = {"index_put": "aten.index_put.default", "scatter": "aten.scatter.src",
           "scatter_add": "aten.scatter_add.default"}
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]
SCATTERS = {"aten.index_put.default", "aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default"}


def _kernel_ops(reports) -> set[str]:
    return {d.op for r in reports for d in r.decisions if d.kind is DecisionKind.KERNEL}


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_samples_are_bitwise_eager(device: str, name: str, dtype: torch.dtype, where: str) -> None:
    # a GPU's atomic adds run in any order: float sums are compared within tolerance there;
    # on cpu bfloat16 adds are float32 atomics, as eager's cpu kernel adds (test_half_scatter_add...)
    exact = device == "cpu" or not dtype.is_floating_point or name != "scatter_add"
    rows = opinfo_decisions(name, OPINFOS[name], device, dtype, where, exact)
    if name == "scatter_add" and dtype not in ATOMIC_DTYPES and not (device == "cpu" and dtype == torch.bfloat16):
        assert rows and all("tl.atomic_add takes" in d.why() for d in rows), [d.why() for d in rows]
    else:
        assert any(d.kind is DecisionKind.KERNEL for d in rows), f"no sample of {name} was lowered to a kernel"


def scatters(x, i, v, g, s):
    return (x.index_put([i], v, accumulate=True) * 2,  # duplicate positions add in index order
            x.index_put([i], v),  # duplicates: which wins is unspecified; here and in eager the last
            (x + 1).scatter_add(1, g, s),  # writes into its input's own buffer: no copy
            torch.scatter(x, 1, g[:, :1], s),  # one position per row: scatter's duplicates are unspecified
            torch.ops.aten.index_put(x, [None, i[:2]], s[:, :2]),  # x[:, i] = s
            x.scatter(0, i[None, :3], -0.5))


def _inputs(n: int, device: str):
    i = torch.tensor([0, n - 1, 0, -1, 2, 0], device=device)  # repeats, a negative position
    g = torch.randint(0, n + 1, (n, 3), device=device)
    return (torch.randn(n, n + 1, device=device), i, torch.randn(6, n + 1, device=device), g,
            torch.randn(n, 4, device=device))


def test_one_kernel_source_per_op_for_all_sizes(device: str) -> None:
    compiled = torch.compile(scatters, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (7, 4, 10):  # 7 first: no two sizes equal (Dynamo would assume they stay so)
            args = _inputs(n, device)
            expected, out = scatters(*args), compiled(*args)
            if device == "cpu":
                assert_bitwise(out, expected)
            else:  # the adds of a GPU's atomics run in any order; of duplicate stores one wins
                torch.testing.assert_close(out[:1] + out[2:3], expected[:1] + expected[2:3])
                assert_bitwise(out[1][1:-1], expected[1][1:-1])  # i's duplicates: rows 0 and n - 1, each
                for row, writers in ((0, (0, 2, 5)), (-1, (1, 3))):  # element from one of its writers' rows of v
                    assert torch.stack([out[1][row] == args[2][r] for r in writers]).any(0).all(), (row, out[1][row])
                assert_bitwise(out[3:], expected[3:])
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    decisions = {d.node: d for d in reports[0].decisions}
    assert SCATTERS <= {d.op for d in decisions.values() if d.kind is DecisionKind.KERNEL}
    copies = [d for d in decisions.values() if "to scatter into" in d.note]
    assert len(copies) == 5, "each scatter of the graph input x writes a copy of it; scatter_add writes x + 1's own buffer"
    assert re.search(r"adds at loaded positions into add(_\d+)?'s buffer", decisions["scatter_add"].why())
    assert "adds at loaded positions into clone" in decisions["index_put"].why()
    sources = reports[0].kernels
    assert sum("tl.atomic_add(" in s for s in sources) == 2 and sum("store0_ok" in s for s in sources) == 6
    for source in sources:
        assert not re.search(r"\b(10|12|27|30)\b", source), f"a dynamic size was baked into the kernel:\n{source}"


def test_inputs_are_never_written_and_other_readers_see_the_input(device: str) -> None:
    def fn(x, i, v):
        y = x.abs()  # exact: the copy the first scatter writes must not change what sum reads
        return y.index_put([i], v), y.sum(0), x.index_put([i], v, accumulate=True)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    x, i, v = torch.randn(5, 3, device=device), torch.tensor([1, 3], device=device), torch.randn(2, 3, device=device)
    before = x.clone()
    out = compiled(x, i, v)
    assert_bitwise(x, before)
    expected = fn(x, i, v)
    assert_bitwise(out[0], expected[0])
    torch.testing.assert_close(out[1], expected[1])
    assert_bitwise(out[2], expected[2])


def test_training_gradients_through_scatters_are_kernels() -> None:
    """embedding's backward (index_put with accumulate), gather's (scatter_add), indexing's
    (index_put) and nll_loss's (scatter of a value) are kernels: gradients bitwise eager's
    on cpu, where the interpreter adds in index order. nll_loss's scatter reads no gradient,
    only x's size and the targets: the partition (a min cut, as Inductor's) computes it in
    the forward and saves it."""
    def fn(w, x, i, g, t):
        return ((F.embedding(i, w) * 3).sum() + torch.gather(x, 1, g).square().sum() + x[i[0]].sum()
                + F.nll_loss(x, t))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (4, 7):
            w = torch.randn(n, 3, requires_grad=True)
            x = torch.randn(n, 5, requires_grad=True)
            i, g = torch.randint(0, n, (2, 3)), torch.randint(0, 5, (n, 2))
            i[1, 2] = i[0, 1]  # a repeated row: its gradients add
            t = torch.randint(0, 5, (n,))
            compiled(w, x, i, g, t).backward()
            grads = w.grad, x.grad
            w.grad = x.grad = None
            fn(w, x, i, g, t).backward()
            assert_bitwise(grads, (w.grad, x.grad))
    assert xpu_lite.counters.graphs_compiled == 2 and xpu_lite.counters.fallback_nodes == 0
    backward = next(r for r in reports if r.kind == "backward")
    assert {"aten.index_put.default", "aten.scatter_add.default"} <= _kernel_ops([backward])
    assert "aten.scatter.value" in _kernel_ops(reports)


def test_a_scatters_values_are_computed_in_its_kernel(device: str) -> None:
    """A pointwise producer that only a scatter reads, as its values (index_put) or source
    (scatter_add), is computed in the scatter's kernel where it reads it, never stored: in
    embedding's backward with a padding_idx the gradient masked by `where` (every
    language model's training step: a tokens x dim buffer written and read back). A
    producer something else reads too is stored. The 0 the mask picks, a 0-dim fill, is
    computed there too, not stored by a kernel and read back by value. On cpu bitwise
    eager's (the interpreter adds in index order); on a GPU the atomics add in any order."""
    def lookups(w, i):
        return (F.embedding(i, w, padding_idx=0) * 3).sum()

    def scatters(x, a, b, i, g):
        v = a * 2
        return (torch.zeros_like(x).scatter_add(1, g, (a * b).exp()),
                torch.zeros(x.shape[0], a.shape[1], device=x.device).index_put((i,), v, accumulate=True), v.sum())

    same = assert_bitwise if device == "cpu" else torch.testing.assert_close
    compiled_lookups, compiled_scatters = (torch.compile(f, backend="xpu_lite", dynamic=True) for f in (lookups, scatters))
    with capture() as reports:
        for n in (4, 7):
            w = torch.randn(n, 3, device=device, requires_grad=True)
            i = torch.randint(0, n, (2, 5), device=device)
            i[1, 2], i[0, 0] = i[0, 1], 0  # a repeated row adds; the padding row's gradient is 0
            (grad,) = torch.autograd.grad(compiled_lookups(w, i), w)
            same(grad, torch.autograd.grad(lookups(w, i), w)[0])
            x, a, b = (torch.randn(n, 5, device=device) for _ in range(3))
            g, r = torch.randint(0, 5, (n, 5), device=device), torch.randint(0, n, (n,), device=device)
            ours, eagers = compiled_scatters(x, a, b, r, g), scatters(x, a, b, r, g)
            same(ours[:2], eagers[:2])
            torch.testing.assert_close(ours[2], eagers[2])  # a sum, in another order
    computed = {r.kind: {d.op: d.kernel for d in r.decisions if "computed where" in d.kernel} for r in reports}
    kernel_of = {r.kind: {d.op: d.kernel.split()[0] for d in r.decisions if d.kernel} for r in reports}
    backward, inference = computed["backward"], computed["inference"]
    assert "computed where index_put reads it: not stored" in backward["aten.where.self"], backward
    assert {k.split()[0] for k in backward.values()} == {kernel_of["backward"]["aten.index_put.default"]}, backward  # the mask too
    assert "aten.scalar_tensor.default" in backward, backward  # the 0 it picks
    assert "computed where scatter_add reads it: not stored" in inference["aten.exp.default"], inference
    assert set(inference) == {"aten.exp.default", "aten.mul.Tensor"}, inference  # (a * b), not v = a * 2
    stored_v = [d.kernel for d in reports[-1].decisions if d.op == "aten.mul.Tensor" and "computed where" not in d.kernel]
    assert len(stored_v) == 1 and "not stored" not in stored_v[0], stored_v


@pytest.mark.parametrize("bad", ["past the end", "negative"])
def test_a_position_out_of_range_raises_as_in_eager(bad: str) -> None:
    """On cpu only (a failed device assert ends a GPU context, as eager's own kernels do)."""
    x, v = torch.randn(4, 3), torch.randn(2, 3)
    i = torch.tensor([1, 4 if bad == "past the end" else -5])
    g = torch.tensor([[0, 3 if bad == "past the end" else -1]])
    cases = [(lambda x, i, v: x.index_put([i], v, accumulate=True), (x, i, v)),
             (lambda x, i, v: torch.ops.aten.index_put(x, [None, i], v.t()), (x.t(), i, v)),
             (lambda x, g, v: x.scatter(1, g, v), (x, g, v)),
             (lambda x, g, v: x.scatter_add(1, g, v), (x, g, v)),
             # one position per row into zeros: computed pointwise, its position asserted by an ir.Check
             (lambda x, g, v: torch.zeros_like(x).scatter(1, g, -1.0), (x, torch.tensor([[0], [1], [g[0, 1]], [2]]), v)),
             (lambda x, g, v: torch.zeros_like(x).scatter(1, g, x), (x, torch.tensor([[0], [1], [g[0, 1]], [2]]), v))]
    raise_as_in_eager(cases)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool],
                         ids=["float32", "float16", "int64", "bool"])
def test_one_position_per_row_into_a_fill_is_computed_pointwise(device: str, dtype: torch.dtype) -> None:
    """A scatter (of src or of a value) into a fill, one position per row along dim and
    the index covering the fill elsewhere, is computed where it is read: each element is
    the value where its coordinate is the row's position, else the fill (Inductor's
    scatter_upon_const_tensor), its position asserted in range (an ir.Check) where eager
    raises. cross_entropy's gradient (every language model's training step) then stores
    no logits-sized zeros to scatter into and read back: the zeros, the scatter and
    log_softmax's gradient are one reduction kernel. Values move without arithmetic:
    bitwise eager's. Two positions per row, or an index not covering the fill, stay scatter
    kernels."""
    def fn(x, i, j):
        ones = torch.ones(x.shape[0], 6, dtype=x.dtype, device=x.device)
        return (torch.zeros_like(x).scatter(1, i, x[:, :1]),  # src
                torch.full_like(x, 2).scatter(0, j, 1) * x,  # a value, along dim 0, then read by a product
                ones.scatter(1, i, 0),  # a fill of a shape of its own
                torch.zeros_like(x).scatter(1, i.expand(-1, 2), x))  # two positions per row: a scatter kernel

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 5):
            x = torch.randn(n, 6, device=device).to(dtype) if dtype is not torch.bool else torch.rand(n, 6, device=device) > 0.5
            i, j = torch.randint(0, 6, (n, 1), device=device), torch.randint(0, n, (1, 6), device=device)
            assert_bitwise(compiled(x, i, j), fn(x, i, j))
    assert xpu_lite.counters.graphs_compiled == 1
    scatters = [d for d in reports[0].decisions if d.op in ("aten.scatter.src", "aten.scatter.value")]
    assert [d.kind for d in scatters] == [DecisionKind.KERNEL] * 4, [d.why() for d in scatters]
    assert ["at loaded positions" in d.kernel for d in scatters] == [False, False, False, True], [d.kernel for d in scatters]

    def sized_apart(x, y, i):  # the fill's rows b * (s + t), the index's b * s + b * t: equal, not the same expression
        rows = x.shape[0] * (x.shape[1] + y.shape[1])
        return torch.zeros(rows, 6, device=x.device).scatter(1, i.reshape(x.shape[0] * x.shape[1] + x.shape[0] * y.shape[1], 1), 1.0)

    x, y, i = torch.randn(2, 3, device=device), torch.randn(2, 4, device=device), torch.randint(0, 6, (14,), device=device)
    with capture() as reports:
        assert_bitwise(torch.compile(sized_apart, backend="xpu_lite", dynamic=True)(x, y, i), sized_apart(x, y, i))
    assert not any("at loaded positions" in d.kernel for d in reports[0].decisions), [d.kernel for d in reports[0].decisions]

    def loss(h, w, t):  # a causal LM's: logits upcast, shifted, flattened; nll_loss's row weights come after the scatter
        logits = (h @ w).float()
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1), ignore_index=-100)

    h64, w64 = torch.randn(2, 5, 4, device=device, dtype=torch.float64), torch.randn(4, 9, device=device, dtype=torch.float64)
    t = torch.randint(0, 9, (2, 5), device=device)
    t[0, 2] = -100  # ignored: its row's gradient is 0
    h, w = h64.float().requires_grad_(), w64.float().requires_grad_()
    with capture() as reports:
        grads = torch.autograd.grad(torch.compile(loss, backend="xpu_lite", dynamic=True)(h, w, t), (h, w))
    expected = torch.autograd.grad(loss(h64.requires_grad_(), w64.requires_grad_(), t), (h64, w64))
    torch.testing.assert_close(grads, tuple(g.float() for g in expected), rtol=1e-5, atol=1e-6)
    backward = next(r for r in reports if r.kind == "backward")
    kernel = {d.op: d.kernel for d in backward.decisions if d.kernel}
    assert "computed where mul" in kernel["aten.scatter.value"], kernel  # where the row weights multiply it
    assert kernel["aten.sum.dim_IntList"].split()[0] == kernel["aten.scatter.value"].split()[0], kernel
    assert kernel["aten.full_like.default"].startswith(kernel["aten.sum.dim_IntList"].split()[0]), kernel


@pytest.mark.parametrize("op", ["index_add", "index_reduce"])
def test_a_source_of_another_shape_raises_as_in_eager(device: str, op: str) -> None:
    """index_add and index_reduce take a source shaped as the input but for `dim`; eager
    refuses a source that an index_put would broadcast (a (2,) source into a (3, 2)
    input's rows). torch._decomp's index_add does not check, and before 2026-11-28 the
    default mode added the broadcast rows."""
    fn = {"index_add": lambda x, i, s: x.index_add(0, i, s),
          "index_reduce": lambda x, i, s: x.index_reduce(0, i, s, "amax")}[op]
    x, i = torch.zeros(3, 2, device=device), torch.tensor([0, 2], device=device)
    message = "source tensor shape must match self tensor shape, excluding the specified dimension"
    with pytest.raises(RuntimeError, match=message):
        fn(x, i, torch.tensor([2.0, 4.0], device=device))
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with pytest.raises(RuntimeError, match=message):
        compiled(x, i, torch.tensor([2.0, 4.0], device=device))
    source = torch.randn(2, 2, device=device)  # the right shape: as eager, in kernels
    assert_bitwise(compiled(x, i, source), fn(x, i, source))


def test_deterministic_algorithms_keep_float_adds_eager() -> None:
    """A GPU's float atomic adds run in any order: with torch.use_deterministic_algorithms
    the float accumulation is eager's (with the reason), integer adds stay kernels; Dynamo
    guards on the setting, so turning it on recompiles."""
    def fn(x, i, v, k):
        return x.index_put([i], v, accumulate=True), k.index_put([i], k[:2] + 1, accumulate=True)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    x, i, v, k = torch.randn(5, 3), torch.tensor([1, 1]), torch.randn(2, 3), torch.arange(15).view(5, 3)
    assert_bitwise(compiled(x, i, v, k), fn(x, i, v, k))
    assert xpu_lite.counters.fallback_nodes == 0
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with capture() as reports:
            assert_bitwise(compiled(x, i, v, k), fn(x, i, v, k))
    finally:
        torch.use_deterministic_algorithms(was)
    rows = [d for d in reports[0].decisions if d.op == "aten.index_put.default"]
    assert [d.kind for d in rows] == [DecisionKind.FALLBACK, DecisionKind.KERNEL], [d.why() for d in rows]
    assert "torch.use_deterministic_algorithms(True) is set" in rows[0].why()


def test_max_unpool_is_a_scatter_kernel_laid_out_as_in_eager(device: str) -> None:
    """max_unpool2d's decomposition scatters into a fresh buffer; its result is laid out as
    eager's is (channels-last for a channels-last input), values bitwise eager's."""
    def fn(x):
        values, indices = F.max_pool2d(x, 2, return_indices=True)
        return F.max_unpool2d(values * 2, indices, 2, output_size=x.shape[-2:])

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (4, 6):
            for layout in (torch.contiguous_format, torch.channels_last):
                x = torch.randn(2, 3, n, n + 2, device=device).to(memory_format=layout)
                actual, expected = compiled(x), fn(x)
                assert_bitwise(actual, expected)
                assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    assert "aten.index_put.default" in _kernel_ops(reports) and not any(r.fallbacks for r in reports)


def _added_as_eager(actual, expected, device: str, **tolerance) -> None:
    """Bitwise eager's on cpu (the interpreter adds in index order, as eager's cpu kernels);
    a GPU's atomic adds run in any order: within `tolerance` there (half-precision sums
    of many values by default)."""
    if device == "cpu":
        assert_bitwise(actual, expected)
    else:
        torch.testing.assert_close(actual, expected, **(tolerance or {"atol": 0.1, "rtol": 0.02}))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_half_scatter_add_adds_as_the_devices_eager(device: str, dtype: torch.dtype) -> None:
    """Eager's cpu scatter_add of float16/bfloat16 adds in float32 and rounds once; with
    50 values added to each of 3 rows, rounding every add (what a float16 atomic add
    does, and what this lowering did before 2026-11-26) moves the last bits. On cpu: float32
    atomic adds and a cast, bitwise eager's, bfloat16 included (its atomic add does not
    exist: before, an eager call). A GPU's eager adds in the dtype with atomics, in any
    order: the op as is, within tolerance (bfloat16 stays eager there)."""
    def fn(x, index, src):
        return x.scatter_add(0, index, src) * 2

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (4, 6):
        x, src = torch.randn(3, n, device=device, dtype=dtype), torch.randn(50, n, device=device, dtype=dtype)
        index = torch.randint(0, 3, (50, n), device=device)
        _added_as_eager(compiled(x, index, src), fn(x, index, src), device)
    if device == "cpu":
        assert xpu_lite.counters.fallback_nodes == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_index_add_adds_as_the_devices_eager(device: str, dtype: torch.dtype) -> None:
    """index_add, 60 rows added into 3, with eager's arithmetic: alpha multiplied in the
    dtype (torch's decomposition multiplies by a Python float); on cpu float16/bfloat16
    without alpha added in float32 and rounded once, with alpha in the dtype; float32
    with alpha is eager's axpy (one rounding), which an atomic add cannot be: the op is
    kept there. Bitwise eager's on cpu (before 2026-11-26 all but float32 without alpha
    were off in the last bits); a GPU's atomics add in any order: within tolerance."""
    kept = []
    for alpha in (1, 0.3):
        for dim in (0, 1):
            torch._dynamo.reset()
            xpu_lite.reset_counters()
            x = torch.randn(3, 5, device=device, dtype=dtype).movedim(0, dim)
            source = torch.randn(60, 5, device=device, dtype=dtype).movedim(0, dim)
            index = torch.randint(0, 3, (60,), device=device)

            def fn(x, index, source):
                return x.index_add(dim, index, source, alpha=alpha) * 2

            _added_as_eager(torch.compile(fn, backend="xpu_lite", dynamic=True)(x, index, source), fn(x, index, source), device)
            kept.append(xpu_lite.counters.fallback_nodes)
    if device == "cpu":  # bfloat16 with alpha: index_put's bfloat16 adds (no atomic) are eager
        assert kept == [0, 0, 1, 1] if dtype != torch.float16 else [0, 0, 0, 0], kept


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_half_gradients_of_lookups_add_as_the_devices_eager(device: str, dtype: torch.dtype) -> None:
    """Gradients of 60 lookups of 3 rows, float16/bfloat16. Eager's cpu embedding backward
    adds rows in the dtype (torch's decomposition adds in float32: the last bits differed
    before 2026-11-26), with scale_grad_by_freq `grad * (1 / count)` rows (the op is kept);
    index_select's (index_add) adds in float32. Bitwise eager's on cpu; a GPU adds in any
    order (within tolerance)."""
    lookups = {"embedding": lambda w, i: F.embedding(i, w, padding_idx=1),
               "embedding scaled": lambda w, i: F.embedding(i, w, scale_grad_by_freq=True),
               "index_select": lambda w, i: w.index_select(0, i)}
    weight, index, grad = (torch.randn(3, 4, device=device, dtype=dtype), torch.randint(0, 3, (60,), device=device),
                           torch.randn(60, 4, device=device, dtype=dtype))
    for name, fn in lookups.items():
        torch._dynamo.reset()
        grads = []
        for f in (torch.compile(fn, backend="xpu_lite", dynamic=True), fn):
            w = weight.clone().requires_grad_()
            f(w, index).backward(grad)
            grads.append(w.grad)
        _added_as_eager(*grads, device, atol=0.1, rtol=0.02, msg=name)


def test_scatter_reduce_sum_and_mean_are_scatter_kernels(device: str) -> None:
    """Regions decompose scatter_reduce's sum and mean as ATen computes them: without
    include_self the positions scattered to are zeroed first (a scatter), then the values
    are added (scatter_add), and mean divides by the count of values added (one more with
    include_self, 1 where none was). Kernels only, one graph for every size, bitwise
    eager's on cpu (a GPU's atomic adds run in any order: within tolerance there). prod
    keeps the op."""
    def fn(x, index, src, ints):
        return (x.scatter_reduce(0, index, src, "sum"), x.scatter_reduce(1, index.t(), src.t(), "sum", include_self=False),
                x.scatter_reduce(0, index, src, "mean"), x.scatter_reduce(0, index, src, "mean", include_self=False),
                ints.scatter_reduce(0, index, ints[:1].expand_as(index), "sum", include_self=False))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for dtype in (torch.float32, torch.float16):
        torch._dynamo.reset()
        xpu_lite.reset_counters()
        for n in (5, 8, 6):
            index = torch.randint(0, n - 2, (n + 3, n), device=device)  # repeats; rows n - 2 and n - 1 never reached
            x, src = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n + 3, n, device=device, dtype=dtype)
            args = (x, index, src, torch.randint(-9, 9, (n + 3, n), device=device))
            # float16 sums of three values, rounded at each add in two orders on a GPU: an ulp or two
            tolerance = {"atol": 1e-2, "rtol": 1e-2} if dtype == torch.float16 else {"atol": 1e-5, "rtol": 1.3e-6}
            _added_as_eager(compiled(*args), fn(*args), device, **tolerance)
        assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    for reduce, dtype in (("prod", torch.float32), ("mean", torch.float64)):  # no atomic multiply; float64 not computed
        x, src = args[0].to(dtype), args[2].to(dtype)
        report = xpu_lite.explain(lambda x, index, src: x.scatter_reduce(0, index, src, reduce), x, args[1], src)
        assert [(d.op, d.kind) for g in report.graphs for d in g.decisions] == [("aten.scatter_reduce.two", DecisionKind.FALLBACK)]
    flags = torch.ones_like(args[1], dtype=torch.bool)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):  # eager's error, not a mean of bools
        torch.compile(lambda f, i: f.scatter_reduce(0, i, f, "mean"), backend="xpu_lite")(flags, args[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64],
                         ids=["float32", "float16", "bfloat16", "int32", "int64"])
def test_scatter_reduce_amax_and_amin_are_atomic_kernels(device: str, dtype: torch.dtype) -> None:
    """amax and amin: the values reduced into a tensor of the identity by atomic maxima and
    minima, then folded into the input as eager's loop folds them (NaN wins, ties keep the
    input's value); without include_self the positions reached start from the identity.
    Kernels only (before 2026-11-26 an eager call), one graph for every size, bitwise
    eager's (NaN signs aside: eager keeps the NaN's own). NaN in the input and in the
    values, of both signs, on cpu: a NaN whose sign bit the atomics read as a number
    would be passed over. A GPU's eager folds NaN by its own atomics: no NaN there. The
    result is contiguous whatever the input's layout, as eager's."""
    def fn(x, index, src):
        return (x.scatter_reduce(0, index, src, "amax"), x.scatter_reduce(0, index, src, "amin", include_self=False),
                x.scatter_reduce(1, index.t(), src.t(), "amin"), x.scatter_reduce(1, index.t(), src.t(), "amax", include_self=False),
                x.t().scatter_reduce(0, index, src, "amax"))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (5, 8):
        index = torch.randint(0, n - 2, (n + 9, n), device=device)  # repeats; rows n - 2 and n - 1 never reached
        if dtype.is_floating_point:
            x, src = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n + 9, n, device=device, dtype=dtype)
            if device == "cpu":
                x[1, 2], x[n - 1, 0], src[3, 1], src[4, 3] = math.nan, -math.nan, math.nan, -math.nan
        else:
            x = torch.randint(-50, 50, (n, n), device=device, dtype=dtype)
            src = torch.randint(-99, 99, (n + 9, n), device=device, dtype=dtype)
        actual, expected = compiled(x, index, src), fn(x, index, src)
        assert_bitwise(actual, expected, nan_payloads=False)
        assert [a.stride() for a in actual] == [e.stride() for e in expected]
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["float32", "float16"])
def test_index_reduce_is_scatter_kernels(device: str, dtype: torch.dtype) -> None:
    """index_reduce (an eager call before 2026-11-26): amax and amin as scatter_reduce's
    atomics, the index spread over source's other dims; mean as eager's kernels compute
    it: the slices added in the dtype (float16 too, 60 into 3: where scatter_reduce adds in
    float32 on cpu), divided by eager's counts. Bitwise eager's on cpu (a GPU's adds run in
    any order: within tolerance there), one graph, contiguous results as eager's; a 0-dim
    input as a 1-D one. prod keeps the op."""
    def fn(x, index, source):
        return (x.index_reduce(0, index, source, "mean"), x.index_reduce(1, index, source.t(), "mean", include_self=False),
                x.index_reduce(0, index, source, "amax", include_self=False), x.index_reduce(1, index, source.t(), "amin"),
                x.t().index_reduce(0, index, source, "mean"))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (3, 5):
        x, source = torch.randn(n, n, device=device, dtype=dtype), torch.randn(60, n, device=device, dtype=dtype)
        index = torch.randint(0, n - 1, (60,), device=device)  # the last row and column are never reached
        actual, expected = compiled(x, index, source), fn(x, index, source)
        _added_as_eager(actual, expected, device)
        assert [a.stride() for a in actual] == [e.stride() for e in expected]
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    scalar = lambda: torch.randn((), device=device, dtype=dtype)  # noqa: E731
    scalars = scalar(), torch.zeros(1, dtype=torch.int64, device=device), scalar()
    on_scalars = lambda x, i, s: (x.index_reduce(0, i, s, "mean"), x.index_reduce(0, i, s, "amax", include_self=False))  # noqa: E731
    _added_as_eager(torch.compile(on_scalars, backend="xpu_lite")(*scalars), on_scalars(*scalars), device)
    assert xpu_lite.counters.fallback_nodes == 0
    report = xpu_lite.explain(lambda x, index, source: x.index_reduce(0, index, source, "prod"), x, index, source)
    assert [(d.op, d.kind) for g in report.graphs for d in g.decisions] == [("aten.index_reduce.default", DecisionKind.FALLBACK)]
    assert "regions decompose it, but not this call" in report.graphs[0].decisions[0].why()  # and what the decomposition keeps
    assert "prod keeps the op" in report.graphs[0].decisions[0].why()


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16], ids=["uint8", "int8", "int16"])
def test_small_integer_adds_and_extrema_are_int32_atomics(device: str, dtype: torch.dtype) -> None:
    """uint8/int8/int16 scatters that add (index_put with accumulate, scatter_add, index_add
    with and without alpha, scatter_reduce sum, put) or reduce (scatter_reduce and
    index_reduce amax/amin) were eager calls: no atomic of those dtypes. Since 2026-11-27
    regions compute them in int32, atomics included, and cast back: eager adds in the dtype
    and wraps at every add, and a sum wrapped once is the same modulo 2**bits in any order;
    extrema are exact either way. Bitwise eager's with repeated positions, three sizes, one
    graph. Means: test_integer_means_are_kernels."""
    def fn(x, i, v):
        j = i.unsqueeze(1).expand(-1, x.shape[1])
        return (x.index_put((i,), v, accumulate=True), x.scatter_add(0, j, v), x.index_add(0, i, v),
                x.index_add(0, i, v, alpha=3), torch.scatter_reduce(x, 0, j, v, "sum"), torch.put(x, i, v[:, 0], accumulate=True),
                torch.scatter_reduce(x, 0, j, v, "amax"), torch.scatter_reduce(x, 0, j, v, "amin", include_self=False),
                x.index_reduce(0, i, v, "amax"), x.index_reduce(0, i, v, "amin", include_self=False))

    info = torch.iinfo(dtype)
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (5, 8, 11):
        x = torch.randint(info.min, info.max + 1, (n, 3), dtype=dtype, device=device)
        i = torch.randint(0, n, (2 * n,), device=device)  # about two values per position: the adds wrap
        v = torch.randint(info.min, info.max + 1, (2 * n, 3), dtype=dtype, device=device)
        for got, expected in zip(compiled(x, i, v), fn(x, i, v), strict=True):
            assert_bitwise(got, expected)
            assert got.stride() == expected.stride()
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1


_INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("dtype", _INTS, ids=[str(d).removeprefix("torch.") for d in _INTS])
def test_integer_means_are_kernels(device: str, dtype: torch.dtype) -> None:
    """Integer scatter_reduce and index_reduce means, with and without include_self, are
    kernels since 2026-11-27 (their floor division by the counts was an eager call): the
    counts add in the dtype, 1 where none was added (so the division's divisor provably
    has no 0), and floor-divide the sums. uint8/int8 counts past the dtype wrap, to
    negative ones and to -1 too, as eager's do. Bitwise eager's, three sizes, one graph."""
    def fn(x, i, v):
        j = i.unsqueeze(1).expand(-1, x.shape[1])
        return (torch.scatter_reduce(x, 0, j, v, "mean"), torch.scatter_reduce(x, 0, j, v, "mean", include_self=False),
                x.index_reduce(0, i, v, "mean"), x.index_reduce(0, i, v, "mean", include_self=False))

    info = torch.iinfo(dtype)
    low, high = max(info.min, -2**40), min(info.max, 2**40)
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    # row 0's count, without and with include_self: 128 and 129 (int8's -128 and -127), 255 and 256 (int8's -1,
    # uint8's 255; both dtypes' 0, which is 1)
    for n, repeats, at_0 in ((5, 2, 0), (4, 64, 128), (3, 100, 255)):
        x = torch.randint(low, high + 1, (n, 3), dtype=dtype, device=device)
        i = torch.randint(0 if at_0 == 0 else 1, n, (repeats * n,), device=device)
        i[:at_0] = 0
        v = torch.randint(low, high + 1, (repeats * n, 3), dtype=dtype, device=device)
        for got, expected in zip(compiled(x, i, v), fn(x, i, v), strict=True):
            assert_bitwise(got, expected)
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1


def test_what_is_not_lowered_says_why() -> None:
    def fn(x, m, i, b):
        return x.index_put([m], x.sum() * 2), b.index_put([i], b[:2], accumulate=True), x.double().index_put([i], x[:2].double())

    args = torch.randn(4, 3), torch.tensor([True, False, True, False]), torch.tensor([0, 0]), torch.randn(4, 3).bfloat16()
    report = xpu_lite.explain(fn, *args, dynamic=True)
    reasons = [row[4] for row in report.rows() if row[2] == "aten.index_put.default"]
    assert any("a boolean mask index" in why for why in reasons), reasons
    assert any("adds bfloat16 values; tl.atomic_add takes float32, float16, int32, int64" in why for why in reasons), reasons
    assert any("a float64 result" in why for why in reasons), reasons


def test_indirect_stores_only_in_untiled_pointwise_kernels() -> None:
    index = ir.Buffer("in_ptr0", torch.int64, (8,), (1,))
    out = ir.Buffer("out_ptr0", torch.float32, (4,), (1,))
    values = (ir.Load("in_ptr0", ir.XINDEX, torch.int64), ir.Constant(1.0, torch.float32))
    store = ir.Store("out_ptr0", ir.value_symbol(0), 1, ((0, sympy.Integer(4)),), "index_put", accumulate="add")
    kernel = ir.Kernel("kernel_0", sympy.Integer(8), (index,), (out,), values, (store,), ("index_put",))
    assert ir.verify(kernel) is kernel and kernel.checks_bounds and kernel.size_symbols == ()
    with pytest.raises(ir.IRError, match="at positions that are not integer values of an untiled pointwise kernel"):
        ir.verify(dataclasses.replace(kernel, rnumel=sympy.Integer(2)))
    with pytest.raises(ir.IRError, match="indexes with a value it does not bound"):
        ir.verify(dataclasses.replace(kernel, stores=(dataclasses.replace(store, bounds=()),)))
    with pytest.raises(ir.IRError, match="an accumulating store to 'out_ptr0' at its own positions"):
        ir.verify(dataclasses.replace(kernel, stores=(ir.Store("out_ptr0", ir.XINDEX, 1, accumulate="add"),)))
    with pytest.raises(ir.IRError, match="combines by 'mul', not"):
        ir.verify(dataclasses.replace(kernel, stores=(dataclasses.replace(store, accumulate="mul"),)))
    # a Check asserts positions where nothing loads or stores at them: earlier integer values only
    check = ir.Check(((0, sympy.Integer(4)),), "scatter")
    pointwise = dataclasses.replace(kernel, values=(*values, check), stores=(ir.Store("out_ptr0", ir.XINDEX, 2),))
    assert ir.verify(pointwise).checks_bounds
    with pytest.raises(ir.IRError, match="value 2 checks positions that are not earlier integer values"):
        ir.verify(dataclasses.replace(pointwise, values=(*values, ir.Check(((1, sympy.Integer(4)),), "scatter"))))


def test_as_strided_scatter_covering_every_element_is_a_copy_kernel(device: str) -> None:
    """A view that covers every element of a dense input once (in any dim order, through
    any dense layout of the input) leaves nothing of the input: each element is the
    source's at its storage position. Values bitwise eager's, strides eager's, one
    compilation for all sizes. A view that covers part of the input, and any view of a
    graph input (whose storage offset, which the view addresses, is not guarded), keep the op."""
    def covering(x, src, cl):
        n, x = x.shape, x * 2  # a kernel's result: at its storage's start
        if cl:  # channels-last (N, C, H, W) viewed as (N, C H W) rows
            return torch.as_strided_scatter(x, src, (n[0], n[1] * n[2] * n[3]), (n[1] * n[2] * n[3], 1))
        return torch.as_strided_scatter(x, src, (n[1], n[0]), (1, n[1]))  # (n, 6) transposed

    def kept(x, src, whole):
        return (torch.as_strided_scatter(x * 2, src, (x.shape[0], 3), (6, 1)),  # covers part of x * 2
                torch.as_strided_scatter(x, whole, (x.shape[0], 6), (6, 1)))  # covers all of x, a graph input

    compiled, compiled_kept = (torch.compile(f, backend="xpu_lite", dynamic=True) for f in (covering, kept))
    with capture() as reports:
        for n in (4, 5, 7):
            for cl in (False, True):
                x = torch.randn(2, 3, n, n, device=device).to(memory_format=torch.channels_last) if cl else \
                    torch.randn(n, 6, device=device)
                src = torch.randn((2, 3 * n * n) if cl else (6, n), device=device)
                actual, expected = compiled(x, src, cl), covering(x, src, cl)
                assert_bitwise(actual, expected)
                assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    assert len(reports) == 2 and not any(r.fallbacks for r in reports)  # one graph for each layout
    assert all(len(r.kernels) == 1 and "aten.as_strided_scatter.default" in _kernel_ops([r]) for r in reports)

    with capture() as reports:
        for n in (4, 5):
            x, src, whole = (torch.randn(n, k, device=device) for k in (6, 3, 6))
            assert_bitwise(compiled_kept(x, src, whole), kept(x, src, whole))
    reasons = [d.why() for d in reports[0].fallbacks]
    assert len(reasons) == 2 and "not cover every element" in reasons[0] and "eager addresses the storage" in reasons[1], reasons


def test_gradient_of_a_flattened_channels_last_pool_has_no_scatter(device: str) -> None:
    """AOTAutograd's gradient of a view of a channels-last tensor (flatten after an
    adaptive pool to (N, C, 1, 1)) is an as_strided_scatter into zeros: a kernel here (with
    the copy before it), the zeros never made; gradients as eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(4, 2)).to(device=device, memory_format=torch.channels_last)
    compiled = torch.compile(model, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (6, 8):
            x = torch.randn(2, 3, n, n, device=device).to(memory_format=torch.channels_last)
            grads = []
            for fn in (compiled, model):
                model.zero_grad()
                fn(x).square().sum().backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for actual, expected in zip(*grads):
                torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
    eager = {d.op for r in reports for d in r.fallbacks}
    assert "aten.as_strided_scatter.default" in _kernel_ops(reports) and "aten.as_strided_scatter.default" not in eager
    zeros = {d.node for r in reports for d in r.decisions if d.op == "aten.full.default" and d.node in r.emitted}
    stores = [line for r in reports for k in r.kernels for line in k.splitlines() if "tl.store(" in line]
    assert "aten.full.default" not in eager and not any(line.endswith(f"# {z}") for z in zeros for line in stores), stores
    backward = reports[1]  # counts the kernels it launches (the zeros computed in the scatter's, never stored)
    assert int(backward.counts()[2]) == len(set(re.findall(r"# (kernel_\d+): ", backward.source))) == 3
