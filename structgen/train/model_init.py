"""The model a ``TrainConfig`` describes: its ModernBERT config (``model_config``: global attention in every
layer, SDPA, the copy head's switches and the request notes' version recorded in it), a freshly initialised
model (``build_model``), its size (``count_parameters``) and whether training autocasts to bfloat16
(``use_bf16``)."""

from __future__ import annotations

from .config import TrainConfig


def use_bf16(cfg: TrainConfig, device) -> bool:
    """Whether the run autocasts to bfloat16: ``precision="bf16"``, or ``"auto"`` on a device with fast
    bfloat16 matmuls (a CUDA GPU that supports it; a CPU whose oneDNN has bfloat16 kernels, e.g. AVX512-BF16
    or AMX — there a training step of the small preset is 15-25% faster than in fp32). Weights and optimiser
    stay fp32."""
    import torch

    if cfg.precision != "auto":
        return cfg.precision == "bf16"
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if kind == "cpu":
        try:
            return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
        except (AttributeError, RuntimeError):
            return False
    return False


def model_config(tokenizer, cfg: TrainConfig):
    """The ModernBERT config of a model trained with ``cfg`` over ``tokenizer`` (global attention, SDPA)."""
    from transformers import ModernBertConfig

    n = cfg.num_layers
    return ModernBertConfig(
        vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=n, num_attention_heads=cfg.num_heads, max_position_embeddings=cfg.max_positions,
        layer_types=["full_attention"] * n, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, sep_token_id=tokenizer.eos_token_id, bos_token_id=None,
        cls_token_id=None, attn_implementation="sdpa", embedding_dropout=cfg.dropout,
        attention_dropout=cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout,
        mlp_dropout=cfg.dropout, structgen_request_notes=cfg.notes_version,
        **({"copy_head_mask_id": tokenizer.mask_token_id, "copy_head_neighbours": cfg.copy_neighbours,
            "copy_head_convert": cfg.copy_convert, "copy_head_lookup": cfg.lookup,
            "copy_head_lookup_prompt": cfg.lookup and cfg.lookup_keys == "prompt",
            "copy_head_convert_maps": cfg.convert_maps if cfg.copy_convert else 1,
            "copy_head_convert_topk": cfg.convert_topk if cfg.copy_convert else 0,
            "copy_head_pointer_loss": cfg.pointer_loss if cfg.copy_convert else 0.0} if cfg.copy_head else {}),
    )


def build_model(tokenizer, cfg: TrainConfig):
    """A freshly initialised model for ``cfg``: ``ModernBertWithCopyHead`` when ``cfg.copy_head``, else
    ``ModernBertForMaskedLM``."""
    if cfg.copy_head:
        from ..models.copy_head import ModernBertWithCopyHead as cls
    else:
        from transformers import ModernBertForMaskedLM as cls
    return cls(model_config(tokenizer, cfg))


def count_parameters(model) -> int:
    """Distinct parameters (tied weights counted once): what the safetensors file holds."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


__all__ = ["model_config", "build_model", "count_parameters", "use_bf16"]
