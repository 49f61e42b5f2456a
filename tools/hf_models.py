"""Real models through xpu_lite: tiny transformers models with random weights, against eager.

Ops one at a time (tools/opinfo_sweep.py) do not show what a whole model's graph does:
Python float math that AOTAutograd turns into tensor math (GPT-2's gelu_new under
dynamic=True), an attention mask that requires grad (T5's learned position bias), a tensor
passed to one op three times. This script builds each model from a small config (no
download: weights are random, seeded) and compares the compiled model with eager at
several sequence lengths with dynamic=True.

Needs `transformers`, which xpu_lite does not depend on (pure Python; with torch already
installed it does not pull another one):

    .venv/bin/pip install transformers
    python tools/hf_models.py                          # lite mode, inference and training
    python tools/hf_models.py --mode default           # Triton kernels, at --rtol
    python tools/hf_models.py --models llama,t5 --lengths 8,12,17 --no-training
    python tools/hf_models.py --option eager_bindings=True   # any xpu_lite option, repeatable
    python tools/hf_models.py --mode default --lengths 8 --fallbacks   # what still runs eagerly, and why
    python tools/hf_models.py --dtype bfloat16 --mode default   # against a float64 copy of each model
    python tools/hf_models.py --mode default --device cuda   # on a GPU (default: the best available device)

Lite mode must be bitwise equal to eager (logits; in training the loss and every
parameter's gradient); the default mode is compared per tensor by the norm of the
difference, at most --rtol times the norm of eager's plus --atol per element (the key
bias's gradient is 0 in exact math: eager and the kernels give different rounding noise,
~1e-11). With --dtype float16/bfloat16 the default mode is compared with a float64 copy of
the model (the same rounded weights): per tensor, the norm of our error at most twice
eager's plus one unit in the last place of the reference's norm (and --atol per element);
values inside a kernel stay float32, so ours is often the nearer. Every mode must compile once
for all lengths (no recompile). Prints a line per model and phase as it goes; exits 1 if
anything failed, 2 if transformers is missing.
"""
from __future__ import annotations

import argparse
import ast
import collections
import copy
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SMALL = {"vocab_size": 100, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "max_position_embeddings": 128}
NO_DROPOUT = {"attention_dropout": 0.0}

# name -> (config class, model class, config arguments, extra inference arguments from the ids;
# training passes labels=ids alone, from which encoder-decoder models make their decoder inputs)
MODELS: dict[str, tuple[str, str, dict[str, Any], Callable[[torch.Tensor], dict[str, Any]]]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {**SMALL, "num_key_value_heads": 2}, lambda ids: {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {**SMALL, "num_key_value_heads": 2, "sliding_window": 8}, lambda ids: {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {**SMALL, "num_key_value_heads": 2}, lambda ids: {}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {**SMALL, "num_key_value_heads": 2, "head_dim": 16}, lambda ids: {}),
    "phi": ("PhiConfig", "PhiForCausalLM", {**SMALL, "resid_pdrop": 0.0, "embd_pdrop": 0.0, **NO_DROPOUT}, lambda ids: {}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"vocab_size": 100, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
             "bos_token_id": 0, "eos_token_id": 0, "attn_pdrop": 0.0, "resid_pdrop": 0.0, "embd_pdrop": 0.0}, lambda ids: {}),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {**SMALL, "hidden_dropout": 0.0, **NO_DROPOUT}, lambda ids: {}),
    "falcon": ("FalconConfig", "FalconForCausalLM", {"vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
               "num_attention_heads": 4, "hidden_dropout": 0.0, **NO_DROPOUT}, lambda ids: {}),
    "opt": ("OPTConfig", "OPTForCausalLM", {"vocab_size": 100, "hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "max_position_embeddings": 128, "word_embed_proj_dim": 64, "dropout": 0.0,
            **NO_DROPOUT}, lambda ids: {}),
    "bert": ("BertConfig", "BertForMaskedLM", {**SMALL, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
             lambda ids: {}),
    "bart": ("BartConfig", "BartForConditionalGeneration", {"vocab_size": 100, "d_model": 64, "encoder_layers": 2,
             "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 128,
             "decoder_ffn_dim": 128, "max_position_embeddings": 128, "dropout": 0.0, "activation_dropout": 0.0,
             **NO_DROPOUT}, lambda ids: {}),
    "t5": ("T5Config", "T5ForConditionalGeneration", {"vocab_size": 100, "d_model": 64, "d_kv": 16, "d_ff": 128,
           "num_layers": 2, "num_heads": 4, "dropout_rate": 0.0, "decoder_start_token_id": 0, "pad_token_id": 0},
           lambda ids: {"decoder_input_ids": ids[:, :5]}),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["lite", "default"], default="lite")
    parser.add_argument("--models", default="", help=f"comma-separated, from: {', '.join(MODELS)} (default all)")
    parser.add_argument("--lengths", default="8,12,17", help="sequence lengths, one compilation for all")
    parser.add_argument("--no-training", action="store_true", help="inference only")
    parser.add_argument("--rtol", type=float, default=1e-5, help="default mode only: relative error per tensor")
    parser.add_argument("--atol", type=float, default=1e-8, help="default mode only: per element, added to rtol's bound")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an xpu_lite option (value a Python literal, else a string), repeatable")
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32",
                        help="the models' parameters and compute dtype")
    parser.add_argument("--device", default=None, help="cpu, cuda or xpu (default: the best available)")
    parser.add_argument("--fallbacks", action="store_true",
                        help="at the end, the eager calls of every compiled graph by op and reason kind, most first")
    args = parser.parse_args(argv)
    options: dict[str, Any] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--option {item!r}: expected KEY=VALUE")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    names = [n for n in args.models.split(",") if n] or list(MODELS)
    if unknown := [n for n in names if n not in MODELS]:
        parser.error(f"--models: unknown {unknown}; valid: {', '.join(MODELS)}")
    try:
        lengths = [int(n) for n in args.lengths.split(",")]
    except ValueError:
        parser.error(f"--lengths {args.lengths!r}: comma-separated integers")
    from xpu_lite.runtime import device_or_usage_error

    device = device_or_usage_error(parser, args.device)
    try:
        import transformers
    except ImportError:
        print("tools/hf_models.py needs transformers: .venv/bin/pip install transformers", file=sys.stderr)
        return 2

    import xpu_lite  # noqa: F401  (registers the backend)
    from xpu_lite.config import parse_config

    try:
        parse_config(args.mode if args.mode == "lite" else None, options)
    except (TypeError, ValueError) as exc:
        parser.error(f"--option: {exc}")

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {device}, mode {args.mode}, {args.dtype}, "
          f"lengths {lengths}"
          + (f", options {options}" if options else ""), flush=True)
    failed = 0
    fallbacks: collections.Counter[tuple[str, str]] = collections.Counter()
    start = time.perf_counter()
    for name in names:
        config_cls, model_cls, config_args, extra = MODELS[name]
        if not hasattr(transformers, model_cls):
            print(f"{name}: skipped, transformers {transformers.__version__} has no {model_cls}")
            continue
        torch.manual_seed(0)
        model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**config_args)).to(device, getattr(torch, args.dtype))
        for training in (False,) if args.no_training else (False, True):
            verdict = check(model.train(training), extra, lengths, args.mode, training, args.rtol, args.atol, options,
                            fallbacks, device)
            failed += verdict.startswith("FAIL")
            print(f"{name:9s} {'training ' if training else 'inference'} {verdict}", flush=True)
    print(f"{len(names)} models, {failed} failed, {time.perf_counter() - start:.0f} s")
    if args.fallbacks:
        print(f"fallbacks in the compiled graphs ({sum(fallbacks.values())}), by op and reason (\"no call\": none made):")
        for (op, kind), n in fallbacks.most_common():
            print(f"{n:6d}  {kind:14s} {op}")
    return 1 if failed else 0


def check(model: Any, extra: Callable[..., dict[str, Any]], lengths: list[int], mode: str,
          training: bool, rtol: float, atol: float, options: dict[str, Any] | None = None,
          fallbacks: collections.Counter[tuple[str, str]] | None = None, device: torch.device | None = None) -> str:
    """'ok ...' or 'FAIL: why', comparing each length's results with eager's; the fallbacks of
    the graphs compiled are counted into `fallbacks` by (op, reason kind)."""
    from xpu_lite.report import capture

    torch._dynamo.reset()
    lite = "lite" if mode == "lite" else None
    if options:  # torch.compile refuses mode= with options=: the mode goes inside them
        compiled = torch.compile(model, backend="xpu_lite", options={"mode": lite, **options}, dynamic=True)
    else:
        compiled = torch.compile(model, backend="xpu_lite", mode=lite, dynamic=True)
    dtype = next(model.parameters()).dtype
    # half precision, default mode: judged against float64 (the same rounded weights)
    reference = copy.deepcopy(model).double() if mode == "default" and dtype in (torch.float16, torch.bfloat16) else None
    worst, first = 0.0, 0
    began = time.perf_counter()
    with capture() as reports:
        for i, length in enumerate(lengths):
            ids = torch.randint(1, 100, (2, length), generator=torch.Generator().manual_seed(length)).to(device)
            try:
                want = _run(model, ids, extra(ids), training)
                got = _run(compiled, ids, extra(ids), training)
                exact = _run(reference, ids, extra(ids), training) if reference is not None else None
            except Exception as exc:  # noqa: BLE001  (reported as the model's verdict)
                return f"FAIL at length {length}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            for (label, w), g in zip(want, (t for _, t in got), strict=True):
                if mode == "lite" and not torch.equal(w, g):
                    return f"FAIL at length {length}: {label} not bitwise equal (max abs diff {(w - g).abs().max().item():.2e})"
                diff, scale = (w.double() - g.double()).norm().item(), w.double().norm().item()
                bound = rtol * scale + atol * w.numel() ** 0.5  # atol: a gradient 0 in exact math is noise
                if exact is not None:  # our error vs float64 at most twice eager's, plus an ulp of the norm
                    r = dict(exact)[label]
                    diff, eager_error = (g.double() - r).norm().item(), (w.double() - r).norm().item()
                    bound = 2 * eager_error + torch.finfo(dtype).eps * r.norm().item() + atol * w.numel() ** 0.5
                worst = max(worst, diff / bound)
                if mode == "default" and not diff <= bound:
                    if exact is not None:
                        return (f"FAIL at length {length}: {label} error vs float64 {diff:.3g} > 2 x eager's "
                                f"{eager_error:.3g} + 1 ulp")
                    return f"FAIL at length {length}: {label} relative error {diff / max(scale, 1e-300):.2e} > {rtol:.0e}"
            graphs = [r for r in reports if r.kind != "backward"]
            if i == 0:
                first = len(graphs)
            elif len(graphs) != first:
                return f"FAIL at length {length}: recompiled ({len(graphs)} forward graphs, {first} after the first length)"
    if not first:
        return "FAIL: xpu_lite compiled no graph (Dynamo ran the model eagerly)"
    if fallbacks is not None:
        # a detach or a host float cast the wrapper computes without a call (explain's note): "no call"
        fallbacks.update((d.op, "no call" if "no call:" in (d.note or "") else d.reason.kind.value)
                         for r in reports for d in r.fallbacks)
    kernels = sum(len(r.kernels) for r in reports)
    accuracy = "bitwise" if mode == "lite" else f"worst error {worst:.2f}x the bound"
    verdict = f"ok: {accuracy}, {first} graph(s), {kernels} kernel source(s), {time.perf_counter() - began:.1f} s"
    if options and options.get("eager_bindings"):
        verdict += f"; {_boxed_calls(reports)}"
    return verdict


def _boxed_calls(reports: list[Any]) -> str:
    """How many fallbacks still call `torch.ops.aten.X.Y(` (no binding for them), the most common first."""
    boxed = collections.Counter(op for r in reports for op in re.findall(r"torch\.ops\.aten\.(\w+\.\w+)\(", r.source))
    calls = sum(len(r.fallbacks) for r in reports)
    common = ", ".join(f"{op} {n}" for op, n in boxed.most_common(6))
    return f"{sum(boxed.values())} of {calls} fallback calls boxed ({common})"


def _run(model: Any, ids: torch.Tensor, kwargs: dict[str, Any], training: bool) -> list[tuple[str, torch.Tensor]]:
    """Inference: the logits. Training: the loss and every parameter's gradient."""
    if not training:
        with torch.no_grad():
            return [("logits", model(ids, **kwargs).logits)]
    params = dict(model.named_parameters())
    for p in params.values():
        p.grad = None
    loss = model(ids, labels=ids).loss
    loss.backward()
    return [("loss", loss.detach())] + [(f"grad {n}", p.grad.clone()) for n, p in params.items() if p.grad is not None]


if __name__ == "__main__":
    sys.exit(main())
