# session 36: from smol-v14's warm start (copied to RUN/warmstart with the base, as in session 35), T=1.0 then 0.5:
#   mkdir -p runs/grpo-v14c && cp -r runs/smol-v14/base runs/smol-v14/warmstart runs/grpo-v14c/
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v14c --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=true -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=40 -o grpo.max_seconds=6000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 \
    -o "data.grpo_counts={BU: 0, NC: 0, CC: 0, PEA: 0, PI: 0, FSA: 0, PSS: 0, MSR: 0, CCQA: 0}"

# runs/grpo-v14f: the same with grpo.temperature=1.0 (and before the skip of rows without advantage)

# the next warm start, smol-v15 (MOC's search windows 30 s wide; resumable: the same command again):
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset cpu-learn -o "data.tasks=[BU,NC,CC,PEA,PI,FSA,PSS,MSR,MOC,CCQA]" \
    -o data.train_per_task=30 -o "data.train_counts={NC: 90, PI: 90, PSS: 240, MSR: 120, MOC: 90}" \
    -o data.heldout_per_task=2 -o agent.reader=scan-v2 -o eval.enabled=false -o agent.protocol=json \
    -o model.kind=pretrained -o model.name_or_path=gguf:smollm2-135m -o model.lora_rank=16 -o model.lora_alpha=32 \
    -o model.lora_top_layers=15 -o model.max_position_embeddings=8192 -o sft.learning_rate=0.001 \
    -o sft.answer_weight=1 -o sft.batch_size=1 -o sft.max_epochs=1 -o sft.warmup_steps=10 -o sft.max_length=6656 \
    -o sft.max_seconds=7000 -o grpo.max_steps=0 -o simulator.sampling=frames -o sft.teacher_frames=128 \
    -o sft.teacher=search -o sft.teacher_search_share=0.5 -o agent.max_observation_chars=2000 \
    --out runs/smol-v15 --resume
