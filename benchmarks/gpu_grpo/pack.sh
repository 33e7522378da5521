#!/usr/bin/env bash
# Packs what a bare GPU machine (Python 3.12, torch, transformers, accelerate; no registry, no hub) needs to run
# `train-sim --preset gpu-looker` from a LoRA warm start, in pieces that each fit one device call (64 MiB with the
# working tree): the wheels the image lacks (.dev0/), then one gzipped tar of the warm start (its adapter, not
# its 540 MB merged weights: the run rebuilds them) and the registry models it reads (the SmolLM2 GGUF, the reader's
# MiniLM), cut into .dev1/ .dev2/ ... Every piece is checked by sha256 where it is used (the models' pins).
#   benchmarks/gpu_grpo/pack.sh runs/smol-v5/warmstart      # then: run.sh, one call per piece (see its header)
set -euo pipefail
WARM=${1:?usage: pack.sh WARMSTART_FOLDER [PIECE_MB]}
PIECE_MB=${2:-45}
MODELS=${AGENTCVR_HOME:-$HOME/.cache/agentcvr}/models
[[ -f $WARM/DONE && -d $WARM/adapter ]] || { echo "pack.sh: $WARM is not a finished LoRA warm start (DONE, adapter/)" >&2; exit 2; }
for m in smollm2-135m minilm-l6; do
  [[ -d $MODELS/$m ]] || { echo "pack.sh: $MODELS/$m missing: run \`agentcvr models --fetch $m\` first" >&2; exit 2; }
done
rm -rf .dev[0-9]*
mkdir -p .dev0/whl
# What the image lacks, for CPython 3.12 on x86-64 (its transformers, accelerate, tokenizers and safetensors serve), at
# the versions this checkout's environment has (PYTHON: the project's venv), so the device runs what the tests ran.
PYTHON=${PYTHON:-.venv/bin/python}
WHEELS=(
  trl datasets dill multiprocess pydantic pydantic-core typing-inspection pydantic-settings python-dotenv
  langgraph langgraph-checkpoint langgraph-prebuilt langgraph-sdk langchain-core langchain-protocol langsmith
  jsonpatch jsonpointer tenacity ormsgpack orjson requests-toolbelt uuid-utils zstandard gguf peft xxhash
  distro httpx2 httpcore2 opentelemetry-api sniffio truststore websockets typer click rich annotated-types
  snowballstemmer
)
pins=$("$PYTHON" -c 'import sys, importlib.metadata as m; print(" ".join(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' "${WHEELS[@]}")
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d .dev0/whl $pins
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/models" "$stage/warmstart"
for m in smollm2-135m minilm-l6; do tar -C "$MODELS" --exclude .verified.json -cf - "$m" | tar -C "$stage/models" -xf -; done
tar -C "$WARM" --no-wildcards-match-slash --exclude './*.safetensors' --exclude ./sft_checkpoint.pt -cf - . \
  | tar -C "$stage/warmstart" -xf -
[[ -f $stage/warmstart/adapter/adapter_model.safetensors ]] || { echo "pack.sh: $WARM/adapter has no weights" >&2; exit 2; }
tar -C "$stage" -cf - . | gzip -6 | split -b "${PIECE_MB}M" -d - piece.
i=1
for piece in piece.*; do mkdir -p ".dev$i" && mv "$piece" ".dev$i/" && i=$((i + 1)); done
du -sh .dev*
