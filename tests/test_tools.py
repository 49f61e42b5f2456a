"""tools/opinfo_sweep.py: the deeper OpInfo sweep runs and can fail."""
from __future__ import annotations

import pytest
import torch

from tools import opinfo_sweep as sweep


def test_sweep_passes_on_ops_fixed_this_far(capsys) -> None:
    assert sweep.main(["--ops", "linalg.eigvalsh,gradient,addcdiv", "--training", "--samples", "1"]) == 0
    assert "'failed': 0" in capsys.readouterr().out


def test_sweep_reports_known_upstream_differences_apart(capsys) -> None:
    assert sweep.main(["--ops", "expand", "--training", "--samples", "1"]) == 0
    assert "known expand[0]" in capsys.readouterr().out


def test_comparison_fails_on_one_bit_and_on_strides() -> None:
    x = torch.randn(4, 3)
    assert sweep._compare(x, x.clone(), values=True, tol=(0.0, 0.0)) is None
    assert sweep._compare(x, torch.nextafter(x, x + 1), values=True, tol=(0.0, 0.0)) is not None
    assert "strides" in sweep._compare(x.t().contiguous().t(), x, values=True, tol=(0.0, 0.0))


def test_bad_arguments_say_what_is_valid() -> None:
    with pytest.raises(SystemExit):
        sweep.main(["--dtype", "floaty"])
    with pytest.raises(SystemExit):
        sweep.main(["--ops", "no_such_op"])
