"""Whether a ZeRO section gathers the 16-bit weights when the model is saved (`save_16bit_model`, accelerate's
`get_state_dict`/`save_model` under ZeRO-3): `stage3_gather_16bit_weights_on_model_save` or one of its older
names (`runtime/zero/config.py`, 0.19.8)."""

from __future__ import annotations

GATHER_KEYS = (
    "stage3_gather_16bit_weights_on_model_save",
    "gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
)


def gathers_16bit(section: object) -> bool | None:
    """Whether a ZeRO section gathers the 16-bit weights on save (None: not known)."""
    if not isinstance(section, dict):
        return None
    values = [section[key] for key in GATHER_KEYS if key in section]
    if not values:
        return False
    if any(v is True for v in values):
        return True
    if all(v is False for v in values):
        return False
    return None
