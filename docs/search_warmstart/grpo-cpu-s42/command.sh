# session 42: the anchored recipe (sessions 39-40) on every kind whose plans can differ, from smol-v15's warm start
# rebuilt in sessions 41-42 (its adapter: docs/search_warmstart/smol-v15-warmstart/), after the MSR/CCQA matcher mend
# (session 41) made the search worth about +7 points over the scan across ten kinds.
# The update's passes project only the tokens the loss reads (train/grpo.py `scored_logps`) and run without gradient
# checkpointing (micro-batches of one rollout: benchmarks/grpo_update_cost.py).
#   mkdir -p runs/grpo-v15d && cp -r runs/smol-v15/base runs/smol-v15/warmstart runs/grpo-v15d/
# or, on a machine without runs/smol-v15, from the repository (train-sim --resume rebuilds the merged weights):
#   mkdir -p runs/grpo-v15d/warmstart && cp -r docs/search_warmstart/smol-v15-warmstart/* runs/grpo-v15d/warmstart/
# Resumable: the same command again goes on from the last checkpoint (one a step); a larger grpo.max_steps goes on
# from a finished run.
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15d --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=8 -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 \
    -o "data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
