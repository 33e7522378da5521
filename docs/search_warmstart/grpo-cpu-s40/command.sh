# session 40: the fourth anchored update of session 39's run (runs/grpo-v15c; its config is
# docs/search_warmstart/grpo-cpu-s39/config.yaml), by the same command with grpo.max_steps=4. No folder is moved by
# hand now: the finished final/ (step 3) is kept as final-3/ and GRPO goes on from grpo/checkpoint-3 (train.log:
# "GRPO: final/ stopped at step 3 of 4: kept as final-3/; going on from the last checkpoint").
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15c --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=true -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=4 -o grpo.max_seconds=9000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 \
    -o "data.grpo_counts={BU: 0, NC: 0, CC: 0, PEA: 0, PI: 0, FSA: 0, PSS: 0, MSR: 0, CCQA: 0}"

# then, with training stopped:
#   agentcvr merge-checkpoint runs/grpo-v15c/grpo/checkpoint-4        # -> runs/grpo-v15c/merged-4
OMP_NUM_THREADS=2 .venv/bin/python benchmarks/plan_odds.py --warm-start runs/grpo-v15c/merged-4 \
    --scripts runs/seed48-search.jsonl --task MOC --temperature 1.0 --max-turns 10
# greedy, MOC, seed 50 (10 episodes) and the fresh seed 51 (20), each policy the same way:
#   benchmarks/master_choice.py --work runs/moc51 --seed 51 --n 20 --task MOC --policy trained:FOLDER --max-turns 10
#   benchmarks/paired_masters.py runs/moc51/sim/trained_runs_smol-v15_warmstart.jsonl \
#       runs/moc51/sim/trained_runs_grpo-v15c_merged-4.jsonl
