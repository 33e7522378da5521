# session 47: the second GRPO seed of the anchored all-kinds recipe. grpo-cpu-s46/command.sh's command but for
# `-o seed=1` (TRL's seed: the order the GRPO prompts are drawn in and the sampling draws), a new run folder and
# grpo.max_steps=12, from the same warm start (smol-v15):
#   mkdir -p runs/grpo-v15d-s1/warmstart && cp -r docs/search_warmstart/smol-v15-warmstart/* runs/grpo-v15d-s1/warmstart/
# Its 12 steps took 51 minutes (75-493 s a step; one restart: the first try was killed for memory in step 8; it
# resumed from checkpoint-7 once the prefix cache's kept caches were views, docs/gpu_grpo.md session 47). checkpoint-12 is kept here without its
# optimizer (19 MB);
# the policy of the seed-60 table is made in the run folder (merging builds the run's base model there):
#   mkdir -p runs/grpo-v15d-s1/grpo && cp -r docs/search_warmstart/grpo-cpu-s47-seed1/checkpoint-12 runs/grpo-v15d-s1/grpo/
#   cp docs/search_warmstart/grpo-cpu-s47-seed1/config.yaml runs/grpo-v15d-s1/
#   agentcvr merge-checkpoint runs/grpo-v15d-s1/grpo/checkpoint-12
# To go on past step 12, rerun this command from the start with a larger grpo.max_steps.
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15d-s1 --resume -o seed=1 -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=12 -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 -o grpo.prefix_cache=true \
    -o "data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
