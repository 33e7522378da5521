#!/usr/bin/env bash
# The device side of a GPU GRPO run from a packed warm start (pack.sh): each call carries one piece (.devN/) and
# stashes it outside the repository, where it stays while the machine is held; the last call unpacks and runs.
#   run.sh stash                # a call that only brings a piece
#   run.sh install              # stash; install the wheels; import every module a run needs (seconds)
#   run.sh check                # install, then a two-step cpu-tiny run on the GPU (the code path, about a minute)
#   run.sh grpo SEED... [-- OVERRIDES]   # stash; unpack; one gpu-looker run per seed, side by side; results to $OUT
# RUN_SECONDS caps each run's wall time (its GRPO stops earlier by grpo.max_seconds), so the results still come back.
# REUSE_EVALS=1 puts the eval_teacher.json and eval_warmstart.json carried in a piece into each run folder, so the run
# skips those two held-out evaluations (greedy, the same warm start and held-out seed: the same episodes' results).
set -uo pipefail
STASH=/tmp/agentcvr-payload
SITE=/tmp/agentcvr-site
mkdir -p "$STASH"
for piece in .dev[0-9]*/*; do [[ -e $piece ]] && cp -r "$piece" "$STASH/"; done
ls "$STASH"
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # two runs share the GPU: less memory lost to fragments
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONPATH="$SITE:$PWD" AGENTCVR_HOME="$STASH/unpacked"
CLI='import sys; from agentcvr.cli import app; sys.argv[0] = "agentcvr"; app()'  # the package is not installed there
agentcvr() { python3 -c "$CLI" "$@"; }

install() {
  [[ -f $SITE/.done ]] && return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$STASH"/whl/*.whl \
    && touch "$SITE/.done"
}

imports() {
  nvidia-smi --query-gpu=name,memory.total --format=csv
  python3 -c 'import torch, transformers, trl, peft, langgraph, pydantic; print(torch.__version__, torch.cuda.is_available(), transformers.__version__, trl.__version__, peft.__version__)'
  # every module a gpu-looker run imports (a wheel missing from pack.sh's list fails here, not minutes into the run)
  python3 -c 'import agentcvr.cli, agentcvr.reader, agentcvr.policies.hf_policy, simulator.script_sim, scripts_gen.generate, train.pipeline, train.grpo, train.rollout, train.evaluate, train.trajectories, train.tiny_model, gguf'
}

case ${1:-} in
stash) ;;
install) install && imports || exit 1 ;;
check)
  install && imports || exit 1
  rm -rf /tmp/check
  time agentcvr train-sim --preset cpu-tiny --out /tmp/check -o "data.tasks=[CC]" -o data.train_per_task=20 \
    -o data.grpo_per_task=8 -o data.heldout_per_task=4 -o sft.max_epochs=1 -o grpo.max_steps=2 \
    -o grpo.use_cpu=false -o eval.device=cuda -o eval.batch_size=4 2>&1 | grep -v Warning | tail -25
  ;;
grpo)
  shift
  seeds=()
  while [[ $# -gt 0 && $1 != -- ]]; do seeds+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  install || exit 1
  if [[ ! -d $STASH/unpacked ]]; then
    mkdir -p "$STASH/unpacked" && cat "$STASH"/piece.* | gzip -d | tar -x -C "$STASH/unpacked" || exit 1
  fi
  pids=()
  for seed in "${seeds[@]}"; do
    run="runs/gpu-looker-s$seed"
    mkdir -p "$run" && cp -rn "$STASH/unpacked/warmstart" "$run/"
    [[ ${REUSE_EVALS:-0} == 1 ]] && { cp -n "$STASH"/eval_teacher.json "$STASH"/eval_warmstart.json "$run/" || exit 1; }
    OMP_NUM_THREADS=4 timeout "${RUN_SECONDS:-86400}" python3 -c "$CLI" train-sim --preset gpu-looker --out "$run" \
      --resume -o seed="$seed" "$@" >"$OUT/gpu-looker-s$seed.log" 2>&1 &  # in $OUT: it comes back even if cut
    pids+=($!)
  done
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for seed in "${seeds[@]}"; do
    run="runs/gpu-looker-s$seed"
    grep -v -E "Warning|warn\(|it/s\]" "$OUT/gpu-looker-s$seed.log" | tail -40
    # the run's reports, curves, metrics and the trained adapter; not the merged weights, checkpoints or base
    tar -C runs -czf "$OUT/gpu-looker-s$seed.tgz" --exclude "gpu-looker-s$seed/final/model.safetensors" \
      --exclude base --exclude grpo --exclude warmstart "gpu-looker-s$seed"
  done
  exit $status
  ;;
*) echo "usage: run.sh stash | check | grpo SEED... [-- OVERRIDES]" >&2; exit 2 ;;
esac
