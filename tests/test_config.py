"""Options and modes: validation and clear errors."""
from __future__ import annotations

import pytest
import torch

from xpu_lite.config import parse_config

aten = torch.ops.aten


def test_modes() -> None:
    assert parse_config(None).lite is False
    assert parse_config("default").lite is False
    assert parse_config("lite").lite is True


def test_unknown_mode_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid modes: default, lite"):
        parse_config("max-autotune")


def test_unknown_option_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid options: mode, compile_ops, keep_ops, debug_dir, strict, reuse_buffers"):
        parse_config("lite", {"keep_opz": []})


@pytest.mark.parametrize(
    "options",
    [{"strict": "yes"}, {"reuse_buffers": 1}, {"debug_dir": 3}, {"keep_ops": 3}, {"compile_ops": [1.5]}],
)
def test_wrong_types(options: dict) -> None:
    with pytest.raises(TypeError):
        parse_config("lite", options)
    with pytest.raises(TypeError):
        parse_config(3)  # type: ignore[arg-type]


def test_op_spellings_resolve_to_overloads() -> None:
    config = parse_config("lite", {"keep_ops": ["aten._fused_rms_norm", aten.gelu, aten.add.Tensor, "torch.ops.aten.mul.Tensor"]})
    assert aten._fused_rms_norm.default in config.keep_ops
    assert aten.gelu.default in config.keep_ops
    assert aten.add.Tensor in config.keep_ops and aten.add.Scalar not in config.keep_ops
    assert aten.mul.Tensor in config.keep_ops
    assert aten.gelu.default in parse_config("lite", {"compile_ops": "aten.gelu"}).compile_ops  # a packet: every overload


@pytest.mark.parametrize(
    "packet, fn, overload",
    [
        ("aten.add", lambda a, b: a + b, aten.add.Tensor),
        (aten.einsum, lambda a, b: torch.einsum("ij,jk->ik", a, b), aten.einsum.default),
        ("aten.matmul", lambda a, b: a @ b, aten.matmul.default),  # and matmul.out: composite, in place
    ],
    ids=["name", "packet", "with_an_out_overload"],
)
def test_a_packet_is_the_overloads_a_graph_can_hold(packet, fn, overload) -> None:
    """torch.ops lists TorchScript's own overloads too (aten.add.t, aten.einsum.sublist),
    which the dispatcher does not have: keeping a packet compiled nothing (RuntimeError).
    A composite out= overload (matmul.out) was refused as one "that returns no tensor";
    it is never in a functional graph, so keeping it is moot."""
    keep = parse_config("lite", {"keep_ops": [packet]}).keep_ops
    assert overload in keep and not {op for op in keep if op._overloadname in ("t", "int", "sublist")}
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    compiled = torch.compile(fn, backend="xpu_lite", options={"mode": "lite", "keep_ops": [packet]}, dynamic=True)
    assert torch.equal(compiled(a, b), fn(a, b))


def test_a_torchscript_overload_is_refused_with_the_packets_real_ones() -> None:
    with pytest.raises(ValueError, match=r"aten\.add\.t is TorchScript's.*aten\.add\.Tensor"):
        parse_config("lite", {"keep_ops": [aten.add.t]})
    with pytest.raises(ValueError, match=r"no operator named 'aten\.add\.t'"):
        parse_config("lite", {"keep_ops": ["aten.add.t"]})


def test_unknown_op_suggests_closest() -> None:
    with pytest.raises(ValueError, match=r"closest matches: .*aten\._fused_rms_norm"):
        parse_config("lite", {"keep_ops": ["aten._fused_rms_nrom"]})
    with pytest.raises(ValueError, match=r"aten\.add\.Tensor"):
        parse_config("lite", {"compile_ops": ["aten.add.Tensr"]})
    with pytest.raises(ValueError, match=r"no operator named 'layer_norm'; closest matches: aten\.layer_norm,"):
        parse_config("lite", {"keep_ops": ["layer_norm"]})  # the namespace left out
    with pytest.raises(ValueError, match=r"no operator named 'aten\.relu\.Tensor'; aten\.relu's overloads: aten\.relu\.default, "):
        parse_config("lite", {"keep_ops": ["aten.relu.Tensor"]})  # the op exists, not that overload


def test_flex_attention_is_the_higher_order_op_the_options_take() -> None:
    """`higher_order.flex_attention` (or the operator itself) names flex attention's kernel;
    other higher-order ops are refused with why (their subgraphs' ops are selected one by
    one); `flex_attention` without its namespace suggests it."""
    flex = torch.ops.higher_order.flex_attention
    assert parse_config("lite", {"compile_ops": ["higher_order.flex_attention"]}).compile_ops == {flex}
    assert parse_config(None, {"keep_ops": [flex, "aten.gelu.default"]}).keep_ops == {flex, aten.gelu.default}
    with pytest.raises(ValueError, match=r"higher_order\.cond is not compiled as one op: the ops of its subgraphs are "
                                         r"selected as any others \(name them\); the higher-order operators it takes: "
                                         r"higher_order\.flex_attention"):
        parse_config("lite", {"compile_ops": [torch.ops.higher_order.cond]})
    with pytest.raises(ValueError, match=r"higher_order\.while_loop is not compiled as one op"):
        parse_config("lite", {"keep_ops": ["higher_order.while_loop"]})
    with pytest.raises(ValueError, match=r"no operator named 'flex_attention'; closest matches: higher_order\.flex_attention"):
        parse_config("lite", {"compile_ops": ["flex_attention"]})
    with pytest.raises(ValueError, match=r"^xpu_lite: higher_order\.flex_attention is in both 'compile_ops' and 'keep_ops'"):
        parse_config("lite", {"compile_ops": [flex], "keep_ops": ["higher_order.flex_attention"]})
    from xpu_lite.decomp import build_plan

    summary = build_plan(parse_config("lite", {"compile_ops": [flex], "keep_ops": ["aten.gelu.default"]})).summary()
    assert "compile_ops: ['higher_order.flex_attention']" in summary and "  aten.gelu.default: keep_ops option" in summary


def test_op_cannot_be_compiled_and_kept() -> None:
    with pytest.raises(ValueError, match="both 'compile_ops' and 'keep_ops'"):
        parse_config("lite", {"compile_ops": ["aten.gelu"], "keep_ops": ["aten.gelu.default"]})


def test_errors_reach_the_user_through_torch_compile() -> None:
    compiled = torch.compile(lambda x: x + 1, backend="xpu_lite", options={"mode": "lite", "bogus": 1})
    with pytest.raises(Exception, match="valid options"):
        compiled(torch.randn(3))


def test_mode_as_option() -> None:
    """torch.compile refuses mode= with options=, so lite mode with options goes in options."""
    config = parse_config(None, {"mode": "lite", "keep_ops": ["aten.gelu"]})
    assert config.lite and aten.gelu.default in config.keep_ops
    with pytest.raises(ValueError, match="disagree"):
        parse_config("lite", {"mode": "default"})
    with pytest.raises(ValueError, match="valid modes"):
        parse_config(None, {"mode": "fast"})
