"""What the partitioner decides for each aten node, and why."""
from __future__ import annotations

import dataclasses
import enum


class DecisionKind(enum.Enum):
    KERNEL = "kernel"  # lowered to a Triton kernel
    TEMPLATE = "template"  # a Triton kernel of its own, not fused (flex attention: codegen/flex_attention.py)
    FALLBACK = "fallback"  # eager aten call
    SIZE = "size"  # size arithmetic, plain Python in the wrapper
    ASSERT = "assert"  # runtime check in the wrapper
    UNPACK = "unpack"  # getitem on a multi-output op
    VIEW = "view"  # index math folded into kernel loads; an eager alias where something else reads it
    CONSTANT = "constant"  # a tensor the graph holds (get_attr): a name in the generated module, no call


SUBGRAPHS_COMPILED = "xpu_lite_subgraphs_compiled"  # node.meta key: a control-flow node whose subgraphs backend.py compiled
FLEX_REJECTED = "xpu_lite_flex_rejected"  # node.meta key: why a selected flex_attention node stays eager's (codegen/flex_attention.py)
SUBGRAPHS_AS_TRACED = "xpu_lite_subgraphs_as_traced"  # node.meta key: why backend.py left a control-flow node's subgraphs uncompiled


class FallbackKind(enum.Enum):
    OUTSIDE_REGION = "outside region"  # lite mode: eager unless selected
    KEPT_OP = "kept op"  # keep_ops / policy KEEP
    RANDOM_OP = "random op"  # eager RNG stream
    NO_LOWERING = "no lowering"  # selected, but no Triton lowering accepts it
    ATEN_KERNEL = "aten kernel"  # matmul/convolution/attention: aten's kernel by design, as Inductor's
    DATA_DEPENDENT = "data dependent"  # reads tensor data on the host (item(), nonzero sizes)
    MUTATION = "mutation"  # writes an input in place
    OTHER_DEVICE = "other device"  # its result lives on another device (a cpu 0-dim tensor)
    HOST_SCALAR = "host scalar"  # a 0-dim float64 cpu value on cpu (a tensorified Python float)
    KERNEL_FAILED = "kernel failed"  # the kernel did not compile; group runs eagerly
    USER_KERNEL = "user kernel"  # a user's own Triton kernel (@triton.jit), launched as written
    CONTROL_FLOW = "control flow"  # cond, while_loop, invoke_subgraph: eager's op calls its subgraphs, compiled as graphs


@dataclasses.dataclass(frozen=True)
class FallbackReason:
    kind: FallbackKind
    op: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.detail}"


@dataclasses.dataclass(frozen=True)
class Decision:
    node: str  # FX node name
    op: str  # target, printed
    kind: DecisionKind
    reason: FallbackReason | None = None
    note: str = ""  # e.g. "from aten.gelu (decomposed)"
    kernel: str = ""  # the fused kernel this node went into, e.g. "kernel_0 (3 nodes)"

    def why(self) -> str:
        parts = [str(self.reason)] if self.reason else []
        if self.kernel:
            parts.append(f"in {self.kernel}")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


class LoweringError(RuntimeError):
    """A bug or a strict-mode refusal, naming op, node and detail."""

    def __init__(self, op: str, node: str, detail: str) -> None:
        super().__init__(f"xpu_lite: {op} (node {node!r}): {detail}")
        self.op, self.node, self.detail = op, node, detail
