# session 38: session 37's GRPO branched from its checkpoint-2 (P(search) on MOC 33.5 %, the stop after it 84.4 %),
# with a cost of 0.1 for every turn after the first (`reward.turn_cost`): of rollouts equally right, the one that
# stopped looking sooner wins, so a repeated search must earn its turn. Everything else as session 37's command.
#   mkdir -p runs/grpo-v15b && cp -r runs/grpo-v15a/base runs/grpo-v15b/base
#   cp -r runs/grpo-v15a/merged-2 runs/grpo-v15b/warmstart    # agentcvr merge-checkpoint runs/grpo-v15a/grpo/checkpoint-2
# Resumable: the same command again goes on from the last checkpoint (one a step).
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15b --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=true -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=40 -o grpo.max_seconds=9000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o reward.turn_cost=0.1 -o data.grpo_prompts=plans_differ \
    -o grpo.forced_search_share=0.5 -o grpo.trained_tokens=decisions -o agent.max_turns=10 \
    -o "data.grpo_counts={BU: 0, NC: 0, CC: 0, PEA: 0, PI: 0, FSA: 0, PSS: 0, MSR: 0, CCQA: 0}"

# the odds after each checkpoint (seed 48's MOC scripts: see benchmarks/plan_odds.py --help for how they are made):
#   agentcvr merge-checkpoint runs/grpo-v15b/grpo/checkpoint-N        # -> runs/grpo-v15b/merged-N
OMP_NUM_THREADS=1 .venv/bin/python benchmarks/plan_odds.py --warm-start runs/grpo-v15b/merged-1 \
    --scripts runs/seed48-search.jsonl --task MOC --temperature 1.0 --max-turns 10
