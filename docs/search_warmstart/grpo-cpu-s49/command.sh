# session 49: the anchored all-kinds recipe (grpo-cpu-s46/command.sh) plus the stop anchor on further episodes of the
# kinds GRPO does not prompt (grpo.stop_anchor_counts: 40 scripts each of BU, CC, PI, FSA, PSS after the GRPO
# scripts; 4 of their anchors a step beside the batch's), from the same warm start (smol-v15), a new run folder per
# seed:
#   mkdir -p runs/grpo-v16-s$SEED/warmstart && cp -r docs/search_warmstart/smol-v15-warmstart/* runs/grpo-v16-s$SEED/warmstart/
# It resumes from its last checkpoint (one a step); rerun with a larger grpo.max_steps to go on.
# Session 49 ran seed 0 to 12 (metrics-seed0.jsonl; seed-60 table: search_warmstart/s60-packed-v16-s0-12.jsonl.gz,
# +0.0 paired) and seed 1 to 12 (metrics-seed1.jsonl; its table not measured), side by side with THREADS=1.
SEED=${SEED:-0}
STEPS=${STEPS:-12}  # THREADS=1 runs two seeds side by side on the 2 cores
OMP_NUM_THREADS=${THREADS:-2} .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v16-s$SEED --resume -o seed=$SEED \
    -o grpo.use_cpu=true -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=30 -o grpo.max_steps=$STEPS -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 -o grpo.prefix_cache=true \
    -o "grpo.stop_anchor_counts={BU: 40, CC: 40, PI: 40, FSA: 40, PSS: 40}" -o grpo.stop_anchor_per_step=4 \
    -o "data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
