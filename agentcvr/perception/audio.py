"""The audio agent: faster-whisper over an interval of a video's audio track, as `[s - e]: text` lines.

    agent = AudioAgent(AudioConfig())                   # Whisper tiny.en, int8 on CPU
    agent.listen("talk.mp4", start=0, end=30)           # "[0.0 - 4.2]: Good morning." or "No speech detected."

Decode settings are the paper's (appendix C): beam 5, temperature 0 (no fallback), no conditioning on previous text,
no-speech threshold 0.6, log-prob threshold -1, language configurable; plus faster-whisper's Silero VAD, which the
paper does not mention: without it Whisper writes "You" into silent stretches and dates speech to the start of its
30 s window (benchmarks/asr_wer.py measures both ways). `model` is a name from `agentcvr.models`
(fetched offline from pinned wheels), a CTranslate2 Whisper folder, or a faster-whisper size such as `large-v3`
(downloaded from the hub, for GPU servers). Only the requested interval is decoded (PyAV seeks to it) and
resampled to 16 kHz mono; times in the output are the clip's own seconds. Results are cached by (file content
fingerprint, interval in the file, decode settings).
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentcvr import cancel
from agentcvr.perception.media import NoAudioTrack, VideoUnreadable, existing, file_interval, fingerprint, probe

NO_SPEECH = "No speech detected."
SAMPLE_RATE = 16_000  # what Whisper expects


class AudioConfig(BaseModel):
    """The audio agent's model and decode settings."""

    model: str = Field(default="whisper-tiny.en", description="agentcvr.models name, CTranslate2 folder or size.")
    device: str = Field(default="cpu", description="'cpu', 'cuda' or 'auto'.")
    compute_type: str = Field(default="int8", description="CTranslate2 compute type (int8 on CPU, float16 on GPU).")
    cpu_threads: int = Field(default=1, ge=0, description="Threads per transcription (0: CTranslate2 default).")
    workers: int = Field(default=1, ge=1, description="Transcriptions the model may run at the same time.")
    language: str | None = Field(default="en", description="Spoken language; None detects it (multilingual models).")
    beam_size: int = Field(default=5, ge=1, description="Beam width (paper: 5).")
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature, no fallback (paper: 0).")
    condition_on_previous_text: bool = Field(default=False, description="Paper: False.")
    no_speech_threshold: float = Field(default=0.6, description="Paper: 0.6.")
    log_prob_threshold: float = Field(default=-1.0, description="Paper: -1.")
    max_new_tokens: int | None = Field(default=200, description="Tokens per 30 s window: bounds repetition loops.")
    vad_filter: bool = Field(
        default=True, description="Silero VAD first (not in the paper): stops Whisper inventing words in silence."
    )
    cache_size: int = Field(default=512, ge=0, description="Transcripts kept in memory.")


@dataclass(frozen=True)
class Utterance:
    start: float  # clip seconds
    end: float
    text: str


def format_utterances(utterances: list[Utterance]) -> str:
    """The agent-facing transcript, in the simulator's format.

    >>> format_utterances([Utterance(1.04, 3.5, "Hello there.")])
    '[1.0 - 3.5]: Hello there.'
    >>> format_utterances([])
    'No speech detected.'
    """
    if not utterances:
        return NO_SPEECH
    return "\n".join(f"[{u.start:.1f} - {u.end:.1f}]: {u.text}" for u in utterances)


def resolve_model(name: str) -> str:
    """A faster-whisper model argument: a folder as is, an `agentcvr.models` name fetched, else the name."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    from agentcvr.models import MODELS, ensure_model

    if name in MODELS:
        return str(ensure_model(name, progress=False))
    return name


class AudioAgent:
    """Transcribes intervals of video files; thread-safe (CTranslate2 runs `workers` decodes at once)."""

    def __init__(self, config: AudioConfig | None = None):
        self.config = config or AudioConfig()
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[tuple, list[Utterance]] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def model(self):
        """The WhisperModel, loaded on first use (1-2 s for tiny.en)."""
        with self._load_lock:
            if self._model is None:
                c = self.config
                model = resolve_model(c.model)
                if Path(model).is_dir():  # a local folder must never trigger a hub lookup
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from faster_whisper import WhisperModel

                self._model = WhisperModel(
                    model,
                    device=c.device,
                    compute_type=c.compute_type,
                    cpu_threads=c.cpu_threads,
                    num_workers=c.workers,
                )
            return self._model

    def listen(self, path: str | os.PathLike, start: float, end: float, offset: float = 0.0) -> str:
        return format_utterances(self.transcribe(path, start, end, offset))

    def transcribe(self, path: str | os.PathLike, start: float, end: float, offset: float = 0.0) -> list[Utterance]:
        """Speech in [start, end] of the clip at `offset` in `path`, with clip-relative times."""
        info = probe(path)
        if not info.has_audio:
            raise NoAudioTrack(f"{path} has no audio track")
        begin, finish = file_interval(info.duration, offset, start, end, str(path))
        key = (fingerprint(path), round(begin, 3), round(finish, 3), self._settings())
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        audio = load_audio(path, begin, finish)
        utterances = self._decode(audio, start, end) if len(audio) else []
        with self._cache_lock:
            self._cache[key] = utterances
            while len(self._cache) > self.config.cache_size:
                self._cache.popitem(last=False)
        return utterances

    def transcribe_array(self, audio: Any) -> list[Utterance]:
        """Speech in a 16 kHz mono float32 array, times from its start (used by the WER benchmark)."""
        return self._decode(audio, 0.0, len(audio) / SAMPLE_RATE)

    def _decode(self, audio: Any, start: float, end: float) -> list[Utterance]:
        c = self.config
        segments, _ = self.model.transcribe(
            audio,
            language=c.language,
            beam_size=c.beam_size,
            temperature=c.temperature,
            condition_on_previous_text=c.condition_on_previous_text,
            no_speech_threshold=c.no_speech_threshold,
            log_prob_threshold=c.log_prob_threshold,
            max_new_tokens=c.max_new_tokens,
            vad_filter=c.vad_filter,
        )
        utterances = []
        for segment in segments:  # a generator: decoding happens here
            cancel.check()  # between segments: a stopped run decodes no more of them
            text = re.sub(r"\s+", " ", segment.text).strip()
            if not text:
                continue
            s = min(end, start + float(segment.start))
            e = min(end, max(s, start + float(segment.end)))
            utterances.append(Utterance(round(s, 2), round(e, 2), text))
        return utterances

    def _settings(self) -> tuple:
        c = self.config
        return (
            c.model,
            c.language,
            c.beam_size,
            c.temperature,
            c.condition_on_previous_text,
            c.no_speech_threshold,
            c.log_prob_threshold,
            c.max_new_tokens,
            c.vad_filter,
        )


def load_audio(path: str | os.PathLike, begin: float, finish: float):
    """Float32 mono 16 kHz samples of [begin, finish] (file seconds); silence where the track is shorter."""
    import av
    import numpy as np

    path = existing(path)
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise NoAudioTrack(f"{path} has no audio track")
            stream = container.streams.audio[0]
            stream.thread_type = "AUTO"
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
            if begin > 1.0:  # land on an audio frame before `begin`; decoding continues from there
                container.seek(int((begin - 1.0) / stream.time_base), stream=stream, backward=True)
            chunks, first = [], None
            for frame in container.decode(stream):
                if frame.time is None:
                    continue
                if first is None:
                    first = float(frame.time)
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
                if frame.time > finish:
                    break
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
    except av.error.FFmpegError as error:
        raise VideoUnreadable(f"{path}: the audio track could not be decoded: {error}") from error
    samples = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, dtype=np.float32)
    first = begin if first is None else first
    if first > begin:  # the track starts late: pad with silence so times stay aligned
        samples = np.concatenate([np.zeros(int(round((first - begin) * SAMPLE_RATE)), np.float32), samples])
        first = begin
    lo = max(0, int(round((begin - first) * SAMPLE_RATE)))
    hi = max(lo, int(round((finish - first) * SAMPLE_RATE)))
    return samples[lo:hi]
