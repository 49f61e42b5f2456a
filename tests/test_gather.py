"""Kernels for ops that read their input at positions loaded from an index tensor:
embedding, gather, index_select, index.Tensor (integer index tensors), and take (which
xpu_lite decomposes to index.Tensor) (lowering/gather.py). Values move without
arithmetic, so results are bitwise eager's in every dtype; a position out of range raises
xpu_lite.IndexOutOfRange, an IndexError and a RuntimeError, as eager raises one of them
(on a GPU: a device-side assert, as eager's own kernels).
"""
from __future__ import annotations

import dataclasses
import re

import pytest
import sympy
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.lowering import DecisionKind, ir
from xpu_lite.report import capture

from .conftest import assert_bitwise
from .test_kernels import _run_samples

OPINFOS = {"nn.functional.embedding": "aten.embedding.default", "gather": "aten.gather.default",
           "index_select": "aten.index_select.default", "take": "aten.index.Tensor"}
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]
LOWERED = set(OPINFOS.values())


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_samples_are_bitwise_eager(device: str, name: str, dtype: torch.dtype, where: str) -> None:
    rows = opinfo_decisions(name, OPINFOS[name], device, dtype, where)
    assert any(d.kind is DecisionKind.KERNEL for d in rows), f"no sample of {name} was lowered to a kernel"


def opinfo_decisions(name: str, aten_op: str, device: str, dtype: torch.dtype, where: str, exact: bool = True):
    """Compile the first 4 samples (of at most 4096 elements) of OpInfo `name` and compare
    each with eager, bitwise (assert_close where not `exact`) and with eager's strides;
    the decisions taken for `aten_op`. Skips where eager does not support `dtype`."""
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == name and o.variant_test_name == "")
    if dtype not in op.supported_dtypes(device):
        pytest.skip(f"{name} does not support {dtype} in eager on {device}")
    samples = [s for s in op.sample_inputs(device, dtype) if s.input.numel() <= 4096][:4]

    def check(out, fn, sample):
        expected = fn(sample.input, *sample.args)
        if exact:
            assert_bitwise(out, expected)
        else:
            torch.testing.assert_close(out, expected)
        assert out.stride() == expected.stride() or out.numel() <= 1

    with capture() as reports:
        _run_samples(op, samples, where, check)
    return [d for r in reports for d in r.decisions if d.op == aten_op]


def lookups(w, i, x, g, s):
    return (F.embedding(i, w) * 2,  # fused with its consumer
            torch.gather(x, 1, g),
            torch.index_select(x.t(), 0, s.abs()),  # a view read from its base
            x[:, s],  # negative positions count from the end
            x[s] + 1)


def _inputs(n: int, device: str):
    s = torch.tensor([0, n + 3, -1, -n - 4, 2], device=device)
    return (torch.randn(3 * n, 4, device=device), torch.randint(0, 3 * n, (n, 5), device=device),
            torch.randn(n + 4, n + 5, device=device), torch.randint(0, n + 5, (n + 4, 2), device=device), s)


def test_one_kernel_source_per_op_for_all_sizes(device: str) -> None:
    compiled = torch.compile(lookups, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 6, 9):
            args = _inputs(n, device)
            assert_bitwise(compiled(*args), lookups(*args))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    kinds = {d.op: d.kind for d in reports[0].decisions}
    assert all(kinds[op] is DecisionKind.KERNEL for op in LOWERED), kinds
    # the five lookups (their consumers mul and add fused); index_select computes s.abs()
    # where it reads its positions (a pointwise producer of an index, not stored)
    assert len(reports[0].kernels) == 5
    (abs_,) = [d for d in reports[0].decisions if d.op == "aten.abs.default"]
    assert "computed where index_select reads it: not stored" in abs_.kernel, abs_
    for source in reports[0].kernels:
        assert not re.search(r"\b(12|13|14|15|18|27)\b", source), f"a dynamic size was baked into the kernel:\n{source}"
    assert sum("tl.device_assert(" in source and "_ok = " in source for source in reports[0].kernels) == 5


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_int32_and_int64_positions(device: str, dtype: torch.dtype) -> None:
    """Lookups and scatters by int32 or int64 positions (gather and scatter's by int32
    since 2026-11-27, which eager takes: they were eager calls)."""
    def fn(w, i, x):
        return (F.embedding(i, w), x.index_select(0, i.flatten()), x[:, i], x.gather(0, i), x.scatter(1, i, 2.5),
                x.scatter_add(0, i, x[:2, :2]))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    w, x = torch.randn(7, 3, device=device), torch.randn(7, 7, device=device)
    i = torch.tensor([[6, 0], [3, 3]], dtype=dtype, device=device)
    assert_bitwise(compiled(w, i, x), fn(w, i, x))
    assert xpu_lite.counters.fallback_nodes == 0


@pytest.mark.parametrize("bad", ["past the end", "negative"])
def test_a_position_out_of_range_raises_as_in_eager(bad: str) -> None:
    """Eager raises IndexError or RuntimeError (by op and dim); the kernel's assert raises
    IndexOutOfRange, both. On cpu only: there the interpreter runs with Triton's debug on;
    on a GPU a failed device assert ends the process's CUDA/XPU context, as eager's own
    kernels do, which one test process cannot survive."""
    w, x = torch.randn(5, 3), torch.randn(4, 6)
    far = 6 if bad == "past the end" else -1
    i = torch.tensor([[1, 4], [far - 1 if far > 0 else far, 2]])
    g = torch.zeros(4, 2, dtype=torch.long)
    g[2, 1] = far
    s = torch.tensor([0, 6 if bad == "past the end" else -7])
    cases = [(lambda w, i: F.embedding(i, w) + 1, (w, i)),
             (lambda x, g: torch.gather(x, 1, g), (x, g)),
             (lambda x, i: x.index_select(1, i.flatten() + (i.flatten() == 5)), (x, i)),
             (lambda x, s: x[:, s], (x, s))]
    raise_as_in_eager(cases)


@pytest.mark.parametrize("checks_bounds", [False, True])
def test_an_interpreted_launch_has_the_gpus_debug_option_and_no_overflow_sanitizing(checks_bounds: bool) -> None:
    """On cpu a launch runs with Triton's debug option as a GPU launch compiles it (on for a
    kernel with a bounds assert) and without integer-overflow sanitizing, whose assert debug
    off drops but whose int64 arithmetic the interpreter still computed (half of an
    interpreted pooling test's time); the interpreter's options are as before afterwards,
    also when the launch raises."""
    from triton.runtime import interpreter

    from xpu_lite import runtime

    seen, before = [], interpreter.interpreter_builder.options

    class Kernel:
        def __getitem__(self, grid):
            def launch(fail: bool) -> None:
                seen.append(interpreter.interpreter_builder.options)
                if fail:
                    raise RuntimeError("the kernel failed")
            return launch

    launcher = runtime._QuietInterpreter(Kernel(), checks_bounds)
    launcher[(1,)](False)
    with pytest.raises(RuntimeError, match="the kernel failed"):
        launcher[(1,)](True)
    assert [(o.debug, o.sanitize_overflow) for o in seen] == [(checks_bounds, False)] * 2
    assert interpreter.interpreter_builder.options is before


def test_a_lookup_nothing_reads_still_checks_its_positions() -> None:
    """`zeros_like(x[idx])`: eager computes x[idx], raising on a bad position, and throws
    the values away. The kernel's load of them is dead, yet its bounds assert stays (before
    2026-11-25 the load and its assert were dropped: no error), in a pointwise kernel, a
    reduction over the looked-up rows, and one across them; in range, eager's bits."""
    x, good, bad = torch.randn(5, 4), torch.tensor([0, 2, 1]), torch.tensor([0, 7, 1])
    cases = [lambda x, i: torch.zeros_like(x[i]) + 1,
             lambda x, i: (torch.zeros_like(x[i]) + x[:3]).sum(-1),
             lambda x, i: torch.zeros_like(x[:, i]).sum(0) + x[0, :3],
             lambda x, i: torch.ones_like(F.embedding(i, x)).amax(-1)]
    for fn in cases:
        torch._dynamo.reset()
        assert_bitwise(torch.compile(fn, backend="xpu_lite", dynamic=True)(x, good), fn(x, good))
    raise_as_in_eager([(fn, (x, bad)) for fn in cases])


def _embedding_norm_residual(x, i, g):
    h = F.embedding(i, x)
    return F.rms_norm(h, (x.shape[-1],), eps=1e-6), h * 2  # h also stored: the residual reads it


LOOKUPS_BEFORE_REDUCTIONS = {
    "embedding, rms_norm, residual": _embedding_norm_residual,
    "gather, sum": lambda x, i, g: torch.gather(x, 1, g).sum(-1),
    "index_select, softmax": lambda x, i, g: x.index_select(0, i.flatten()).softmax(-1),
    "advanced indexing, argmax": lambda x, i, g: x[i].argmax(-1),
}


@pytest.mark.parametrize("case", list(LOOKUPS_BEFORE_REDUCTIONS))
def test_a_lookup_before_a_reduction_is_computed_in_its_kernel(device: str, case: str) -> None:
    """A lookup feeding a reduction is computed per element of the reduction's input in
    its kernel: the positions loaded, checked and used in the reduction's pass (llama's
    embedding and first rms_norm are one kernel). Persistent and looped rows, one
    compilation, one kernel; a position out of range raises as eager does, in both."""
    from .test_reductions import LOOPED_ROW

    fn = LOOKUPS_BEFORE_REDUCTIONS[case]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)

    def inputs(length, far=None):
        x = torch.randn(5, length, device=device)
        i = torch.tensor([[4, 0, 2], [1, 1, 3]], device=device)
        g = torch.randint(0, length, (5, length), device=device)
        if far is not None:
            i[1, 2], g[3, length // 2] = far, far
        return x, i, g

    with capture() as reports:
        for length in (6, LOOPED_ROW):
            args = inputs(length)
            torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-5, atol=1e-5)
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    assert [len({d.kernel.split()[0] for d in r.decisions if d.kernel}) for r in reports] == [1], reports
    if device == "cpu":  # a failed device assert ends a GPU context (test_a_position_out_of_range_raises_as_in_eager)
        for length in (6, LOOPED_ROW):
            raise_as_in_eager([(fn, inputs(length, far=length))])


def raise_as_in_eager(cases) -> None:
    """Each (fn, args) raises in eager, and compiled raises IndexOutOfRange, which is also
    the exception eager raised, naming the dim and the kernel."""
    for fn, args in cases:
        with pytest.raises((IndexError, RuntimeError)) as eager:
            fn(*args)
        torch._dynamo.reset()
        with pytest.raises(xpu_lite.IndexOutOfRange, match=r"index out of range for dimension \d of the input") as ours:
            torch.compile(fn, backend="xpu_lite", dynamic=True)(*args)
        assert isinstance(ours.value, type(eager.value)), (eager.value, ours.value)
        assert "(xpu_lite kernel_" in str(ours.value)


def test_positions_computed_in_the_graph_are_computed_where_lookups_read_them(device: str) -> None:
    """A pointwise producer of a lookup's index tensor (OPT's `positions + 2`, a `%`, a flip)
    is computed in the lookup's kernel where it loads each position, from the producer's
    inputs loaded there, not stored by a kernel of its own (before 2026-11-26 it was); two
    lookups reading it compute it each. On cpu, a computed position out of range raises as
    in eager: the bounds assert checks the computed value."""
    def fn(w, i, x):
        j = i * 2 + 1  # read by two lookups
        return (F.embedding(j, w).relu(), w[j - w.shape[0]].sum(-1), torch.gather(x, 1, i % 3),
                x.index_select(0, i[:, 0].flip(0) % 2))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (5, 11):
            w, i, x = torch.randn(n, 4, device=device), torch.randint(0, (n - 1) // 2, (3, 2), device=device), torch.randn(3, 6)
            assert_bitwise(compiled(w, i, x.to(device)), fn(w, i, x.to(device)))
    assert xpu_lite.counters.fallback_nodes == 0
    producers = {d.node: d.kernel for d in reports[0].decisions if d.op in ("aten.mul.Tensor", "aten.add.Tensor",
                                                                             "aten.remainder.Scalar", "aten.flip.default")}
    assert producers and all("computed where" in k and "not stored" in k for k in producers.values()), producers
    assert len(reports[0].kernels) == 4  # one per lookup, each with its consumers
    if device == "cpu":
        w, far = torch.randn(5, 3), torch.tensor([[0, 1], [2, 0]])  # 2 * 2 + 1 = 5: past the end
        raise_as_in_eager([(lambda w, i: F.embedding(i * 2 + 1, w) + 1, (w, far))])


def test_an_index_computed_in_the_lookups_kernel_is_read_in_registers(device: str) -> None:
    """A lookup whose index tensor has its own shape reads it at the element's own
    coordinates: where the same pointwise kernel computes that index, or the inputs of a
    producer computed where the lookup reads it, it is read in registers. `s` is read by the
    positions and by the sums: before 2026-11-26 a kernel stored `s` and a second one looked
    up; now one kernel, storing only the results (grid_sample's coordinates are such values).
    Such a kernel stays pointwise: the sum over its result is a kernel of its own (a
    reduction computes its elements at coordinates of its own; joining it crashed a build)."""
    def fn(x, t, u):
        s = x.abs() * 2
        i = s.clamp(max=5).long()
        g = torch.gather(t, 1, i) + s
        return g, u[i] * s, g.sum(-1)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 6):
            x, t, u = torch.randn(n, 4, device=device), torch.randn(n, 6, device=device), torch.randn(6, device=device)
            got, expected = compiled(x, t, u), fn(x, t, u)
            assert_bitwise(got[:2], expected[:2])
            torch.testing.assert_close(got[2], expected[2])
    assert xpu_lite.counters.fallback_nodes == 0
    assert reports[0].counts()[2] == "2", reports[0].rows()  # the lookups' kernel and the sum's
    lookups = reports[0].kernels[0]
    assert lookups.count("tl.store(") == 2, lookups  # the two results: neither `s` nor `i` is stored


def test_bucketize_is_one_kernel_for_every_input_size(device: str) -> None:
    """bucketize in regions: eager's binary search, each step a lookup of the boundaries
    at positions the same kernel computes (read in registers), one kernel; bitwise eager's
    with NaN, ties and both sides, int32 or int64. A 0-dim input is searched as one
    element, compared in the boundaries' float16 as eager compares it (a 0-dim input does
    not widen them); empty boundaries give eager's int64 zeros (torch's decomposition
    would give them the input's dtype)."""
    def fn(a, b, right):
        return torch.bucketize(a, b, right=right) * 2, torch.bucketize(a, b, out_int32=True, right=right)

    for right in (False, True):
        torch._dynamo.reset()
        xpu_lite.reset_counters()
        compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
        with capture() as reports:
            for n in (5, 9, 6):
                a, b = torch.randn(n, 3, device=device), torch.randn(7, device=device).sort().values
                b[2] = b[1]  # a repeated boundary
                a[0] = torch.tensor([float("nan"), b[1], b[-1]])
                assert_bitwise(compiled(a, b, right), fn(a, b, right))
        assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
        assert reports[0].counts()[2] == "1", reports[0].rows()
    nearly_a_tenth = torch.tensor(0.09998)  # above float16's 0.1 (0.09998), which it rounds to
    for a, b in ((torch.tensor(0.3), torch.linspace(-1, 1, 5)), (torch.randn(4, 3), torch.empty(0)),
                 (nearly_a_tenth, torch.tensor([0.1, 0.2], dtype=torch.float16))):
        torch._dynamo.reset()
        got = torch.compile(lambda a, b: torch.bucketize(a, b), backend="xpu_lite", dynamic=True)(a.to(device), b.to(device))
        assert_bitwise(got, torch.bucketize(a.to(device), b.to(device)))
    b = torch.tensor([-1.0, 0, 2, 5, 7.5], device=device)
    for number in (0, 7.5, -2.5, 100):  # the Scalar overload
        torch._dynamo.reset()
        got = torch.compile(lambda b: torch.bucketize(number, b, right=True), backend="xpu_lite")(b)
        assert_bitwise(got, torch.bucketize(number, b, right=True))
    rows = torch.randn(2, 5, device=device).sort().values  # bucketize takes 1-D boundaries only (searchsorted: rows)
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        torch.compile(lambda a, b: torch.bucketize(a, b), backend="xpu_lite")(torch.randn(2, 3, device=device), rows)


def test_searchsorted_is_one_kernel_per_bit_length_of_the_boundaries(device: str) -> None:
    """searchsorted in regions, as bucketize: rows of N-D boundaries gathered through a
    sorter (eager reads `sorted_sequence[sorter[mid]]` within the row), side="right",
    int32 results, a 1-D sequence searched for N-D values, int boundaries compared with
    float values, a Python number (the Scalar overload): one kernel, bitwise eager's with
    NaN and ties. The search takes as many steps as the boundaries' length has bits, and
    the graph guards on that bit length only: lengths 4 to 7 share a graph, 9 gets its own
    (a 3-step search of 9 would miss the last positions)."""
    def fn(s, v, order, ints):
        return (torch.searchsorted(s, v, sorter=order), torch.searchsorted(s.gather(-1, order), v, side="right", out_int32=True),
                torch.searchsorted(ints, v[0]), torch.searchsorted(ints, 1.5), torch.searchsorted(s[0, 0], v, right=True))

    def inputs(n):
        s = torch.randn(2, 3, n, device=device)
        s[0, 1, 1] = float("nan")
        s[1, 0, 2] = s[1, 0, 0]  # a tie
        order = s.argsort(-1)
        v = torch.randn(2, 3, 4, device=device) * 2
        v[0, 0, 0], v[1, 0, 1] = float("nan"), s[1, 0, 0]
        ints = torch.arange(n, device=device) - n // 2
        return s, v, order, ints

    torch._dynamo.reset()
    xpu_lite.reset_counters()
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (5, 7, 4):
            args = inputs(n)
            assert_bitwise(compiled(*args), fn(*args))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    assert reports[0].counts()[2] == "6", reports[0].rows()  # the gather of sorted rows, then one kernel per search
    args = inputs(9)
    args[1][1, 2, 3] = args[0][1, 2].max() + 1  # past every boundary: found only by a fourth step
    assert_bitwise(compiled(*args), fn(*args))
    assert xpu_lite.counters.forward_graphs == 2
    # float64, which kernels do not compare, keeps the op whole: one eager call, not a search of them
    report = xpu_lite.explain(lambda s, v: torch.searchsorted(s, v), args[0].double(), args[1].double())
    assert [(d.op, d.kind) for g in report.graphs for d in g.decisions] == [("aten.searchsorted.Tensor", DecisionKind.FALLBACK)]


def test_a_computed_scalar_position_is_stored_first(device: str) -> None:
    """nll_loss of a 0-dim target: its position is a 0-dim `where`, waiting to be computed
    inline; the gather loads it, so it is stored by a kernel of its own first."""
    def fn(x, t):
        return F.nll_loss(x, t, reduction="none"), x[(t * 2).clamp(0, x.shape[0] - 1)[None]]

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n, t in ((5, 2), (7, 6), (4, -100)):
        x = torch.randn(n, device=device)
        torch.testing.assert_close(compiled(x, torch.tensor(t, device=device)), fn(x, torch.tensor(t, device=device)),
                                   rtol=1e-6, atol=0)
    assert xpu_lite.counters.fallback_nodes == 0


def test_training_gradients_through_lookups(device: str) -> None:
    """The forward lookups are kernels (their backward scatters too: test_scatter.py);
    gradients bitwise eager's (on a GPU the backward's atomic adds may round otherwise)."""
    def fn(w, x, i, g):
        return (F.embedding(i, w) * 3).sum() + torch.gather(x, 1, g).square().sum() + x[i[0]].sum()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (4, 7):
            w = torch.randn(n, 3, device=device, requires_grad=True)
            x = torch.randn(n, 5, device=device, requires_grad=True)
            i, g = torch.randint(0, n, (2, 3), device=device), torch.randint(0, 5, (n, 2), device=device)
            compiled(w, x, i, g).backward()
            grads = w.grad, x.grad
            w.grad = x.grad = None
            fn(w, x, i, g).backward()
            if device == "cpu":
                assert_bitwise(grads, (w.grad, x.grad))
            else:
                torch.testing.assert_close(grads, (w.grad, x.grad))
    assert xpu_lite.counters.graphs_compiled == 2
    forward = next(r for r in reports if r.kind == "forward")
    assert LOWERED - {"aten.index_select.default"} <= {d.op for d in forward.decisions if d.kind is DecisionKind.KERNEL}


def test_several_index_tensors_broadcast_as_in_eager(device: str) -> None:
    """x[i, j]: index tensors broadcast together; their dims replace the indexed ones where
    those are adjacent, else come first (numpy's rule); the pooling of a classifier's last
    token, x[arange(b), k], too."""
    def fn(x, i, j, k):
        return (x[i, j], x[:, i, j], x[i, :, j], x[torch.arange(x.shape[0], device=x.device), k],
                x[i[:, None], j[None, :]] * 2, x[i, 1:, j[0]])

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (4, 6, 9):
        x = torch.randn(n, n + 2, n + 3, device=device)
        i, j = torch.randint(-n, n, (3,), device=device), torch.randint(0, n, (3,), device=device)
        k = torch.randint(0, n + 2, (n,), device=device)
        assert_bitwise(compiled(x, i, j, k), fn(x, i, j, k))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0


def test_a_second_index_out_of_range_names_both_dims() -> None:
    def fn(x, i, j):
        return x[i, j]

    x, i, j = torch.randn(3, 4), torch.tensor([0, 2]), torch.tensor([1, 4])
    with pytest.raises(IndexError):
        fn(x, i, j)
    with pytest.raises(xpu_lite.IndexOutOfRange, match=r"index out of range for dimensions \[0, 1\] of the input"):
        torch.compile(fn, backend="xpu_lite", dynamic=True)(x, i, j)


def test_what_is_not_lowered_says_why() -> None:
    def fn(x, i):
        return x.double()[i], torch.gather(x[0, 0], 0, i[0])

    report = xpu_lite.explain(fn, torch.randn(4, 4), torch.tensor([0, 3]), dynamic=True)
    reasons = [(row[2], row[4]) for row in report.rows() if row[2] in ("aten.index.Tensor", "aten.gather.default")]
    assert any("a float64 result" in why for op, why in reasons if op == "aten.index.Tensor"), reasons
    assert any("a statically empty or 0-dim result" in why for op, why in reasons if op == "aten.gather.default"), reasons


def test_indirect_loads_only_in_untiled_kernels() -> None:
    buf = ir.Buffer("in_ptr0", torch.float32, (8,), (1,))
    out = ir.Buffer("out_ptr0", torch.float32, (8,), (1,))
    values = (ir.Load("in_ptr0", ir.XINDEX, torch.int64),
              ir.Load("in_ptr0", ir.value_symbol(0) * 2, torch.float32, bounds=((0, sympy.Integer(4)),), message="embedding"))
    kernel = ir.Kernel("kernel_0", sympy.Integer(8), (buf,), (out,), values, (ir.Store("out_ptr0", ir.XINDEX, 1),), ("embedding",))
    assert ir.verify(kernel) is kernel and kernel.checks_bounds and kernel.size_symbols == ()
    assert ir.verify(dataclasses.replace(kernel, rnumel=sympy.Integer(4)))  # a reduction's pass loads them too
    with pytest.raises(ir.IRError, match="at positions that are not earlier integer values"):
        ir.verify(dataclasses.replace(kernel, tile=ir.Tile(0, sympy.Integer(1), sympy.Integer(8), sympy.Integer(1))))
    unbound = (values[0], dataclasses.replace(values[1], bounds=()))
    with pytest.raises(ir.IRError, match="indexes with a value it does not bound"):
        ir.verify(dataclasses.replace(kernel, values=unbound + (values[1],)))
