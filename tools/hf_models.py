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
    python tools/hf_models.py --models t5 --no-inference   # training only
    python tools/hf_models.py --option eager_bindings=True   # any xpu_lite option, repeatable
    python tools/hf_models.py --mode default --lengths 8 --fallbacks   # what still runs eagerly, and why
    python tools/hf_models.py --dtype bfloat16 --mode default   # against a float64 copy of each model
    python tools/hf_models.py --mode default --device cuda   # on a GPU (default: the best available device)

Compared as tools/model_check.py says: lite mode bitwise, the default mode at --rtol (with
--dtype float16/bfloat16 against a float64 copy of the model), eager's strides, one
compilation for all lengths. Inference compares the logits; training the loss and every
parameter's gradient (the key bias's gradient is 0 in exact math: --atol covers its noise).
Prints a line per model and phase as it goes; exits 1 if
anything failed, 2 if transformers is missing.
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import model_check  # noqa: E402

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


def import_transformers(script: str) -> Any:
    """transformers, quiet (its logging and every warning off); None, having said that
    `script` needs it, where it is not installed (the scripts then exit 2)."""
    try:
        import transformers
    except ImportError:
        print(f"{script} needs transformers: .venv/bin/pip install transformers", file=sys.stderr)
        return None
    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    return transformers


def main(argv: list[str] | None = None) -> int:
    p = model_check.parser(__doc__.splitlines()[0], MODELS, "lengths", "8,12,17")
    args, names, lengths, options, device = model_check.parse(p, argv, MODELS, "lengths")
    transformers = import_transformers("tools/hf_models.py")
    if transformers is None:
        return 2

    import xpu_lite  # noqa: F401  (registers the backend)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {device}, mode {args.mode}, {args.dtype}"
          + (f" under autocast to {args.autocast}" if args.autocast else "") + f", lengths {lengths}"
          + (f", options {options}" if options else ""), flush=True)

    def build(name: str) -> tuple[Any, model_check.Run] | str:
        config_cls, model_cls, config_args, extra = MODELS[name]
        if not hasattr(transformers, model_cls):
            return f"{name}: skipped, transformers {transformers.__version__} has no {model_cls}"
        torch.manual_seed(0)
        model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**config_args)).to(device, getattr(torch, args.dtype))

        def run(model: Any, length: int, training: bool) -> list[tuple[str, torch.Tensor]]:
            ids = torch.randint(1, 100, (2, length), generator=torch.Generator().manual_seed(length)).to(device)
            return _run(model, ids, extra(ids), training)

        return model, run

    return model_check.run_models(args, names, build, lengths, options)


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
