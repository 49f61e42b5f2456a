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


def test_unknown_op_suggests_closest() -> None:
    with pytest.raises(ValueError, match=r"closest matches: .*aten\._fused_rms_norm"):
        parse_config("lite", {"keep_ops": ["aten._fused_rms_nrom"]})
    with pytest.raises(ValueError, match=r"aten\.add\.Tensor"):
        parse_config("lite", {"compile_ops": ["aten.add.Tensr"]})


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
