# sessions 45-46: session 43's command (grpo-cpu-s43/command.sh), unchanged but for grpo.max_steps, on a rollout engine
# that decodes into a growing cache and lets stopped rows go (train/kv_cache.py, train/decode.py: the same sampling).
# Same run folder; it resumes from the last checkpoint (one a step). Session 46 ran steps 4-18 from session 43's
# checkpoint-3 (12 gave +3.0 paired on seed 60, 18 +2.0: docs/gpu_grpo.md) and kept its last checkpoint
# here (adapter, optimizer, scheduler, RNG, trainer state; metrics.jsonl every step's row). To go on from it:
#   mkdir -p runs/grpo-v15d/warmstart && cp -r docs/search_warmstart/smol-v15-warmstart/* runs/grpo-v15d/warmstart/
#   mkdir -p runs/grpo-v15d/grpo && cp -r docs/search_warmstart/grpo-cpu-s46/checkpoint-* runs/grpo-v15d/grpo/
#   cp docs/search_warmstart/grpo-cpu-s46/metrics.jsonl runs/grpo-v15d/
# then this command with a larger grpo.max_steps. Its seed-60 table: gunzip search_warmstart/s60-*.jsonl.gz into
# runs/s60/sim/ under master_choice's names (trained_runs_grpo-v15d_warmstart.jsonl, ..._merged-N.jsonl) and it
# resumes.
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15d --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=18 -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 -o grpo.prefix_cache=true \
    -o "data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
