"""Checks of the bundled per-layer profiles (data/profiles/) and the device model."""

from __future__ import annotations

import csv
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "data" / "profiles"
SCRIPT = ROOT / "tools" / "build_profiles.py"

KINDS = {"conv", "fc", "attention", "embedding", "norm", "lstm", "pool", "other"}
HEADER = ["layer", "kind", "params", "forward_flops"]
INDEX_COLUMNS = [
    "name",
    "display_name",
    "family",
    "sample_unit",
    "layers",
    "params",
    "published_params",
    "published_source",
    "default_global_batch",
]

# Published parameter counts (the facts the profiles must reproduce within 0.5%).
PUBLISHED = {
    "alexnet": 61_100_840,  # torchvision AlexNet_Weights.IMAGENET1K_V1
    "vgg16": 138_357_544,  # torchvision VGG16_Weights.IMAGENET1K_V1
    "resnet50": 25_557_032,  # torchvision ResNet50_Weights.IMAGENET1K_V1
    "resnet152": 60_192_808,  # torchvision ResNet152_Weights.IMAGENET1K_V1
    "inception_v3": 27_161_264,  # torchvision Inception_V3_Weights (with AuxLogits)
    "densenet121": 7_978_856,  # torchvision DenseNet121_Weights.IMAGENET1K_V1
    "mobilenet_v2": 3_504_872,  # torchvision MobileNet_V2_Weights.IMAGENET1K_V1
    "bert_base": 109_482_240,  # Hugging Face bert-base-uncased BertModel (with pooler)
    "gpt2_small": 124_439_808,  # Hugging Face gpt2 (tied LM head)
    "resnext": 25_028_904,  # torchvision ResNeXt50_32X4D_Weights.IMAGENET1K_V1
    "googlenet": 6_624_904,  # torchvision GoogLeNet_Weights.IMAGENET1K_V1 (no aux)
    # No official figure: V*E + 2 * (4H(E+H) + 8H) + (H*V + V) with V=33278, E=H=650 (untied).
    "lstm_lm": 33278 * 650 + 2 * (4 * 650 * 1300 + 8 * 650) + (650 * 33278 + 33278),
}

# Forward FLOPs per sample: 2 x torchvision's published GMACs ("GFLOPS" metadata),
# and 2 x params x tokens (+ attention / LM head) estimates for the sequence models.
EXPECTED_FLOPS = {
    "alexnet": 2 * 0.71e9,
    "vgg16": 2 * 15.47e9,
    "resnet50": 2 * 4.09e9,
    "resnet152": 2 * 11.51e9,
    "inception_v3": 2 * 5.71e9,
    "densenet121": 2 * 2.83e9,
    "mobilenet_v2": 2 * 0.30e9,
    "resnext": 2 * 4.23e9,
    "googlenet": 2 * 1.50e9,
    # 2*85M non-embedding params*128 tokens + 12 layers*4*L^2*d attention + pooler
    "bert_base": 2 * 85_054_464 * 128 + 12 * 4 * 128**2 * 768,
    # 2*85M*1024 + 12*4*L^2*d + tied LM head 2*1024*768*50257
    "gpt2_small": 2 * 85_054_464 * 1024 + 12 * 4 * 1024**2 * 768 + 2 * 1024 * 768 * 50257,
    # 35 tokens x (2 layers x 2*4H(2H) + decoder 2*H*V)
    "lstm_lm": 35 * (2 * 2 * 4 * 650 * 1300 + 2 * 650 * 33278),
}

CNNS = {"alexnet", "vgg16", "resnet50", "resnet152", "inception_v3", "densenet121", "mobilenet_v2"}
TRANSFORMERS = {"bert_base", "gpt2_small"}


def _read_profile(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    assert lines[: len(comments)] == comments, f"{path.name}: comment lines must lead the file"
    return comments, list(csv.reader(body))


def _index() -> list[dict[str, str]]:
    with (PROFILES / "index.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _names() -> list[str]:
    return [r["name"] for r in _index()]


def test_index_lists_enough_networks_of_each_family():
    index = _index()
    names = {r["name"] for r in index}
    assert len(names) >= 10
    assert CNNS | TRANSFORMERS | {"lstm_lm"} <= names
    fams = {r["family"] for r in index}
    assert {"cnn", "transformer", "rnn"} <= fams
    for r in index:
        assert r["family"] in {"cnn", "transformer", "rnn"}
        assert (PROFILES / f"{r['name']}.csv").is_file()
        assert int(r["default_global_batch"]) > 0
        assert r["sample_unit"] and r["published_source"] and r["display_name"]


def test_index_columns():
    with (PROFILES / "index.csv").open(encoding="utf-8", newline="") as fh:
        assert next(csv.reader(fh)) == INDEX_COLUMNS


@pytest.mark.parametrize("name", _names())
def test_profile_rows_and_header(name):
    comments, rows = _read_profile(PROFILES / f"{name}.csv")
    text = "\n".join(comments)
    assert all(c.startswith("# ") for c in comments)
    assert "python tools/build_profiles.py" in text
    assert "sample unit:" in text and "published params:" in text and "architecture:" in text
    assert rows[0] == HEADER
    body = rows[1:]
    assert 1 <= len(body) <= 250
    layer_names = [r[0] for r in body]
    assert len(set(layer_names)) == len(layer_names), "layer names must be unique"
    for layer, kind, params, flops in body:
        assert layer
        assert kind in KINDS
        assert params.isdigit(), f"{layer}: params must be a non-negative integer, got {params!r}"
        assert float(flops) >= 0.0
    # input side first: an embedding / the stem comes first, the classifier / head last
    first_kind, last_kind = body[0][1], body[-1][1]
    if name in CNNS:
        assert first_kind == "conv" and last_kind == "fc"
    if name in TRANSFORMERS or name == "lstm_lm":
        assert first_kind == "embedding"
        assert last_kind == "fc"


@pytest.mark.parametrize("name", _names())
def test_params_match_published_and_index(name):
    _, rows = _read_profile(PROFILES / f"{name}.csv")
    total = sum(int(r[2]) for r in rows[1:])
    published = PUBLISHED[name]
    assert abs(total - published) / published <= 0.005, (name, total, published)
    entry = {r["name"]: r for r in _index()}[name]
    assert int(entry["params"]) == total
    assert int(entry["published_params"]) == published
    assert int(entry["layers"]) == len(rows) - 1


@pytest.mark.parametrize("name", _names())
def test_forward_flops_plausible(name):
    _, rows = _read_profile(PROFILES / f"{name}.csv")
    total = sum(float(r[3]) for r in rows[1:])
    expected = EXPECTED_FLOPS[name]
    assert abs(total - expected) / expected <= 0.15, (name, total, expected)


def test_resnet50_flops_window():
    _, rows = _read_profile(PROFILES / "resnet50.csv")
    total = sum(float(r[3]) for r in rows[1:])
    assert 7.0e9 <= total <= 8.6e9


def test_kinds_cover_model_families():
    kinds = {
        name: {r[1] for r in _read_profile(PROFILES / f"{name}.csv")[1][1:]} for name in _names()
    }
    assert "conv" in kinds["resnet50"]
    assert {"attention", "norm", "embedding", "fc"} <= kinds["bert_base"]
    assert {"attention", "norm", "embedding", "fc"} <= kinds["gpt2_small"]
    assert "lstm" in kinds["lstm_lm"]


def test_script_is_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        subprocess.run(
            [sys.executable, str(SCRIPT), "--out", str(out)], check=True, capture_output=True
        )
    produced = sorted(p.name for p in first.iterdir())
    assert produced == sorted(p.name for p in second.iterdir())
    assert produced == sorted(p.name for p in PROFILES.glob("*.csv"))
    for fname in produced:
        assert (first / fname).read_bytes() == (second / fname).read_bytes(), fname
        assert (first / fname).read_bytes() == (PROFILES / fname).read_bytes(), (
            f"{fname} is stale: rerun the script"
        )


# ---------------------------------------------------------------------------
# Device model.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def devices():
    from smdlab.model import devices as mod

    return mod


def test_devices_present(devices):
    assert {"v100", "a100"} <= set(devices.DEVICES)
    for name, dev in devices.DEVICES.items():
        assert dev.name == name
        assert dev.peak_flops > 0
        assert dev.backward_factor == pytest.approx(2.0)
        assert "NVIDIA" in dev.source
        assert set(dev.efficiency) >= KINDS
        assert all(0 < e <= 1 for e in dev.efficiency.values())


def test_v100_slower_than_a100_for_every_kind(devices):
    v100, a100 = devices.get_device("v100"), devices.get_device("a100")
    for kind in sorted(KINDS):
        assert v100.forward_time(kind, 1e9) > a100.forward_time(kind, 1e9), kind


def test_forward_time_formula(devices):
    dev = devices.get_device("v100")
    assert dev.forward_time("conv", 2e9) == pytest.approx(
        2e9 / (dev.peak_flops * dev.efficiency["conv"])
    )
    assert dev.forward_time("embedding", 0.0) == 0.0


def test_unknown_device_raises_naming_allowed(devices):
    with pytest.raises(ValueError) as err:
        devices.get_device("tpu9000")
    msg = str(err.value)
    assert "device" in msg and "v100" in msg and "a100" in msg and "tpu9000" in msg


def test_unknown_kind_raises(devices):
    with pytest.raises(ValueError, match="kind"):
        devices.get_device("a100").forward_time("quantum", 1.0)


def test_device_is_frozen(devices):
    dev = devices.get_device("v100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        dev.peak_flops = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        dev.efficiency["conv"] = 1.0  # type: ignore[index]
