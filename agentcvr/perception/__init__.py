"""Real perception: what `observe` and `listen` return when there are actual video files.

README
------
The same typed tool calls the simulator answers from scripts are answered here from files:

- `frames.py`: N frames uniformly in an interval of a video (clip offsets honoured), decoded with decord, resized so
  the long side is 360 px, cached by (file content fingerprint, interval, N, size); JPEG/base64 for VLM requests.
- `audio.py`: the audio agent, faster-whisper with the paper's decode settings (beam 5, temperature 0, no conditioning
  on previous text, no-speech threshold 0.6, log-prob threshold -1); Whisper tiny.en on CPU by default, any
  CTranslate2 Whisper folder or size (large-v3 on GPU servers) by configuration. Output `[s - e]: text` lines.
- `vlm.py`: the production visual agent, a Qwen-VL (or any VLM) behind an OpenAI-compatible URL (`vllm serve ...`).
- `describer.py`: the embedded CPU visual agent: scene cuts, on-screen text (tesseract OCR), dominant colours and
  motion, as timestamped text. It reports only what it measured; it does not caption.
- `real.py`: `RealPerception`, the `Perception` the agent loop calls, with worker pools and per-call timeouts.

Rendered synthetic videos (see `scripts_gen/render.py`) run through all of it:

    agentcvr gen-scripts --task BU -n 5 --out runs/bu.jsonl
    agentcvr render runs/bu.jsonl runs/bu-videos                   # MP4s + manifest.jsonl
    agentcvr run --perception real --videos runs/bu-videos --scripts runs/bu.jsonl --policy expert
    agentcvr eval fidelity runs/bu-videos --policy expert          # sim vs real on the same episodes

`attach_videos(episodes, folder)` points episodes at a rendered folder's files; for other videos set
`VideoRef.path` (relative paths resolve under `video_root`) and `offset` for clips.

Errors are `PerceptionError` subclasses (`media.py`) whose messages name the file and the problem; the agent loop
records them in the trace and tells the master agent. Heavy packages (decord, faster_whisper, numpy, PIL, av) are
imported inside these modules only, never by `import agentcvr`.

Apt packages: ffmpeg and espeak-ng (renderer), tesseract-ocr and tesseract-ocr-eng (describer OCR).
"""
