"""`detach` inside a compiled graph is emitted as the same tensor, not a call
(xpu_lite/codegen/identities.py): training and inference stay bitwise equal to eager, a
detach the graph returns stays a call, and explain() says which."""
from __future__ import annotations

import re

import torch
import torch.nn.functional as F

import xpu_lite

from .conftest import assert_bitwise

_SAME = "(detach: the same tensor, grad is off in a compiled graph)"


class _Norms(torch.nn.Module):
    """Kept CIA ops (layer_norm, softmax, linear): their backward recomputes each body from
    detached inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + torch.softmax(self.proj(h), dim=-1) * h


def _step(model: torch.nn.Module, forward, x: torch.Tensor) -> list[torch.Tensor]:
    for p in model.parameters():
        p.grad = None
    x = x.detach().requires_grad_()
    out = forward(x)
    out.sum().backward()
    return [out.detach(), x.grad, *(p.grad for p in model.parameters())]


def test_training_backward_makes_no_detach_call_and_stays_bitwise(device: str) -> None:
    torch.manual_seed(0)
    model = _Norms().to(device)
    compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
    for batch in (2, 3, 5):
        x = torch.randn(batch, 4, 8, device=device)
        got, sources = xpu_lite.run_and_get_code(_step, model, compiled, x)
        if batch == 2:
            backward = sources[1]
        assert_bitwise(got, _step(model, model, x))
    assert xpu_lite.counters.forward_graphs == 1
    assert backward.count(_SAME) >= 3, backward  # layer_norm's, softmax's and linear's recomputed inputs
    assert "aten.detach.default(" not in backward, backward
    for line in backward.splitlines():  # each is `bufN = <a name>`: no call
        if _SAME in line:
            assert re.fullmatch(r"\s*buf\d+ = (arg|buf)\d+  # detach_?\d* .*", line), line


def test_detach_in_user_code_is_the_same_tensor_unless_returned() -> None:
    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = F.gelu(x).detach()
        return y * 2 + 1, torch.sin(x).detach()

    compiled = torch.compile(f, backend="xpu_lite", mode="lite", dynamic=True)
    x = torch.randn(3, 5)
    got, (source,) = xpu_lite.run_and_get_code(compiled, x)
    assert_bitwise(got, f(x))
    assert source.count(_SAME) == 1, source  # gelu's: read by the mul only
    assert source.count("torch.ops.aten.detach.default(") == 1, source  # sin's: the graph returns it
    report = str(xpu_lite.explain(f, x, mode="lite"))
    assert report.count("no call: the same tensor") == 1, report


def test_explain_names_the_detaches_of_a_backward_graph() -> None:
    torch.manual_seed(0)
    model = _Norms()

    def train(x: torch.Tensor) -> torch.Tensor:
        out = model(x)
        out.sum().backward()
        return out.detach()

    report = xpu_lite.explain(train, torch.randn(2, 4, 8), mode="lite")
    rows = [row for row in report.rows() if row[0].endswith("_backward") and row[2] == "aten.detach.default"]
    assert rows and all("no call: the same tensor" in row[4] for row in rows), rows
