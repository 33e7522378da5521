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
# What the image lacks, for CPython 3.12 on x86-64 (its transformers, accelerate, tokenizers and safetensors serve).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d .dev0/whl trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 pydantic==2.14.4 \
  pydantic-core==2.50.5 typing-inspection==0.4.5 pydantic-settings==2.16.3 python-dotenv==1.2.4 langgraph==1.2.24 \
  langgraph-checkpoint==4.3.2 langgraph-prebuilt==1.1.3 langgraph-sdk==0.4.14 langchain-core==1.8.3 langchain-protocol==0.0.20 \
  langsmith==0.15.1 jsonpatch==1.48 jsonpointer==3.12 tenacity==9.2.1 ormsgpack==1.13.1 orjson==3.13.0 \
  requests-toolbelt==1.0.0 uuid-utils==0.19.0 zstandard==0.25.0 gguf==0.19.0 peft==0.21.2 xxhash==4.1.0 \
  distro==1.9.0 httpx2==2.16.2 httpcore2==2.16.2 opentelemetry-api==1.45.2 sniffio==1.3.1 truststore==0.10.5 \
  websockets==17.4 typer==0.29.2 click==8.5.1 rich==15.0.0 annotated-types==0.7.0 snowballstemmer==3.1.1
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
