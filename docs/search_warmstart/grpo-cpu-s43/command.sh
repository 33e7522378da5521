# session 43: session 42's all-kinds anchored recipe (grpo-cpu-s42/command.sh), with each rollout turn sampled over the
# key-value cache of the longest prefix run before (grpo.prefix_cache: train/rollout.py `PrefixCacheSampler`) and the
# stop anchor's pass run once a step for each of the batch's episodes. Same run folder: session 42's command resumes
# into it (a resume may switch the prefix cache on: the same samples).
#   mkdir -p runs/grpo-v15d/warmstart && cp -r docs/search_warmstart/smol-v15-warmstart/* runs/grpo-v15d/warmstart/
# Resumable: the same command again goes on from the last checkpoint (one a step). Session 43 stopped it after step 3
# and kept that checkpoint here (adapter, optimizer, scheduler, RNG, trainer state; metrics.jsonl its three rows):
#   mkdir -p runs/grpo-v15d/grpo && git archive 7e00d8a docs/search_warmstart/grpo-cpu-s43/checkpoint-3 | tar -x -C /tmp \
#     && cp -r /tmp/docs/search_warmstart/grpo-cpu-s43/checkpoint-3 runs/grpo-v15d/grpo/
# (session 46 went on to step 18 and keeps that checkpoint instead: grpo-cpu-s46/command.sh)
#   cp docs/search_warmstart/grpo-cpu-s43/metrics.jsonl runs/grpo-v15d/
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15d --resume -o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_steps=12 -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 -o grpo.prefix_cache=true \
    -o "data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
