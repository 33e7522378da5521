# session 39: session 37's GRPO from smol-v15's warm start with the stop after the search anchored
# (grpo.stop_anchor=1: the search teacher's answer after its looks, its mean negative log-likelihood beside the step's
# GRPO loss), two updates, to compare with session 37's first two (no anchor).
#   mkdir -p runs/grpo-v15c && cp -r runs/smol-v15/base runs/smol-v15/warmstart runs/grpo-v15c/
# Resumable: the same command again goes on from the last checkpoint (one a step). Run once with max_steps=2, then
# with max_steps=3 after `mv runs/grpo-v15c/final runs/grpo-v15c/final-2` (a finished run's final/ is reused as is).
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15c --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=true -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=2 -o grpo.max_seconds=9000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 \
    -o "data.grpo_counts={BU: 0, NC: 0, CC: 0, PEA: 0, PI: 0, FSA: 0, PSS: 0, MSR: 0, CCQA: 0}"

# then, with training stopped:
#   agentcvr merge-checkpoint runs/grpo-v15c/grpo/checkpoint-N        # -> runs/grpo-v15c/merged-N (N = 2, 3)
OMP_NUM_THREADS=2 .venv/bin/python benchmarks/plan_odds.py --warm-start runs/grpo-v15c/merged-2 \
    --scripts runs/seed48-search.jsonl --task MOC --temperature 1.0 --max-turns 10
