"""Parameter counts from a script's text, checked against published counts of released models and against a
second, module-by-module count written here independently of dslint's formula (transformers is not installed in
this environment, so the model cannot be built on the meta device)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dslint.memory.architectures import BASE, CAUSAL, MASKED_LM, count
from dslint.memory.params import from_script, hub_cache_config, parse_size

# Counts published with the released checkpoints (their model cards / `num_parameters()`).
PUBLISHED = [
    ("llama", {}, CAUSAL, 6_738_415_616),  # LlamaConfig() = Llama-2-7B
    (
        "llama",
        {"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22, "num_key_value_heads": 4},
        CAUSAL,
        1_100_048_384,
    ),  # TinyLlama-1.1B
    ("mistral", {}, CAUSAL, 7_241_732_096),  # MistralConfig() = Mistral-7B-v0.1
    (
        "qwen2",
        {
            "hidden_size": 896,
            "intermediate_size": 4864,
            "num_hidden_layers": 24,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
        },
        CAUSAL,
        494_032_768,
    ),  # Qwen2-0.5B
    ("gpt2", {}, CAUSAL, 124_439_808),  # gpt2
    ("gpt2", {"n_embd": 1024, "n_layer": 24, "n_head": 16}, CAUSAL, 354_823_168),  # gpt2-medium
    ("bert", {}, BASE, 109_482_240),  # bert-base-uncased, BertModel
    ("bert", {}, MASKED_LM, 109_514_298),  # bert-base-uncased, BertForMaskedLM
]


@pytest.mark.parametrize(("model_type", "values", "head", "published"), PUBLISHED)
def test_published_counts(model_type: str, values: dict[str, object], head: str, published: int) -> None:
    assert count(model_type, values, head).total == published


def reference_llama(vocab: int, hidden: int, inner: int, layers: int, heads: int, kv_heads: int, tied: bool) -> int:
    """A LlamaForCausalLM, module by module (independent of dslint's formula)."""
    head_dim = hidden // heads
    modules = {"model.embed_tokens": vocab * hidden, "model.norm": hidden}
    for i in range(layers):
        modules[f"layers.{i}.q_proj"] = hidden * heads * head_dim
        modules[f"layers.{i}.k_proj"] = hidden * kv_heads * head_dim
        modules[f"layers.{i}.v_proj"] = hidden * kv_heads * head_dim
        modules[f"layers.{i}.o_proj"] = heads * head_dim * hidden
        for name in ("gate_proj", "up_proj", "down_proj"):
            modules[f"layers.{i}.{name}"] = hidden * inner
        modules[f"layers.{i}.input_layernorm"] = hidden
        modules[f"layers.{i}.post_attention_layernorm"] = hidden
    if not tied:
        modules["lm_head"] = vocab * hidden
    return sum(modules.values())


SCRIPT = """
import deepspeed
from transformers import LlamaConfig, LlamaForCausalLM

LAYERS = 6
config = LlamaConfig(
    vocab_size=32000,
    hidden_size=1024,
    intermediate_size=2816,
    num_hidden_layers=LAYERS,
    num_attention_heads=16,
    num_key_value_heads=4,
    rms_norm_eps=1e-5,
    max_position_embeddings=2048,
)
model = LlamaForCausalLM(config)
engine, *_ = deepspeed.initialize(model=model, config="ds.json")
"""


def test_llama_literal_within_one_percent(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    found = from_script(script, SCRIPT)
    expected = reference_llama(32000, 1024, 2816, 6, 16, 4, tied=False)
    assert found.total is not None
    assert abs(found.total - expected) <= 0.01 * expected
    assert found.total == expected  # exact, in fact
    assert found.largest_layer == 32000 * 1024
    assert "train.py:6: LlamaConfig(...)" in found.source and "LlamaForCausalLM at line 16" in found.source


def test_base_model_has_no_lm_head(tmp_path: Path) -> None:
    text = SCRIPT.replace("LlamaForCausalLM(config)", "LlamaModel(config)")
    found = from_script(tmp_path / "train.py", text)
    assert found.total == reference_llama(32000, 1024, 2816, 6, 16, 4, tied=True)


def test_non_literal_size_is_unknown(tmp_path: Path) -> None:
    text = SCRIPT.replace("hidden_size=1024", "hidden_size=args.hidden")
    found = from_script(tmp_path / "train.py", text)
    assert found.total is None
    assert "hidden_size" in found.source


def test_two_different_configs_are_unknown(tmp_path: Path) -> None:
    text = SCRIPT + "\nsmall = LlamaConfig(hidden_size=256)\n"
    assert from_script(tmp_path / "train.py", text).total is None


def test_no_model_is_unknown_not_guessed(tmp_path: Path) -> None:
    found = from_script(tmp_path / "train.py", "import deepspeed\nmodel = build()\n")
    assert found.total is None and "--params" in found.source


def test_config_json_beside_the_script(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12})
    )
    found = from_script(tmp_path / "train.py", "import deepspeed\n")
    assert found.total == 124_439_808 and "config.json" in found.source


def test_from_pretrained_in_the_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (tmp_path / "hub" / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--tiny" / "refs" / "main").write_text("abc123")
    (snapshot / "config.json").write_text(
        json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 1024,
                    "intermediate_size": 2816, "num_hidden_layers": 6, "num_attention_heads": 16,
                    "num_key_value_heads": 4, "vocab_size": 32000})
    )  # fmt: skip
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert hub_cache_config("org/tiny") == snapshot / "config.json"
    text = 'from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained("org/tiny")\n'
    found = from_script(tmp_path / "work" / "train.py", text)
    assert found.total == reference_llama(32000, 1024, 2816, 6, 16, 4, tied=False)
    assert "from_pretrained('org/tiny')" in found.source
    missing = from_script(tmp_path / "train.py", text.replace("org/tiny", "org/absent"))
    assert missing.total is None and "local Hugging Face cache" in missing.source


@pytest.mark.parametrize(("text", "value"), [("7B", 7 * 10**9), ("1.3b", 1_300_000_000), ("125M", 125_000_000),
                                             ("940640256", 940_640_256)])  # fmt: skip
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "seven", "0", "7X"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)
