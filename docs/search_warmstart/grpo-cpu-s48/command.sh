# session 48: the two anchored all-kinds runs, further. Seed 0 from grpo-cpu-s46/checkpoint-18 to step 24, seed 1
# from its step-12 checkpoint to step 17 (stopped there for the session's time; grpo-cpu-s47-seed1 keeps that checkpoint without its optimizer: from a
# fresh folder, rerun seed 1 from the warm start). The commands are the sessions' before, with a larger
# grpo.max_steps; train-sim now fixes glibc's mmap threshold itself (the runs here set MALLOC_MMAP_THRESHOLD_=131072).
# Adapters are not kept (seed 0's step 24 sha256 1858eb1e...0d2d, seed 1's step 17 55ce89e6...f770); every step's metrics are,
# with the seed-60 records (search_warmstart/s60-packed-*.jsonl.gz, llama.cpp over the Q8_0 base).
#   seed 0: set up runs/grpo-v15d as grpo-cpu-s46/command.sh says, then
GRPO="-o grpo.use_cpu=true \
    -o eval.device=cpu -o eval.enabled=false -o sft.teacher=search -o sft.max_length=6656 \
    -o grpo.max_completion_length=6656 -o grpo.temperature=0.5 -o grpo.learning_rate=1e-4 -o grpo.num_iterations=1 \
    -o grpo.beta=0 -o grpo.scale_rewards=none -o grpo.num_generations=8 -o grpo.prompts_per_step=2 \
    -o grpo.gradient_accumulation_steps=16 -o grpo.gradient_checkpointing=false -o grpo.save_steps=1 \
    -o grpo.save_total_limit=20 -o grpo.max_seconds=20000 -o reward.dense=true \
    -o reward.evidence=0 -o reward.format_bonus=0 -o data.grpo_prompts=plans_differ -o grpo.forced_search_share=0.5 \
    -o grpo.trained_tokens=decisions -o agent.max_turns=10 -o grpo.stop_anchor=1.0 -o grpo.prefix_cache=true"
COUNTS="data.grpo_counts={BU: 0, CC: 0, PI: 0, PSS: 0, FSA: 0, NC: 450, PEA: 450, MSR: 150, MOC: 250, CCQA: 50}"
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15d --resume $GRPO \
    -o grpo.max_steps=24 -o "$COUNTS"
#   seed 1: set up runs/grpo-v15d-s1 as grpo-cpu-s47-seed1/command.sh says, then
OMP_NUM_THREADS=2 .venv/bin/agentcvr train-sim --preset gpu-looker --out runs/grpo-v15d-s1 --resume -o seed=1 $GRPO \
    -o grpo.max_steps=17 -o "$COUNTS"
# The seed-60 table in the shipped runtime (pack-master writes the LoRA GGUF; 1 s each):
#   agentcvr pack-master runs/grpo-v15d/warmstart runs/packed/smol-v15
#   agentcvr pack-master runs/grpo-v15d/final runs/packed/s0-24      (final-12 for s0-12)
#   agentcvr pack-master runs/grpo-v15d-s1/final runs/packed/s1-17   (final-12 for s1-12)
#   for p in smol-v15 s0-12 s0-24 s1-12 s1-17; do OMP_NUM_THREADS=1 .venv/bin/python benchmarks/master_choice.py \
#       --work runs/s60 --seed 60 --n 10 --policy trained:runs/packed/$p --max-turns 10 --threads 1; done
#   .venv/bin/python benchmarks/paired_masters.py runs/s60/sim/trained_runs_packed_smol-v15.jsonl \
#       runs/s60/sim/trained_runs_packed_s0-12.jsonl runs/s60/sim/trained_runs_packed_s0-24.jsonl \
#       runs/s60/sim/trained_runs_packed_s1-12.jsonl runs/s60/sim/trained_runs_packed_s1-17.jsonl --plot docs/grpo_s60_paired.png
