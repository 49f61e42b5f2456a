"""Every Python example in README.md and docs/*.md runs, and does what its comments say.

Blocks run in a fresh namespace each (the README's reader may paste any one of them);
the two that use a user's `model` and `x` get a small one. Claims the README makes in
comments (the summary dict, the kernel each softmax node joins, the wrapper listing) are
read from the README and compared with what the code produces.
"""
from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

import xpu_lite

from .conftest import xpu_lite_log

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
TEXT = "\n".join(document.read_text() for document in DOCUMENTS)
# each block (source -> its document) with the blank lines before it, so tracebacks point
# at the document's own lines; a block in a list item is indented
BLOCKS: dict[str, Path] = {}
for _document in DOCUMENTS:
    _text = _document.read_text()
    for _m in re.finditer(r"( *)```python\n(.*?)\1```", _text, re.S):
        BLOCKS["\n" * _text.count("\n", 0, _m.start(2)) + textwrap.dedent(_m.group(2))] = _document


def block(containing: str) -> str:
    found = [b for b in BLOCKS if containing in b]
    assert len(found) == 1, f"expected one python block in README.md or docs/ containing {containing!r}, found {len(found)}"
    return found[0]


def run(source: str, **names: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme_example", **names}
    exec(compile(source, str(BLOCKS.get(source, README)), "exec"), namespace)
    return namespace


def test_relative_links_point_at_files_and_headings() -> None:
    """The README's links into docs/ and back (README#kernels, lite_mode.md, ...) lead
    somewhere: the file exists and, where an anchor is named, it has that heading."""
    def anchors(path: Path) -> set[str]:
        return {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", path.read_text(), re.M)}

    links = 0
    for document in DOCUMENTS:
        for target in re.findall(r"\]\(([^)#:]*)(?:#([^)]*))?\)", document.read_text()):
            path = (document.parent / target[0]).resolve() if target[0] else document
            assert path.exists(), (document.name, target)
            if target[1]:
                assert target[1] in anchors(path), (document.name, target)
            links += 1
    assert links >= 10


def user_model() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
    return model, torch.randn(4, 8)


def test_every_python_block_is_covered() -> None:
    covered = ["y = cm(x)", '"compile_ops"', "compile_with_inductor", "torch.softmax", "report.summary()",
               "torch.nonzero(x)", "args.clear()", 'getLogger("xpu_lite")', "torch.cat([x, y], dim=-1).relu()",
               "F.embedding(i, w) * 2.0", "F.embedding(i, w).sum()", "F.max_pool2d(x, 3, 2, 1, return_indices=True)",
               "F.adaptive_max_pool2d(x, (3, 4)", 'F.grid_sample(x, grid, mode="bilinear"', "def sliding_window("]
    assert len(BLOCKS) == len(covered), "a python block was added to README.md or docs/: test it here"
    for marker in covered:
        block(marker)


def test_intro_is_bitwise_equal_to_eager() -> None:
    model, x = user_model()
    ns = run(block("y = cm(x)"), model=model, x=x)
    assert torch.equal(ns["y"], model(x))


def test_options_example(tmp_path: Path) -> None:
    model, x = user_model()
    source = block('"compile_ops"')
    assert "/tmp/xpu_lite_debug" in source
    ns = run(source.replace("/tmp/xpu_lite_debug", str(tmp_path)), model=model, x=x)
    model(x).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    out = ns["cm"](x)
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)  # gelu is a kernel
    out.sum().backward()
    torch.testing.assert_close([p.grad for p in model.parameters()], expected, rtol=1e-5, atol=1e-5)
    (graph_dir,) = tmp_path.iterdir()
    written = {p.name for p in graph_dir.iterdir()}
    # the model's parameters require grad: a forward and a backward graph, gelu a kernel in each
    assert {"dynamo_graph.py", "decomp_plan.txt", "forward_wrapper.py", "forward_kernel_0.py", "backward_wrapper.py"} <= written


def test_compile_regions_example() -> None:
    ns = run(block("compile_with_inductor"))
    f, x = ns["f"], torch.randn(3, 16)
    torch.testing.assert_close(ns["cm"](x), f(x), rtol=1e-5, atol=1e-5)
    rows = xpu_lite.explain(f, x, mode="lite", dynamic=True).rows()
    decided = {op: (decision, reason) for _, _, op, decision, reason in rows}
    assert decided["aten.sin.default"][0] == "fallback"
    assert decided["aten.layer_norm.default"][0] == "fallback"  # "stays aten.layer_norm"
    for op in ("aten.gelu.default", "aten.sigmoid.default"):  # both regions, "fused into the same kernel"
        assert decided[op] == ("kernel", "in kernel_0 (4 nodes)"), decided[op]


def test_reduction_explain_example(capsys: pytest.CaptureFixture[str]) -> None:
    source = block("torch.softmax")
    run(source)
    printed = capsys.readouterr().out
    claimed = re.search(r"# (.*?): \"in kernel_0", source).group(1).split(", ")
    for node in claimed:
        assert re.search(rf"^\S+\s+{node}\s.*in kernel_0 \(5 nodes; reduces \S+ per row", printed, re.M), node
    assert "persistent when <= 1024, else looped" in printed
    assert printed.strip().splitlines()[-1] == "1 0"  # one persistent launch, no looped one


def test_placing_ops_example() -> None:
    ns = run(block("torch.cat([x, y], dim=-1).relu()"))  # its asserts: bitwise eager, cat in a kernel
    assert "torch.ops.aten." not in ns["sources"][0]  # the pad too: no eager call at all


def test_pooling_example() -> None:
    ns = run(block("F.max_pool2d(x, 3, 2, 1, return_indices=True)"))  # its asserts: values, indices and averages bitwise eager's
    assert "torch.ops.aten." not in ns["sources"][0] and xpu_lite.counters.fallback_nodes == 0


def test_adaptive_pooling_example() -> None:
    run(block("F.adaptive_max_pool2d(x, (3, 4)"))  # its asserts: bitwise eager, one graph, no eager call
    assert xpu_lite.counters.fallback_nodes == 0
    assert xpu_lite.counters.kernels_compiled == 2  # one per pool, the relu in the avg's


def test_grid_sample_example() -> None:
    run(block('F.grid_sample(x, grid, mode="bilinear"'))  # its asserts: close to eager, one kernel, no eager call
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.kernels_compiled == 1


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")  # the example's eager reference
def test_flex_attention_example() -> None:
    pytest.importorskip("triton")
    ns = run(block("def sliding_window("))  # its asserts: eager's result, the listed blocks only
    mask = ns["mask"]
    listed = mask.kv_num_blocks.sum() + mask.full_kv_num_blocks.sum()
    assert (listed.item(), mask.kv_indices.shape[-1] ** 2) == (3, 4)  # the comment's "3 of 4 blocks"


def test_lookups_example(capsys: pytest.CaptureFixture[str]) -> None:
    ns = run(block("F.embedding(i, w) * 2.0"))  # its asserts: bitwise eager, no eager call
    assert "torch.ops.aten." not in ns["sources"][0]
    printed = capsys.readouterr().out.strip()
    claimed = re.search(r"print\(e\)  # (.*)", block("F.embedding(i, w) * 2.0")).group(1)
    assert printed == claimed


def test_scatters_example() -> None:
    run(block("F.embedding(i, w).sum()"))  # its asserts: bitwise eager gradients, a kernel
    assert xpu_lite.counters.fallback_nodes == 0


def test_what_was_compiled_example(capsys: pytest.CaptureFixture[str]) -> None:
    source = block("report.summary()")
    ns = run(source)
    claimed = ast.literal_eval(re.search(r"print\(report\.summary\(\)\)\s+# (\{.*\})", source).group(1))
    assert ns["report"].summary() == claimed
    assert "def call(args):" in ns["sources"][0]
    f, x = ns["f"], torch.randn(3, 4)
    assert xpu_lite.explain(ns["cm"], x).summary() == claimed  # cm's own mode, as the README says
    torch.testing.assert_close(ns["cm"](x), f(x))
    assert "graphs_compiled=" in capsys.readouterr().out


def test_wrapper_listing_is_what_the_generator_writes() -> None:
    ns = run(block("torch.nonzero(x)"))
    generated = ns["source"]
    listing = block("args.clear()")
    assert generated[generated.index("def call(args):"):].strip() == listing.strip()
    torch.testing.assert_close(ns["result"], torch.tensor([[0], [2], [3]]) * 2)


def test_logging_example_prints_the_lines_the_readme_shows() -> None:
    """The README's sample log lines (the default-mode demo block, one layer, forward and
    backward, on cpu): the counts must match; the seconds are this machine's."""
    import logging

    from xpu_lite.demo import TransformerStack

    with xpu_lite_log() as lines:
        logging.getLogger("xpu_lite").setLevel(logging.WARNING)
        run(block('getLogger("xpu_lite")'))
        assert logging.getLogger("xpu_lite").getEffectiveLevel() == logging.INFO  # what the block does
        torch.manual_seed(0)
        model = TransformerStack(layers=1)
        xpu_lite.explain(lambda x: model(x).sum().backward(), torch.randn(2, 8, 64), dynamic=True)
    claimed = re.findall(r"`(xpu_lite graph_\d+[^`]*)`", TEXT.replace("\n", " "))
    assert len(claimed) == 2, claimed

    def shape(line: str) -> str:  # graph numbers and seconds vary; the counts must not
        return re.sub(r"graph_\d+", "graph_N", re.sub(r"\d+\.\d+ s", "T s", re.sub(r"\s+", " ", line)))

    got = {shape(line) for line in lines}
    for line in claimed:
        assert shape(line) in got, (line, lines)
