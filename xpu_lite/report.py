"""What was compiled and why: per-graph reports, counters, and capture of both.

Each compiled graph produces a GraphReport (decisions + generated source). Reports are
published to whoever is capturing (run_and_get_code, explain) and counted. The benchmark
scripts' tables and peak-memory measure are here too.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from . import _torch_compat as compat
from .lowering import Decision, DecisionKind


@dataclasses.dataclass
class Counters:
    """Process-wide counts since the last reset()."""

    graphs_compiled: int = 0  # forward/inference/backward graphs through the wrapper
    forward_graphs: int = 0  # forward + inference graphs (one per Dynamo compilation)
    fallback_nodes: int = 0  # eager aten calls emitted into wrappers
    kernels_compiled: int = 0  # Triton kernels (lands with the Triton issue)
    kernel_launches: int = 0
    persistent_launches: int = 0  # reduction kernels launched with the whole row in one block
    looped_launches: int = 0  # reduction kernels launched walking the row in chunks

    def count_reduction(self, persistent: bool) -> None:
        self.kernel_launches += 1
        if persistent:
            self.persistent_launches += 1
        else:
            self.looped_launches += 1

    def reset(self) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, 0)


COUNTERS = Counters()


@dataclasses.dataclass(frozen=True)
class GraphReport:
    name: str  # "graph_0_forward"
    kind: str  # forward | backward | inference | compiled_autograd (the backward compiled autograd captures)
    mode: str
    decisions: tuple[Decision, ...]
    emitted: frozenset[str]
    source: str
    kernels: tuple[str, ...] = ()  # Triton source of each fused kernel
    compile_s: float = 0.0  # seconds in xpu_lite for this graph (after AOTAutograd's trace)
    kernel_s: float = 0.0  # of which partitioning and generating, compiling and loading kernels
    subgraph: str = ""  # a higher-order op's subgraph ("true_graph_0"), compiled with the graph it is in
    ddp_bucket: str = ""  # "graph_1": Dynamo's graph whose piece this is, split at DDP's gradient buckets

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        out = []
        for d in self.decisions:
            if d.node in self.emitted:
                decision = d.kind.value
            elif d.kind is DecisionKind.VIEW:
                decision = "view (folded into kernel loads)"
            else:
                decision = f"{d.kind.value} (dead, removed)"
            out.append((self.name, d.node, d.op, decision, d.why()))
        return out

    @property
    def fallbacks(self) -> list[Decision]:
        return [d for d in self.decisions if d.kind is DecisionKind.FALLBACK and d.node in self.emitted]

    def counts(self) -> tuple[str, ...]:
        """(graph, nodes, kernels, nodes in kernels, eager fallbacks, compile s, kernels s): what
        runs (a kernel whose result nothing reads is removed, as a dead call is)."""
        fused = [d for d in self.decisions if d.kind in (DecisionKind.KERNEL, DecisionKind.TEMPLATE) and d.kernel
                 and d.node in self.emitted]
        kernels = {d.kernel.split(" ")[0] for d in fused}  # labels start with the kernel's name: "kernel_0 (3 nodes)"
        return (self.name, str(len(self.decisions)), str(len(kernels)), str(len(fused)), str(len(self.fallbacks)),
                f"{self.compile_s:.2f}", f"{self.kernel_s:.2f}")

    def summary_line(self) -> str:
        """One line for the log: what this graph became and how long xpu_lite took."""
        name, nodes, kernels, fused, fallbacks, compile_s, kernel_s = self.counts()
        return (f"{name}: {nodes} nodes -> {kernels} kernels ({fused} nodes), {fallbacks} eager fallbacks; "
                f"{compile_s} s ({kernel_s} s partitioning and kernels)")


@dataclasses.dataclass(frozen=True)
class DynamoNotes:
    """What Dynamo did around the graphs during one call: its graph breaks (the program
    between two graphs runs in Python) and what else it could not trace (a data-dependent
    branch: run in Python; where Dynamo could not resume, the whole function ran eagerly),
    each the first line of Dynamo's message with how often, and how many functions it ran
    eagerly."""

    graph_breaks: tuple[tuple[str, int], ...] = ()
    untraced: tuple[tuple[str, int], ...] = ()
    skipped_functions: int = 0

    @staticmethod
    def between(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> DynamoNotes:
        """The notes from two snapshots of compat.dynamo_trace_counts()."""
        def new(category: str) -> tuple[tuple[str, int], ...]:
            counts: dict[str, int] = {}
            for message, n in after[category].items():
                if (delta := n - before[category].get(message, 0)) > 0:
                    line = message.strip().splitlines()[0]
                    counts[line] = counts.get(line, 0) + delta
            return tuple(counts.items())

        frames = lambda counts: counts.get("total", 0) - counts.get("ok", 0)  # noqa: E731
        return DynamoNotes(new("graph_break"), new("unimplemented"), frames(after["frames"]) - frames(before["frames"]))

    def lines(self) -> list[str]:
        out = []
        if self.skipped_functions:
            out.append(f"Dynamo ran {self.skipped_functions} function(s) eagerly, compiling nothing in them.")
        for title, notes in (("Dynamo could not trace (that code ran in Python, outside the graphs):", self.untraced),
                             ("Dynamo graph breaks (the code between two graphs runs in Python):", self.graph_breaks)):
            if notes:
                out.append(title)
                out += [f"  - {message}{_hint(message)}" + (f" ({n}x)" if n > 1 else "") for message, n in notes]
        return out


def _hint(message: str) -> str:
    if "torch.fx.traceback.annotate escaped" in message:
        return (": a graph break inside a compile region (xpu_lite.compile_region or torch.fx.traceback.annotate);"
                " Dynamo cannot resume inside one, so it runs the whole function eagerly: move the break out of the region")
    return ""


@dataclasses.dataclass(frozen=True)
class ExplainReport:
    graphs: tuple[GraphReport, ...]
    dynamo: DynamoNotes = DynamoNotes()

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        return [row for graph in self.graphs for row in graph.rows()]

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for graph in self.graphs:
            for d in graph.decisions:
                if d.node in graph.emitted:
                    key = d.kind.value if d.reason is None else f"{d.kind.value}: {d.reason.kind.value}"
                    counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))

    def timings(self) -> str:
        """Per graph: its size, what it became, and the seconds xpu_lite spent on it."""
        header = ("graph", "nodes", "kernels", "nodes in kernels", "fallbacks", "compile s", "kernels s")
        return format_table(header, [graph.counts() for graph in self.graphs])

    def __str__(self) -> str:
        table = format_table(("graph", "node", "op", "decision", "reason"), self.rows())
        notes = self.dynamo.lines()
        if pieces := list(dict.fromkeys(graph.ddp_bucket for graph in self.graphs if graph.ddp_bucket)):
            notes.append(f"{', '.join(pieces)}: pieces of what Dynamo traced, split at DistributedDataParallel's gradient "
                         "buckets, each compiled on its own (torch._dynamo.config.optimize_ddp = False keeps a graph whole)")
        return "\n".join([table, "", *notes]) if notes else table


def format_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])


def markdown_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """The lines of a markdown table (what the benchmark scripts append to docs/benchmarks.md)."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def append_section(path: str, title: str, lines: list[str]) -> None:
    """Append `### title` and its lines to a markdown file (docs/benchmarks.md)."""
    with open(path, "a") as fh:
        fh.write("\n".join(["", f"### {title}", "", *lines]) + "\n")


def saved_bytes(step: Callable[[], Any], held: Iterable[torch.Tensor] = ()) -> int:
    """The bytes of the distinct storages autograd saves for a backward while `step` runs
    (each counted once, however many views of it are saved, by however many nodes), but
    those of `held` (a model's parameters, which are there anyway)."""
    skip = {t.untyped_storage().data_ptr() for t in held}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return sum(saved.values())


def peak_bytes(step: Callable[[], Any], device: torch.device | str) -> int:
    """The most bytes allocated at once while `step` runs, above what was allocated before
    (benchmarks/bench_memory.py). cpu: from the allocator's events in order, which have no
    free of a block allocated before `step` (measure a whole training step, not a
    backward alone); cuda/xpu: the allocator's own peak."""
    device = torch.device(device)
    if device.type == "cpu":
        live = peak = 0
        for nbytes in compat.cpu_allocations(step):  # + an allocation, - a free
            live += nbytes
            peak = max(peak, live)
        return peak
    module = getattr(torch, device.type)
    module.synchronize()
    before = module.memory_allocated()
    module.reset_peak_memory_stats()
    step()
    module.synchronize()
    return module.max_memory_allocated() - before


_capturing: list[list[GraphReport]] = []


@contextlib.contextmanager
def capture() -> Iterator[list[GraphReport]]:
    """Collect the reports of every graph compiled inside the block."""
    sink: list[GraphReport] = []
    _capturing.append(sink)
    try:
        yield sink
    finally:
        _capturing.remove(sink)


def publish(report: GraphReport) -> None:
    COUNTERS.graphs_compiled += 1
    COUNTERS.forward_graphs += report.kind in ("forward", "inference") and not report.subgraph
    COUNTERS.fallback_nodes += len(report.fallbacks)
    for sink in _capturing:
        sink.append(report)
