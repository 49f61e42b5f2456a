"""Tensor subclasses that AOTAutograd flattens, here jagged nested tensors (NJT): the
subclass sees the ops eager's dispatch gives it, and xpu_lite compiles the dense graph its
implementation calls."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import xpu_lite

from .test_workflows import MODES, _check, _compile


PROGRAMS = {
    # softmax is a CompositeImplicitAutograd op the nested tensor does not implement: lite
    # mode kept it whole at the subclass level, and the compile failed ("Unable to cast
    # NotImplemented to Tensor") until 2026-11-28
    "softmax": lambda layer, norm, nt: F.softmax(layer(nt), dim=-1),
    "layer_norm_silu": lambda layer, norm, nt: norm(nt) + F.silu(layer(nt)),
    "padded": lambda layer, norm, nt: torch.nested.to_padded_tensor(F.gelu(layer(nt)) * 2 + nt.sin(), 0.0),
}


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_jagged_nested_tensor(device: str, mode: str, program: str, training: bool) -> None:
    layer, norm = torch.nn.Linear(8, 8).to(device), torch.nn.LayerNorm(8).to(device)
    fn = PROGRAMS[program]

    def f(nt: torch.Tensor) -> torch.Tensor:
        return fn(layer, norm, nt)

    def run(g, lengths: list[int]) -> list[torch.Tensor]:
        torch.manual_seed(1)
        nt = torch.nested.nested_tensor([torch.randn(n, 8) for n in lengths], layout=torch.jagged, device=device,
                                        requires_grad=training)
        out = g(nt)
        values = out.values() if out.is_nested else out
        if not training:
            return [values]
        grads = torch.autograd.grad(values.square().sum(), [nt, *layer.parameters()])
        return [values, *(g.values() if g.is_nested else g for g in grads)]

    compiled = _compile(f, mode, dynamic=True)
    for lengths in ([3, 5], [2, 7, 4]):
        _check(mode, run(compiled, lengths), run(f, lengths))
    assert xpu_lite.counters.forward_graphs == 1
