# Two commands on a fresh machine (see README):  `make demo`  and  `make test`.
# Set-up is idempotent: apt packages if missing, a venv in .venv/, the embedded weights in ~/.cache/agentcvr.

PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := ffmpeg espeak-ng tesseract-ocr tesseract-ocr-eng chromium
export OMP_NUM_THREADS ?= 1

.PHONY: setup system-packages models demo test test-heavy lint check
setup: $(VENV)/.installed models

system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing apt packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# torch first and pinned: pip takes the local CPU wheel for 2.13.0 (a bare `torch` pulls GBs of CUDA packages).
$(VENV)/.installed: pyproject.toml | system-packages
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[train,audio,video,serve,dev]"
	touch $@

models: $(VENV)/.installed
	$(BIN)/agentcvr models

# The main job on the embedded default, in about 5 minutes on 2 cores: the master on three simulated episodes (one per
# kind, traces printed), on one episode rendered to MP4 and run through the embedded real perception, and expert and
# random on the same simulated episodes; then the score table side by side. `--resume`: a second `make demo` (or one
# after an interrupt) continues each run's records instead of refusing them.
DEMO := runs/demo
DEMO_TASKS := --task NC --task PI --task MSR
demo: setup
	$(BIN)/agentcvr gen-scripts --task all -n 1 --seed 0 --out $(DEMO)/scripts.jsonl
	$(BIN)/agentcvr run --policy gguf --scripts $(DEMO)/scripts.jsonl $(DEMO_TASKS) --max-turns 8 --out $(DEMO)/gguf-sim.jsonl --resume
	$(BIN)/agentcvr render $(DEMO)/scripts.jsonl $(DEMO)/rendered --task BU --fps 5
	$(BIN)/agentcvr run --policy gguf --perception real --videos $(DEMO)/rendered --scripts $(DEMO)/scripts.jsonl --task BU \
	  --max-turns 8 --out $(DEMO)/gguf-real.jsonl --resume
	$(BIN)/agentcvr run --policy expert --scripts $(DEMO)/scripts.jsonl $(DEMO_TASKS) --task BU --no-traces --out $(DEMO)/expert.jsonl --resume
	$(BIN)/agentcvr run --policy random --scripts $(DEMO)/scripts.jsonl $(DEMO_TASKS) --task BU --no-traces --out $(DEMO)/random.jsonl --resume
	$(BIN)/agentcvr report $(DEMO)/expert.jsonl $(DEMO)/random.jsonl $(DEMO)/gguf-sim.jsonl $(DEMO)/gguf-real.jsonl

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The fast lane after `make setup`: lint and the tests without the `slow` and `gguf` markers, no set-up step. The
# training stack's tests (tests/train: torch and TRL take ~15 s to import) run in `make test`, as CI does.
check:
	@test -x $(BIN)/pytest || { echo "make check runs in the venv that make setup builds: run make setup first"; exit 2; }
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -q -m "not slow and not gguf" --ignore=tests/train

# The GGUF tests run in a process of their own: llama.cpp segfaults when it shares one with torch/ctranslate2/av.
test: setup lint
	$(BIN)/pytest -q -m "not gguf and not heavy"
	$(BIN)/pytest -q -m "gguf and not heavy"

# Opt-in: a GPU preset through train-sim on the CPU with the real Qwen2.5-Coder-0.5B (~14 min, 15 GB RAM, 12 GB disk).
test-heavy: setup
	$(BIN)/pytest -q -m heavy
