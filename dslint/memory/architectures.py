"""Parameter counts of the common Hugging Face architectures, computed from a model config's values, the way
the modelling code builds the model (transformers' defaults where a value is not given).

Each count is exact for the module tree transformers builds: every `nn.Linear` (with its bias where the
architecture has one), `nn.Embedding`, and norm weight (RMSNorm: weight only; LayerNorm: weight and bias), tied
weights counted once. `largest_layer` is the biggest single module's own parameters, as DeepSpeed's
`model_to_params` measures it for ZeRO-3 (an embedding or one projection).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

CAUSAL, BASE, MASKED_LM, SEQUENCE_CLASSIFICATION = "causal-lm", "base", "masked-lm", "sequence-classification"

# transformers' config defaults for the values a count reads (configuration_<model>.py).
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": None,
        "head_dim": None,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
    },
    "mistral": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": None,
        "tie_word_embeddings": False,
    },
    "qwen2": {
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "tie_word_embeddings": False,
    },
    "gpt2": {
        "vocab_size": 50257,
        "n_positions": 1024,
        "n_embd": 768,
        "n_layer": 12,
        "n_head": 12,
        "n_inner": None,
        "add_cross_attention": False,
        "tie_word_embeddings": True,
    },
    "bert": {
        "vocab_size": 30522,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "num_labels": 2,
        "tie_word_embeddings": True,
    },
}
CONFIG_CLASSES = {
    "LlamaConfig": "llama",
    "MistralConfig": "mistral",
    "Qwen2Config": "qwen2",
    "GPT2Config": "gpt2",
    "BertConfig": "bert",
}
# Model classes, by name, to (model type or None for Auto*, head).
MODEL_CLASSES: dict[str, tuple[str | None, str]] = {
    "LlamaForCausalLM": ("llama", CAUSAL),
    "LlamaModel": ("llama", BASE),
    "MistralForCausalLM": ("mistral", CAUSAL),
    "MistralModel": ("mistral", BASE),
    "Qwen2ForCausalLM": ("qwen2", CAUSAL),
    "Qwen2Model": ("qwen2", BASE),
    "GPT2LMHeadModel": ("gpt2", CAUSAL),
    "GPT2Model": ("gpt2", BASE),
    "BertModel": ("bert", BASE),
    "BertForMaskedLM": ("bert", MASKED_LM),
    "BertForSequenceClassification": ("bert", SEQUENCE_CLASSIFICATION),
    "AutoModelForCausalLM": (None, CAUSAL),
    "AutoModel": (None, BASE),
    "AutoModelForMaskedLM": (None, MASKED_LM),
    "AutoModelForSequenceClassification": (None, SEQUENCE_CLASSIFICATION),
}
HEADS = {
    "llama": (CAUSAL, BASE),
    "mistral": (CAUSAL, BASE),
    "qwen2": (CAUSAL, BASE),
    "gpt2": (CAUSAL, BASE),
    "bert": (BASE, MASKED_LM, SEQUENCE_CLASSIFICATION),
}


class NotCounted(Exception):
    """A value the count needs is not a whole number, or the architecture or head is not one dslint counts."""


@dataclass(frozen=True)
class Count:
    total: int
    largest_layer: int
    model_type: str
    head: str


def _int(values: Mapping[str, Any], key: str) -> int:
    value = values.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise NotCounted(f"{key} is {value!r}")
    return value


def _flag(values: Mapping[str, Any], key: str) -> bool:
    value = values.get(key)
    if not isinstance(value, bool):
        raise NotCounted(f"{key} is {value!r}")
    return value


def _llama_like(values: Mapping[str, Any], head: str, q_k_v_bias: bool, o_bias: bool, mlp_bias: bool) -> Count:
    vocab, hidden = _int(values, "vocab_size"), _int(values, "hidden_size")
    inner, layers = _int(values, "intermediate_size"), _int(values, "num_hidden_layers")
    heads = _int(values, "num_attention_heads")
    kv_heads = values.get("num_key_value_heads")
    kv_heads = heads if kv_heads is None else _int(values, "num_key_value_heads")
    head_dim = values.get("head_dim")
    head_dim = hidden // heads if head_dim is None else _int(values, "head_dim")
    q, kv = heads * head_dim, kv_heads * head_dim
    attention = hidden * q + 2 * hidden * kv + q * hidden
    if q_k_v_bias:
        attention += q + 2 * kv
    if o_bias:
        attention += hidden
    mlp = 3 * hidden * inner + ((2 * inner + hidden) if mlp_bias else 0)
    per_layer = attention + mlp + 2 * hidden  # input and post-attention RMSNorm weights
    total = vocab * hidden + layers * per_layer + hidden  # + the final norm
    if head == CAUSAL and not _flag(values, "tie_word_embeddings"):
        total += vocab * hidden
    largest = max(vocab * hidden, hidden * inner + (inner if mlp_bias else 0), hidden * q + (q if q_k_v_bias else 0))
    return Count(total, largest, "", head)


def _llama(values: Mapping[str, Any], head: str) -> Count:
    bias = _flag(values, "attention_bias")
    return _llama_like(values, head, bias, bias, _flag(values, "mlp_bias"))


def _mistral(values: Mapping[str, Any], head: str) -> Count:
    return _llama_like(values, head, False, False, False)


def _qwen2(values: Mapping[str, Any], head: str) -> Count:
    return _llama_like(values, head, True, False, False)  # q, k and v projections carry a bias; o does not


def _gpt2(values: Mapping[str, Any], head: str) -> Count:
    if _flag(values, "add_cross_attention"):
        raise NotCounted("add_cross_attention is True")
    vocab, positions, width = _int(values, "vocab_size"), _int(values, "n_positions"), _int(values, "n_embd")
    layers = _int(values, "n_layer")
    _int(values, "n_head")
    inner = values.get("n_inner")
    inner = 4 * width if inner is None else _int(values, "n_inner")
    per_layer = (
        2 * width  # ln_1
        + width * 3 * width + 3 * width  # c_attn (a Conv1D: weight and bias)
        + width * width + width  # attn.c_proj
        + 2 * width  # ln_2
        + width * inner + inner  # mlp.c_fc
        + inner * width + width  # mlp.c_proj
    )  # fmt: skip
    total = vocab * width + positions * width + layers * per_layer + 2 * width
    if head == CAUSAL and not _flag(values, "tie_word_embeddings"):
        total += vocab * width
    largest = max(vocab * width, positions * width, width * 3 * width + 3 * width, width * inner + inner)
    return Count(total, largest, "", head)


def _bert(values: Mapping[str, Any], head: str) -> Count:
    vocab, hidden = _int(values, "vocab_size"), _int(values, "hidden_size")
    layers, inner = _int(values, "num_hidden_layers"), _int(values, "intermediate_size")
    _int(values, "num_attention_heads")
    positions, types = _int(values, "max_position_embeddings"), _int(values, "type_vocab_size")
    embeddings = (vocab + positions + types) * hidden + 2 * hidden
    per_layer = 4 * (hidden * hidden + hidden) + 2 * hidden + (hidden * inner + inner) + (inner * hidden + hidden)
    per_layer += 2 * hidden
    total = embeddings + layers * per_layer
    pooler = hidden * hidden + hidden
    largest = max(vocab * hidden, hidden * inner + inner)
    if head == BASE:
        total += pooler
    elif head == MASKED_LM:  # no pooler; transform dense + LayerNorm; decoder weight tied, its bias per token
        total += hidden * hidden + hidden + 2 * hidden + vocab
        if not _flag(values, "tie_word_embeddings"):
            total += vocab * hidden
    elif head == SEQUENCE_CLASSIFICATION:
        labels = _int(values, "num_labels")
        total += pooler + hidden * labels + labels
    return Count(total, largest, "", head)


COUNTERS: dict[str, Callable[[Mapping[str, Any], str], Count]] = {
    "llama": _llama,
    "mistral": _mistral,
    "qwen2": _qwen2,
    "gpt2": _gpt2,
    "bert": _bert,
}


def count(model_type: str, values: Mapping[str, Any], head: str) -> Count:
    """The parameters of `model_type` built with `values` (missing keys take transformers' defaults) and the
    given head. Raises NotCounted when the architecture, the head or a value is not one dslint can count."""
    counter = COUNTERS.get(model_type)
    if counter is None:
        raise NotCounted(f"model type {model_type!r} is not one dslint counts")
    if head not in HEADS[model_type]:
        raise NotCounted(f"a {model_type} {head} model is not one dslint counts")
    merged = {**DEFAULTS[model_type], **{k: v for k, v in values.items() if k in DEFAULTS[model_type]}}
    if model_type == "gpt2":  # config.json spelling of GPT-2's sizes
        for alias, key in (("n_ctx", "n_positions"), ("hidden_size", "n_embd"), ("num_hidden_layers", "n_layer")):
            if alias in values and key not in values:
                merged[key] = values[alias]
    result = counter(merged, head)
    return Count(result.total, result.largest_layer, model_type, head)


def head_of(architectures: Any) -> str | None:
    """The head a config.json's `architectures` list names (its first entry), None when not known."""
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        found = MODEL_CLASSES.get(architectures[0])
        return found[1] if found is not None else None
    return None
