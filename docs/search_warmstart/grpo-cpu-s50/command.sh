# sessions 50-51: session 46's anchored all-kinds recipe (grpo-cpu-s46/command.sh) plus the stop after the scan on
# further episodes of the kinds GRPO does not prompt (session 49's grpo.stop_anchor_counts, 4 a step) as a hinge under
# p=0.9 (grpo.stop_anchor_floor): zero while that stop holds, so it acts only where the search GRPO rewards spreads
# (session 48: seed 0 from 18 to 24 updates won 7 episodes and lost 3 on BU, CC and PEA). Each seed goes on from the
# checkpoint session 48 went on from, to the step session 48 reached, so the two are paired update for update (the
# same prompts in the same order; TRL's seed draws them): seed 0 from grpo-cpu-s46/checkpoint-18 to 24, seed 1 from
# grpo-cpu-s47-seed1/checkpoint-12 to 17 (that checkpoint was kept without its optimizer: Adam starts afresh at
# step 13, where session 48's seed 1 went on with its moments). Set a run folder up (seed 1 in brackets):
#   R=runs/grpo-v17-s$SEED; mkdir -p $R/warmstart $R/grpo
#   cp -r docs/search_warmstart/smol-v15-warmstart/* $R/warmstart/
#   cp -r docs/search_warmstart/grpo-cpu-s46/checkpoint-18 $R/grpo/   # [grpo-cpu-s47-seed1/checkpoint-12]
#   cp docs/search_warmstart/grpo-cpu-s46/metrics.jsonl $R/           # [grpo-cpu-s47-seed1/metrics.jsonl]
# then SEED=0 STEPS=24 THREADS=1 and SEED=1 STEPS=17 THREADS=1 side by side. It resumes from its last checkpoint
# (one a step); rerun with a larger STEPS to go on. Seed 1 then went on alone to STEPS=21 (THREADS=2); its step-21
# checkpoint (with the optimizer) is kept here: copy it into runs/grpo-v17-s1/grpo/ with the warm start as above,
# metrics-seed1.jsonl after grpo-cpu-s47-seed1/metrics.jsonl, and config-seed1.yaml as the run's config.yaml.
SEED=${SEED:-0}
STEPS=${STEPS:-24}  # THREADS=1 runs two seeds side by side on the 2 cores
OMP_NUM_THREADS=${THREADS:-2} .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v17-s$SEED --resume -o seed=$SEED \
    -o grpo.use_cpu=true -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=30 -o grpo.max_steps=$STEPS -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 -o grpo.prefix_cache=true \
    -o "grpo.stop_anchor_counts={BU: 40, CC: 40, PI: 40, FSA: 40, PSS: 40}" -o grpo.stop_anchor_per_step=4 \
    -o grpo.stop_anchor_floor=0.9 \
    -o "data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
