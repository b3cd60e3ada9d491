"""Mask rules: as the settings file and --mask give them, and what they leave of a record."""

from __future__ import annotations

import json

import pytest

from console.config import MASK_EVERYTHING, Config, load_config, save_config
from console.read.decoding import decode_record
from console.read.masking import MaskRuleError, masker


def record(payload: bytes):
    [decoded] = decode_record(payload, shard_id="s", sequence_number="1", partition_key="k")
    return decoded


def test_paths_reach_into_lists_and_any_key_and_leave_the_rest():
    mask = masker(["orders.*.card", "user.email"])
    document = {
        "user": {"email": "a@b.io", "name": "Ada"},
        "orders": [{"x": {"card": 4111111111111111}, "y": {"card": "5500"}}],
    }
    masked = json.loads(mask(record(json.dumps(document).encode())).json_line())["content"]

    assert masked["user"]["name"] == "Ada" and masked["user"]["email"].startswith("<masked 6 #")
    assert masked["orders"][0]["x"]["card"].startswith("<masked 16 #")
    assert masked["orders"][0]["y"]["card"].startswith("<masked 4 #")


def test_presets_find_cards_and_addresses_inside_text_records():
    mask = masker(["@cards", "@emails"])
    line = mask(record(b"paid with 4111-1111-1111-1111 by ada@example.org today")).content_text()

    assert "4111" not in line and "example.org" not in line and line.startswith("paid with <masked 19 #")


def test_equal_values_mask_alike_and_different_ones_differ():
    mask = masker(["v"])
    first, again, other = (mask(record(json.dumps({"v": v}).encode())).value["v"] for v in ("x1", "x1", "x2"))

    assert first == again != other


@pytest.mark.parametrize("rule", ["re:(", "@phones", "a..b", "re:"])
def test_a_rule_that_does_not_parse_says_which(rule):
    with pytest.raises(MaskRuleError, match="mask"):
        masker([rule])


def test_the_settings_file_keeps_its_rules_and_an_unusable_mask_masks_everything(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('mask = ["user.email", "re:\\\\b\\\\d{16}\\\\b"]\n')
    config, warning = load_config(path)
    assert warning is None and config.mask == ("user.email", "re:\\b\\d{16}\\b")
    save_config(config, path)
    assert load_config(path)[0].mask == config.mask

    path.write_text("mask = 42\n")
    config, warning = load_config(path)
    assert config.mask == MASK_EVERYTHING and "mask" in (warning or "")

    path.write_text("mask = [unterminated\n")
    config, warning = load_config(path)
    assert config.mask == MASK_EVERYTHING and "masked" in (warning or "")


def test_keys_preset_masks_the_partition_key_alone():
    mask = masker(["@keys"])
    masked = mask(record(b'{"n": 1}'))

    assert masked.partition_key.startswith("<masked 1 #") and masked.value == {"n": 1}


def test_a_leading_data_names_the_content_as_in_where_and_a_field_named_data_is_masked_too():
    mask = masker(["data.user.email"])
    document = {"user": {"email": "ada@example.org"}, "data": {"user": {"email": "bob@example.org"}}, "n": 1}
    masked = json.loads(mask(record(json.dumps(document).encode())).json_line())["content"]

    assert "example.org" not in json.dumps(masked) and masked["n"] == 1
    assert masked["user"]["email"].startswith("<masked 15 #") and masked["data"]["user"]["email"].startswith("<masked")


def test_mask_keys_is_kept_and_fails_closed_when_set_but_unusable(tmp_path):
    path = tmp_path / "config.toml"
    save_config(Config(mask_keys=True), path)
    config, warning = load_config(path)
    assert warning is None and config.mask_keys

    path.write_text('mask_keys = "yes"\n')
    config, warning = load_config(path)
    assert config.mask_keys and "mask_keys" in (warning or "")

    path.write_text("mask_keys = true\nbroken = [\n")
    config, warning = load_config(path)
    assert config.mask_keys and "partition keys masked" in (warning or "")

    path.write_text("mask_keys = false\n")
    assert not load_config(path)[0].mask_keys
