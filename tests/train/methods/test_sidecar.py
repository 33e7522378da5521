"""Method state beside checkpoints: written after a save, read back only when training resumes from that step."""

from __future__ import annotations

from types import SimpleNamespace

from train.methods.sidecar import Sidecar


def test_sidecar_round_trip(tmp_path):
    store = {"value": [1, 2]}
    restored = []
    sidecar = Sidecar("demo", lambda: dict(store), restored.append)
    args = SimpleNamespace(output_dir=str(tmp_path))
    (tmp_path / "checkpoint-5").mkdir()
    sidecar.on_save(args, SimpleNamespace(global_step=5), None)
    assert (tmp_path / "checkpoint-5" / "demo.pt").exists()
    sidecar.on_train_begin(args, SimpleNamespace(global_step=0), None)  # a fresh start reads nothing
    assert restored == []
    sidecar.on_train_begin(args, SimpleNamespace(global_step=5), None)  # resumed from checkpoint-5
    assert restored == [{"value": [1, 2]}]
    sidecar.on_save(args, SimpleNamespace(global_step=7), None)  # no such checkpoint folder: nothing written
    assert not (tmp_path / "checkpoint-7").exists()
