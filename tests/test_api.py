"""explain, run_and_get_code, counters, debug_dir, strict, entry point."""
from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import xpu_lite
from xpu_lite.lowering import LoweringError
from xpu_lite.report import capture

from .conftest import one_rank, xpu_lite_log


def fn(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    with xpu_lite.compile_region():
        y = y * 2
    return y.sum(-1)


def test_explain_reports_every_node_with_a_reason() -> None:
    report = xpu_lite.explain(fn, torch.randn(3, 4), mode="lite", dynamic=True)
    text = str(report)
    assert text.splitlines()[0].split() == ["graph", "node", "op", "decision", "reason"]
    graph = report.graphs[0]
    assert {d.node for d in graph.decisions} == {row[1] for row in graph.rows()}
    for d in graph.decisions:
        if d.kind is xpu_lite.DecisionKind.FALLBACK:
            assert d.reason is not None and str(d.reason) in text
    assert report.summary()["fallback: outside region"] >= 3
    assert report.summary()["kernel"] == 1  # the mul in the region
    (kernel_row,) = [row for row in graph.rows() if row[3] == "kernel"]
    assert "in kernel_0 (1 node)" in kernel_row[4]


def test_explain_of_a_compiled_function_takes_its_settings_unless_given() -> None:
    """explain(cm, x) reports what cm runs: cm's mode, options and dynamic, where cm was
    compiled with backend="xpu_lite" (until 2026-11-29 the default mode, every node a kernel)."""
    lite = torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)
    report = xpu_lite.explain(lite, torch.randn(3, 4))
    assert report.graphs[0].mode == "lite" and report.summary()["kernel"] == 1
    assert "size symbol" in report.graphs[0].source  # dynamic=True taken too
    assert "size symbol" not in xpu_lite.explain(lite, torch.randn(3, 4), dynamic=False).graphs[0].source
    assert "fallback: outside region" not in xpu_lite.explain(lite, torch.randn(3, 4), mode="default").summary()
    linear = torch.compile(torch.nn.Linear(4, 2), backend="xpu_lite", options={"mode": "lite", "keep_ops": ["aten.addmm"]})
    assert xpu_lite.explain(linear, torch.randn(3, 4)).graphs[0].mode == "lite"
    other = torch.compile(fn, backend="aot_eager")  # another backend's settings are not ours: the default mode
    assert xpu_lite.explain(other, torch.randn(3, 4)).graphs[0].mode == "default"


def test_run_and_get_code_orders_forward_before_backward() -> None:
    compiled = torch.compile(lambda x: (x.sin() * 2).sum(), backend="xpu_lite", mode="lite")
    x = torch.randn(5, requires_grad=True)
    _, codes = xpu_lite.run_and_get_code(lambda: compiled(x).backward())
    assert len(codes) == 2
    assert "_forward" in codes[0].splitlines()[0] and "_backward" in codes[1].splitlines()[0]


def test_run_and_get_code_warns_when_nothing_compiled() -> None:
    compiled = torch.compile(torch.sin, backend="xpu_lite", mode="lite")
    compiled(torch.randn(3))
    with pytest.warns(UserWarning, match="no graph was compiled"):
        _, codes = xpu_lite.run_and_get_code(compiled, torch.randn(3))
    assert codes == []


def _break_inside_a_region(x):
    y = x.sin()
    with xpu_lite.compile_region():
        a = y * 2
        torch._dynamo.graph_break()
        b = a.cos()
    return b + 1


def _break_between(x):
    y = x.sin() * 2
    torch._dynamo.graph_break()
    return y.cos()


def test_explain_says_what_dynamo_ran_eagerly_and_where_it_broke_the_graph() -> None:
    """Dynamo cannot resume inside a compile region after a graph break: it runs the whole
    function eagerly, and xpu_lite sees no graph. explain says so, with the remedy, and so
    does run_and_get_code's warning. A graph break elsewhere is listed under the graphs it
    separates; a function Dynamo traces whole gets no notes. The results are eager's."""
    x = torch.randn(3, 4)
    report = xpu_lite.explain(_break_inside_a_region, x, mode="lite")
    assert report.graphs == () and report.dynamo.skipped_functions == 1
    assert [m for m, _ in report.dynamo.untraced] == ["torch.fx.traceback.annotate escaped from compiled region"]
    text = str(report)
    assert "Dynamo ran 1 function(s) eagerly, compiling nothing in them." in text
    assert "a graph break inside a compile region" in text and "move the break out of the region" in text
    torch._dynamo.reset()
    compiled = torch.compile(_break_inside_a_region, backend="xpu_lite", mode="lite")
    with pytest.warns(UserWarning, match=r"(?s)no graph was compiled.*move the break out of the region"):
        result, codes = xpu_lite.run_and_get_code(compiled, x)
    assert codes == [] and torch.equal(result, _break_inside_a_region(x))

    torch._dynamo.reset()
    report = xpu_lite.explain(_break_between, x, mode="lite")
    assert len(report.graphs) == 2 and report.dynamo.skipped_functions == 0 and not report.dynamo.untraced
    assert [m for m, _ in report.dynamo.graph_breaks] == ["Call to `torch._dynamo.graph_break()`"]
    assert "Dynamo graph breaks (the code between two graphs runs in Python):" in str(report)
    torch._dynamo.reset()
    report = xpu_lite.explain(lambda t: t.sin() * 2, x, mode="lite")
    assert report.dynamo == xpu_lite.report.DynamoNotes() and "Dynamo" not in str(report)


def test_counters_count_and_reset() -> None:
    compiled = torch.compile(fn, backend="xpu_lite", mode="lite")
    compiled(torch.randn(3, 4))
    counters = xpu_lite.counters
    assert counters.graphs_compiled == 1 and counters.forward_graphs == 1 and counters.fallback_nodes == 3
    assert counters.kernels_compiled == 1 and counters.kernel_launches == 1
    xpu_lite.reset_counters()
    assert counters.graphs_compiled == counters.fallback_nodes == 0


def test_debug_dir_writes_each_stage(tmp_path: Path) -> None:
    compiled = torch.compile(fn, backend="xpu_lite", options={"mode": "lite", "debug_dir": str(tmp_path)})
    compiled(torch.randn(3, 4))
    (graph_dir,) = list(tmp_path.iterdir())
    names = sorted(p.name for p in graph_dir.iterdir())
    assert names == [
        "decomp_plan.txt", "dynamo_graph.py", "inference_aten_graph.py", "inference_decisions.txt",
        "inference_kernel_0.py", "inference_wrapper.py",
    ]
    assert "def kernel_0_mul(" in (graph_dir / "inference_kernel_0.py").read_text()
    assert "def call(args):" in (graph_dir / "inference_wrapper.py").read_text()
    assert "outside region" in (graph_dir / "inference_decisions.txt").read_text()
    assert "def forward(" in (graph_dir / "dynamo_graph.py").read_text()
    assert "torch.ops.aten." in (graph_dir / "inference_aten_graph.py").read_text()
    assert (graph_dir / "decomp_plan.txt").read_text().startswith("mode: lite")


def test_without_a_debug_dir_no_stage_is_printed(monkeypatch, tmp_path: Path) -> None:
    """Printing a graph costs milliseconds of a compile: only a debug dir pays for it (Dynamo
    prints its graph for its own structured log, which is not xpu_lite's to change)."""
    printed_by: list[str] = []
    print_readable, summary = torch.fx.GraphModule.print_readable, xpu_lite.decomp.plan.DecompPlan.summary

    def recorded(method):
        def wrapper(*args, **kwargs):
            printed_by.append(sys._getframe(1).f_code.co_filename)
            return method(*args, **kwargs)
        return wrapper
    monkeypatch.setattr(torch.fx.GraphModule, "print_readable", recorded(print_readable))
    monkeypatch.setattr(xpu_lite.decomp.plan.DecompPlan, "summary", recorded(summary))
    x = torch.randn(3, 4)
    assert torch.equal(torch.compile(fn, backend="xpu_lite", mode="lite")(x), fn(x))
    assert not [f for f in printed_by if "xpu_lite" in Path(f).parts], printed_by
    torch._dynamo.reset()
    torch.compile(fn, backend="xpu_lite", options={"mode": "lite", "debug_dir": str(tmp_path)})(x)
    assert sum("xpu_lite" in Path(f).parts for f in printed_by) == 3, printed_by  # Dynamo's graph, the plan, the aten graph


def test_debug_dir_of_a_distributed_run_has_a_folder_per_rank(tmp_path: Path) -> None:
    """Each rank numbers its graphs from graph_0: in one folder they would overwrite each other."""
    with one_rank(str(tmp_path / "store")):
        torch.compile(fn, backend="xpu_lite", options={"mode": "lite", "debug_dir": str(tmp_path / "debug")})(torch.randn(3, 4))
    (graph_dir,) = list((tmp_path / "debug" / "rank_0").iterdir())
    assert graph_dir.name.startswith("graph_") and (graph_dir / "inference_wrapper.py").exists()


def test_strict_raises_when_a_selected_node_cannot_compile() -> None:
    def no_lowering(x: torch.Tensor) -> torch.Tensor:
        with xpu_lite.compile_region():
            return torch.special.bessel_j0(x) * 2  # bessel_j0 has no Triton lowering yet

    compiled = torch.compile(no_lowering, backend="xpu_lite", options={"mode": "lite", "strict": True})
    with pytest.raises(Exception, match=r"aten\.special_bessel_j0\.default.*strict=True") as info:
        compiled(torch.randn(3, 4))
    assert isinstance(info.value, LoweringError) or isinstance(info.value.__cause__, LoweringError) or "LoweringError" in str(info.value)


def test_entry_point_resolves_without_import_and_import_is_idempotent() -> None:
    script = textwrap.dedent(
        """
        import torch
        f = torch.compile(lambda x: x.cos() + 1, backend="xpu_lite", mode="lite")
        x = torch.randn(4)
        assert torch.equal(f(x), x.cos() + 1)
        import xpu_lite, importlib
        xpu_lite._register(); importlib.reload(xpu_lite)
        assert xpu_lite.counters.graphs_compiled == 1
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_timings_and_the_log_say_what_each_graph_became_and_how_long_it_took() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    with xpu_lite_log() as lines:
        report = xpu_lite.explain(lambda x: fn(x).sum().backward(), x, mode="lite", dynamic=True)
    table = report.timings().splitlines()
    assert table[0].split() == ["graph", "nodes", "kernels", "nodes", "in", "kernels", "fallbacks", "compile", "s", "kernels", "s"]
    assert [row.split()[0] for row in table[2:]] == [g.name for g in report.graphs] and len(report.graphs) == 2
    for graph in report.graphs:
        name, nodes, kernels, fused, fallbacks, compile_s, kernel_s = graph.counts()
        assert int(nodes) == len(graph.decisions) and int(fallbacks) == len(graph.fallbacks)
        assert int(kernels) == len({d.kernel.split()[0] for d in graph.decisions if d.kernel}) >= 1  # the region's mul
        assert 0 < graph.kernel_s <= graph.compile_s and (kernel_s, compile_s) == (f"{graph.kernel_s:.2f}", f"{graph.compile_s:.2f}")
        assert f"xpu_lite {graph.summary_line()}" in lines, lines
    forward = report.graphs[0].counts()
    assert f"{forward[2]} kernels ({forward[3]} nodes), {forward[4]} eager fallbacks" in report.graphs[0].summary_line()
    assert any(" Dynamo nodes traced by AOTAutograd and compiled in " in line for line in lines), lines


def _reasons(report) -> dict[str, str]:
    return {row[2]: row[4] for row in report.rows() if row[3] == "fallback"}


def test_an_unpack_of_a_kept_op_does_not_say_decomposed() -> None:
    """The outputs of an op that stays whole (native_dropout, kept for the RNG stream) are
    unpacks with no "from ... (decomposed)" note (they said so before 2026-11-27); those of
    a decomposition's node (layer_norm's var_mean) keep it."""
    model = torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.Dropout(0.1))
    rows = xpu_lite.explain(model, torch.randn(3, 16)).rows()
    unpacks = {row[1]: row[4] for row in rows if row[3] == "unpack"}
    dropout = [node for node, note in unpacks.items() if "native_dropout" in note or not note]
    assert len(dropout) == 2 and all(unpacks[node] == "" for node in dropout), unpacks
    assert sum("from aten.native_layer_norm.default (decomposed)" in note for note in unpacks.values()) == 2, unpacks


def test_a_fallback_says_why_its_lowering_refused_the_node() -> None:
    """An op with a lowering that refuses these arguments says which argument and what the
    lowering takes, not "no lowering yet"; matmul says it is aten's by design, and is no
    error under strict=True."""
    def f(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x.double().sin() + 1).float() @ w + torch.special.bessel_j0(y)

    report = xpu_lite.explain(f, torch.randn(3, 4), torch.randn(4, 4), torch.randn(3, 4))
    reasons = _reasons(report.graphs[0])
    assert reasons["aten.sin.default"] == (
        "no lowering: a float64 result; this lowering takes float32, float16, bfloat16"), reasons
    assert reasons["aten.mm.default"].startswith("aten kernel: matmul and convolution run aten's kernel"), reasons
    assert reasons["aten.special_bessel_j0.default"] == "no lowering: no Triton lowering for this op yet", reasons
    kernels = [row for row in report.graphs[0].rows() if row[3] == "kernel"]
    assert [row[2] for row in kernels] == ["aten.add.Tensor"], kernels  # the float32 add after mm
    # the other matmuls Inductor leaves to aten (addbmm, bilinear's _trilinear) say so too
    # ("no Triton lowering for this op yet" before 2026-11-27); addmv is kernels, as mv is
    def g(m, b1, b2, x1, x2, w, v, a):
        return torch.addbmm(m, b1, b2), torch.nn.functional.bilinear(x1, x2, w), torch.addmv(v, a, v[:3], beta=0.5, alpha=2.0)

    args = (torch.randn(3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 3), torch.randn(2, 4),
            torch.randn(5, 3, 4), torch.randn(3), torch.randn(3, 3))
    reasons = _reasons(xpu_lite.explain(g, *args).graphs[0])
    assert set(reasons) == {"aten.addbmm.default", "aten._trilinear.default"}, reasons
    assert all(r.startswith("aten kernel: matmul and convolution run aten's kernel") for r in reasons.values()), reasons
    torch.testing.assert_close(torch.compile(g, backend="xpu_lite", options={"strict": True})(*args), g(*args))
    matmul = torch.compile(lambda x, w: (x @ w).relu(), backend="xpu_lite", options={"strict": True})
    x, w = torch.randn(3, 4), torch.randn(4, 5)
    torch.testing.assert_close(matmul(x, w), (x @ w).relu())


def test_attention_is_aten_by_design_forward_and_backward_even_under_strict(device: str) -> None:
    """The fused attention ops (flash on cpu and cuda, memory-efficient, cuDNN, xpu's
    overrideable one) run aten's kernel, as matmul does. Before 2026-11-27 the forward said
    `random op` (its schema is random only by its dropout) and the backward `no lowering`,
    which strict=True raised on."""
    def f(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).sin()

    q, k, v = (torch.randn(2, 2, 5, 8, device=device, requires_grad=True) for _ in range(3))
    compiled = torch.compile(f, backend="xpu_lite", options={"strict": True})
    with capture() as reports:
        got = compiled(q, k, v)
        got.sum().backward()
    attention = [(d.op, str(d.reason)) for r in reports for d in r.fallbacks if "attention" in d.op]
    assert len(attention) == 2 and all(r.startswith("aten kernel: attention runs aten's fused kernel") for _, r in attention), \
        attention
    grads = [t.grad for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    want = f(q, k, v)
    want.sum().backward()
    torch.testing.assert_close(got, want)
    for g, t in zip(grads, (q, k, v), strict=True):
        torch.testing.assert_close(g, t.grad)


def test_strict_accepts_host_scalars_and_empty_results(device: str) -> None:
    """strict=True raises only where a Triton lowering refused an op of the model. Under
    dynamic=True a Python float (an RMSNorm's eps) is a 0-dim float64 host tensor whose
    casts are host math: `host scalar` on cpu, `other device` on a GPU. An empty result (a
    KV cache's `torch.tensor([])`) is `aten kernel`, an allocation. Before 2026-11-27 both
    raised on cpu, in 22 of the 24 runs of `tools/hf_models.py --option strict=True`."""
    from .test_wrapper import _RMSNorm

    norm = _RMSNorm().to(device)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.tensor([], device=x.device), norm(x).flatten()])

    compiled = torch.compile(f, backend="xpu_lite", dynamic=True, options={"strict": True})
    with capture() as reports, torch.no_grad():
        for n in (3, 5):
            x = torch.randn(n, 8, device=device)
            torch.testing.assert_close(compiled(x), f(x), rtol=1e-5, atol=1e-6)
    kinds = {d.op: d.reason.kind.value for r in reports for d in r.decisions if d.reason}  # cat skips the empty one
    host = "host scalar" if device == "cpu" else "other device"
    assert kinds.get("aten.lift_fresh_copy.default") == "aten kernel", kinds
    assert "prims.convert_element_type.default" in kinds and set(kinds.values()) <= {"aten kernel", host}, kinds


def test_a_constant_tensor_of_the_graph_is_a_constant_not_a_fallback() -> None:
    """torch.tensor(...) inside the function: AOTAutograd holds it as a graph attribute (a
    name in the generated module) that lift_fresh_copy copies; only the copy is a call."""
    def f(x: torch.Tensor) -> torch.Tensor:
        return x * torch.tensor([1.0, 2.0, 3.0])

    x = torch.randn(2, 3)
    report = xpu_lite.explain(f, x, mode="lite")
    kinds = {row[2]: row[3] for row in report.graphs[0].rows()}
    constants = [op for op, kind in kinds.items() if kind == "constant"]
    assert len(constants) == 1 and constants[0].startswith("_tensor_constant"), kinds
    assert kinds["aten.lift_fresh_copy.default"] == "fallback"
    assert all(not d.op.startswith("_tensor_constant") for d in report.graphs[0].fallbacks)
    result, sources = xpu_lite.run_and_get_code(torch.compile(f, backend="xpu_lite", mode="lite"), x)
    assert torch.equal(result, f(x))
    assert re.search(r"= torch\.ops\.aten\.lift_fresh_copy\.default\(_const\d+\)  # lift_fresh_copy", sources[0]), sources[0]


def test_an_allocation_is_aten_by_design_even_under_strict() -> None:
    """`torch.empty` (and `torch.empty_permuted`, before 2026-11-26 "no lowering") has no
    values for a kernel to compute: aten allocates, by design (the `aten kernel` reason, as
    matmul's), so strict=True does not raise on it. Here slice assignments read each
    allocation (the part they leave is the base's); one that only a fill reads (`fill_`,
    `full_like`: registered as reading nothing of it, since 2026-12-03) is not made at all."""
    def f(x: torch.Tensor) -> torch.Tensor:
        e = torch.empty(x.shape[0], 3, device=x.device)
        e[:, 1:] = 2.0
        e[:, :1] = x[:, :1]
        p = torch.empty_permuted((x.shape[0], 3), (1, 0))
        p[:, :2] = 1.0
        p[:, 2:] = x[:, 2:]
        return e + x + p

    report = xpu_lite.explain(f, torch.randn(4, 3), dynamic=True)
    reasons = _reasons(report.graphs[0])
    assert reasons["aten.empty.memory_format"].startswith("aten kernel: an allocation"), reasons
    assert reasons["aten.empty_permuted.default"].startswith("aten kernel: an allocation"), reasons
    compiled = torch.compile(f, backend="xpu_lite", options={"strict": True}, dynamic=True)
    x = torch.randn(5, 3)
    assert torch.equal(compiled(x), f(x))

    def filled(x: torch.Tensor) -> torch.Tensor:
        return torch.empty(x.shape[0], 3, device=x.device).fill_(2.0) + x + torch.full_like(x.sort().values, 1.0)

    rows = xpu_lite.explain(filled, torch.randn(4, 3), dynamic=True).graphs[0].rows()
    assert {row[2]: row[3] for row in rows if row[2] in ("aten.empty.memory_format", "aten.sort.default")} == {
        "aten.empty.memory_format": "fallback (dead, removed)", "aten.sort.default": "fallback (dead, removed)"}, rows
    compiled = torch.compile(filled, backend="xpu_lite", dynamic=True)
    assert torch.equal(compiled(x), filled(x))


def test_meta_tensors_run_eagerly_saying_why() -> None:
    """A graph of meta tensors (shapes only: a model built on `device="meta"` to size it)
    has no device Triton runs on: every node is eager's op, with the reason `other device`.
    Before 2026-11-28 the default mode compiled kernels for it, and each failed to load
    ("0 active drivers") with a warning."""
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (torch.nn.functional.layer_norm(x, (x.shape[-1],), w).sin() * 2).sum(-1)

    compiled = torch.compile(f, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 5):
            x, w = torch.randn(n, 4, device="meta"), torch.randn(4, device="meta")
            result = compiled(x, w)
            assert result.device.type == "meta" and result.shape == f(x, w).shape == (n,)
    calls = [d for r in reports for d in r.decisions if d.kind not in (xpu_lite.DecisionKind.UNPACK, xpu_lite.DecisionKind.SIZE)]
    assert calls and {str(d.reason).split(";")[0] for d in calls} == {
        "other device: meta tensors: Triton kernels run on xpu, cuda, cpu"}, [d.why() for d in calls]


def test_a_kernel_function_is_named_by_its_label_and_ops() -> None:
    """A GPU profile shows a kernel by its Triton function's name: the report's label, then
    the ops it computes (before decomposition, at most five, first computed first), so the
    forward's and the backward's `kernel_0` differ, and one graph's kernels read as what they
    compute. Before 2026-11-28 every graph's first kernel was `kernel_0`."""
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (x.shape[-1],), w))
        return (y.sin().cos().exp().tanh().sigmoid() * 3).relu()

    x, w = torch.randn(4, 8, requires_grad=True), torch.randn(8, requires_grad=True)
    compiled = torch.compile(f, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        compiled(x, w).sum().backward()
    forward, backward = ({name for source in r.kernels for name in re.findall(r"def (kernel_\w+)\(", source)} for r in reports)
    assert forward == {"kernel_0_native_layer_norm_gelu_sin_cos_exp_persistent",
                       "kernel_0_native_layer_norm_gelu_sin_cos_exp_looped"}, forward
    assert backward and all(name.startswith("kernel_") for name in backward) and not forward & backward, backward
    assert "kernel = kernel_0_native_layer_norm_gelu_sin_cos_exp_persistent if persistent" in reports[0].source


def test_guard_latency_unmeasured_skips_dynamos_guard_timing_and_restores_it() -> None:
    """The suite's compiles skip Dynamo's guard timing (conftest); the helper, nested here
    around a measuring stand-in, skips it inside and puts back what was there."""
    from torch._dynamo import guards

    from xpu_lite import _torch_compat as compat

    timed = []
    session = guards.profile_guard_manager
    guards.profile_guard_manager = lambda *args: timed.append(args) or 0.0
    try:
        for skip in (False, True, False):
            torch._dynamo.reset()
            with compat.guard_latency_unmeasured() if skip else contextlib.nullcontext():
                assert torch.equal(torch.compile(torch.sin, backend="xpu_lite")(torch.ones(3)), torch.ones(3).sin())
        assert len(timed) == 2, "the frame compiled inside the helper was timed, or one outside was not"
    finally:
        guards.profile_guard_manager = session
    assert session is not torch._C._dynamo.guards.profile_guard_manager, "the suite's compiles time their guards"


def test_opinfo_test_lookup_by_frames_finds_the_unittest_test_as_torchs_does() -> None:
    """The suite's OpInfo samples find their unittest test (for seeds and tracked inputs)
    by walking frames (conftest, where OpInfo is imported): inside a TestCase's test method
    it is that method, in a pytest function none, as torch's own lookup gives; what was
    there before is put back."""
    import unittest

    from torch.testing._internal import common_utils
    from torch.testing._internal.common_methods_invocations import op_db

    from xpu_lite import _torch_compat as compat

    class Case(unittest.TestCase):
        def test_probe(self) -> None:
            self.found = common_utils.extract_test_fn()
            self.sample = next(iter(next(op for op in op_db if op.name == "sin").sample_inputs("cpu", torch.float32)))

    before = common_utils.extract_test_fn
    with compat.opinfo_test_lookup_by_frames():
        assert common_utils.extract_test_fn.__module__ == "xpu_lite._torch_compat", "torch's lookup, which reads every frame"
        case = Case("test_probe")
        case.test_probe()
        assert case.found is Case.test_probe and isinstance(case.sample.input, torch.Tensor)
        assert common_utils.extract_test_fn() is None
    assert common_utils.extract_test_fn is before
