# session 35: from smol-v14's warm start (search_warmstart/smol-v14-warmstart/, copied to RUN/warmstart with the base):
#   mkdir -p runs/grpo-v14t && cp -r runs/smol-v14/base runs/smol-v14/warmstart runs/grpo-v14t/
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v14t --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=1.0 -o grpo.learning_rate=2e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=4 -o grpo.prompts_per_step=4 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=true -o grpo.save_steps=1 \
    -o grpo.save_total_limit=10 -o grpo.max_steps=40 -o grpo.max_seconds=9000 -o reward.dense=true \
    -o reward.evidence=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 \
    -o "data.grpo_counts={BU: 0, NC: 0, CC: 0, PEA: 0, PI: 0, FSA: 0, PSS: 0, MSR: 0, CCQA: 0}"
