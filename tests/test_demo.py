"""The main job runs end to end and reports what a user needs to see."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from xpu_lite.runtime import device_available, resolve_device


def test_demo_quick_runs_and_reports() -> None:
    out = subprocess.run([sys.executable, "-m", "xpu_lite", "demo", "--quick", "--device", "cpu"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "device cpu" in text
    assert "fallback: outside region" in text and "kernel" in text
    lite = next(line for line in text.splitlines() if line.startswith("lite ")).split()
    assert lite[2] == "0"  # recompiles over the sizes
    assert int(lite[3]) >= 1  # the annotated region became at least one kernel
    assert float(lite[5]) < 1e-4  # max |err| vs eager
    assert "(ms: median of 3 timed calls a size," in text  # the interpreter's times mean nothing: few of them


def test_demo_rejects_unknown_command(capsys) -> None:
    from xpu_lite.__main__ import main

    with pytest.raises(SystemExit) as raised:
        main(["demoo"])
    assert raised.value.code == 2 and "invalid choice: 'demoo'" in capsys.readouterr().err


def test_demo_names_the_devices_when_one_is_missing_or_unknown(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """A usage error (exit 2) saying which devices this machine has, not a traceback (the
    command's own main, in this process: test_demo_quick_runs_and_reports runs it as a user does)."""
    from xpu_lite.__main__ import main

    cases = [(["--device", "tpu"], {}, "--device='tpu': xpu_lite runs on xpu, cuda, cpu; this machine has ")]
    missing = next((d for d in ("xpu", "cuda") if not device_available(d)), None)
    if missing is not None:  # a machine with both has nothing to miss
        cases += [
            (["--device", missing], {}, f"--device='{missing}': no {missing} device on this machine; it has "),
            ([], {"XPU_LITE_DEVICE": missing}, f"XPU_LITE_DEVICE='{missing}': no {missing} device on this machine"),
        ]
    for flags, env, expected in cases:
        with monkeypatch.context() as m:
            for key, value in env.items():
                m.setenv(key, value)
            with pytest.raises(SystemExit) as raised:
                main(["demo", "--quick", *flags])
        assert raised.value.code == 2 and expected in capsys.readouterr().err


def test_resolve_device() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(None).type in ("xpu", "cuda", "cpu")
    with pytest.raises(ValueError, match="xpu_lite runs on xpu, cuda, cpu"):
        resolve_device("meta")
