"""Count a decoder's parameters from its Hugging Face `config.json` (pure: the caller reads the file).

Families: Llama, Mistral, Mixtral (MoE experts + router), Qwen and Qwen2 (q/k/v biases), GPT-2, GPT-NeoX,
Falcon (multi-query / grouped KV, parallel attention). Counted per layer: attention (q and o of h×h;
k and v of h×(kv_heads·head_dim) for GQA/MQA), the MLP (gated: 3·h·I; plain: 2·h·I), the norms (RMSNorm h,
LayerNorm 2h) and biases where the family has them; then the token embedding (and GPT-2's learned positions),
the final norm, and the LM head unless it is tied to the embedding.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Architecture:
    family: str
    parameters: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    experts: int | None = None


def _get(cfg: Mapping[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def _need(cfg: Mapping[str, Any], *names: str) -> int:
    value = _get(cfg, *names)
    if value is None:
        raise ValueError(f"config.json has no {' / '.join(names)}")
    return int(value)


def family_of(cfg: Mapping[str, Any]) -> str:
    mt = str(cfg.get("model_type", "")).lower().replace("-", "_")
    archs = " ".join(cfg.get("architectures") or []).lower()
    for fam in ("mixtral", "qwen2_moe", "qwen2", "qwen", "mistral", "gpt_neox", "gpt2", "falcon", "llama"):
        if mt == fam:
            return fam
    for key, fam in (("mixtral", "mixtral"), ("qwen2", "qwen2"), ("qwen", "qwen"), ("mistral", "mistral"),
                     ("gptneox", "gpt_neox"), ("gpt2", "gpt2"), ("falcon", "falcon"), ("refinedweb", "falcon"),
                     ("llama", "llama")):
        if key in archs:
            return fam
    if mt in ("refinedwebmodel", "refinedweb", "rw"):
        return "falcon"
    if "n_embd" in cfg and "n_layer" in cfg:
        return "gpt2"
    if "hidden_size" in cfg and "intermediate_size" in cfg:
        return "llama"  # the common decoder shape: treat as Llama
    raise ValueError(f"unsupported model_type {cfg.get('model_type')!r}")


def _llama_like(cfg: Mapping[str, Any], family: str) -> Architecture:
    h = _need(cfg, "hidden_size")
    L = _need(cfg, "num_hidden_layers")
    a = _need(cfg, "num_attention_heads")
    kv = int(_get(cfg, "num_key_value_heads", default=a))
    V = _need(cfg, "vocab_size")
    hd = int(_get(cfg, "head_dim", default=h // a))
    intermediate = _need(cfg, "intermediate_size")
    experts = _get(cfg, "num_local_experts", "num_experts")
    if family == "qwen":  # Qwen (v1) states the sum of the two gated halves
        intermediate //= 2
    attn = h * a * hd + 2 * h * kv * hd + a * hd * h
    if family in ("qwen2", "qwen2_moe", "qwen") or cfg.get("attention_bias"):
        attn += a * hd + 2 * kv * hd  # q, k, v biases
    mlp = 3 * h * intermediate
    if experts:
        experts = int(experts)
        moe_i = int(_get(cfg, "moe_intermediate_size", default=intermediate))
        mlp = experts * 3 * h * moe_i + h * experts  # experts + router
        shared = _get(cfg, "shared_expert_intermediate_size")
        if shared:
            mlp += 3 * h * int(shared) + h  # Qwen2-MoE's shared expert and its gate
    layer = attn + mlp + 2 * h  # two RMSNorms
    tied = bool(cfg.get("tie_word_embeddings", False))
    total = V * h + L * layer + h + (0 if tied else V * h)
    return Architecture(family, total, h, L, a, kv, intermediate, V, experts)


def _gpt2(cfg: Mapping[str, Any]) -> Architecture:
    h = _need(cfg, "n_embd", "hidden_size")
    L = _need(cfg, "n_layer", "num_hidden_layers")
    a = _need(cfg, "n_head", "num_attention_heads")
    V = _need(cfg, "vocab_size")
    P = int(_get(cfg, "n_positions", "n_ctx", default=1024))
    inner = int(_get(cfg, "n_inner", default=4 * h))
    layer = (2 * h) + (h * 3 * h + 3 * h) + (h * h + h) + (2 * h) + (h * inner + inner) + (inner * h + h)
    tied = bool(cfg.get("tie_word_embeddings", True))
    total = V * h + P * h + L * layer + 2 * h + (0 if tied else V * h)
    return Architecture("gpt2", total, h, L, a, a, inner, V)


def _gpt_neox(cfg: Mapping[str, Any]) -> Architecture:
    h = _need(cfg, "hidden_size")
    L = _need(cfg, "num_hidden_layers")
    a = _need(cfg, "num_attention_heads")
    V = _need(cfg, "vocab_size")
    inner = int(_get(cfg, "intermediate_size", default=4 * h))
    bias = bool(cfg.get("attention_bias", True))
    layer = 2 * (2 * h) + (h * 3 * h + (3 * h if bias else 0)) + (h * h + (h if bias else 0)) \
        + (h * inner + inner) + (inner * h + h)
    tied = bool(cfg.get("tie_word_embeddings", False))
    total = V * h + L * layer + 2 * h + (0 if tied else V * h)
    return Architecture("gpt_neox", total, h, L, a, a, inner, V)


def _falcon(cfg: Mapping[str, Any]) -> Architecture:
    h = _need(cfg, "hidden_size", "n_embed")
    L = _need(cfg, "num_hidden_layers", "n_layer")
    a = _need(cfg, "num_attention_heads", "n_head")
    V = _need(cfg, "vocab_size")
    hd = h // a
    new_arch = bool(cfg.get("new_decoder_architecture", False))
    if new_arch:
        kv = int(_get(cfg, "num_kv_heads", "n_head_kv", default=a))
    elif cfg.get("multi_query", True):
        kv = 1
    else:
        kv = a
    bias = bool(cfg.get("bias", False))
    inner = int(_get(cfg, "ffn_hidden_size", default=4 * h))
    qkv = h * (a + 2 * kv) * hd + ((a + 2 * kv) * hd if bias else 0)
    dense = h * h + (h if bias else 0)
    mlp = h * inner + inner * h + ((inner + h) if bias else 0)
    parallel = bool(cfg.get("parallel_attn", True))
    norms = 2 * (2 * h) if (new_arch or not parallel) else 2 * h
    layer = qkv + dense + mlp + norms
    tied = bool(cfg.get("tie_word_embeddings", True))
    total = V * h + L * layer + 2 * h + (0 if tied else V * h)
    return Architecture("falcon", total, h, L, a, kv, inner, V)


def analyze(cfg: Mapping[str, Any]) -> Architecture:
    """The architecture and parameter count of a Hugging Face config; ValueError when it cannot say."""
    if not isinstance(cfg, Mapping):
        raise ValueError("config.json is not an object")
    if isinstance(cfg.get("text_config"), Mapping) and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
    fam = family_of(cfg)
    if fam == "gpt2":
        return _gpt2(cfg)
    if fam == "gpt_neox":
        return _gpt_neox(cfg)
    if fam == "falcon":
        return _falcon(cfg)
    return _llama_like(cfg, fam)
