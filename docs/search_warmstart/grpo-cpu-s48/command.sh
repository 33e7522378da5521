# session 48: the two anchored all-kinds runs, further: seed 0 from grpo-cpu-s46/checkpoint-18 to step 24, seed 1
# from its step-12 checkpoint to step 17 (stopped there for the session's time; grpo-cpu-s47-seed1 keeps that
# checkpoint without its optimizer: from a fresh folder, rerun seed 1 from the warm start). Each is its earlier
# command with a larger grpo.max_steps, run from there (set each run folder up as that command's comments say).
# train-sim now fixes glibc's mmap threshold itself (the runs here set MALLOC_MMAP_THRESHOLD_=131072).
# Adapters are not kept (seed 0's step 24 sha256 1858eb1e...0d2d, seed 1's step 17 55ce89e6...f770); the new steps'
# metrics are (metrics-seed0.jsonl: steps 19-24, after grpo-cpu-s46/metrics.jsonl; metrics-seed1.jsonl: steps 13-17,
# after grpo-cpu-s47-seed1/metrics.jsonl), with the seed-60 records (search_warmstart/s60-packed-*.jsonl.gz,
# llama.cpp over the Q8_0 base).
HERE=docs/search_warmstart
sed 's/grpo.max_steps=18 /grpo.max_steps=24 /' $HERE/grpo-cpu-s46/command.sh | bash                # seed 0
sed 's/grpo.max_steps=12 /grpo.max_steps=17 /' $HERE/grpo-cpu-s47-seed1/command.sh | bash         # seed 1
# The seed-60 table in the shipped runtime (pack-master writes the LoRA GGUF; 1 s each):
#   agentcvr pack-master runs/grpo-v15d/warmstart runs/packed/smol-v15
#   agentcvr pack-master runs/grpo-v15d/final runs/packed/s0-24      (final-12 for s0-12)
#   agentcvr pack-master runs/grpo-v15d-s1/final runs/packed/s1-17
#   for p in smol-v15 s0-12 s0-24 s1-17; do OMP_NUM_THREADS=1 .venv/bin/python benchmarks/master_choice.py \
#       --work runs/s60 --seed 60 --n 10 --policy trained:runs/packed/$p --max-turns 10 --threads 1; done
#   .venv/bin/python benchmarks/paired_masters.py runs/s60/sim/trained_runs_packed_smol-v15.jsonl \
#       runs/s60/sim/trained_runs_packed_s0-12.jsonl runs/s60/sim/trained_runs_packed_s0-24.jsonl \
#       runs/s60/sim/trained_runs_packed_s1-17.jsonl --plot docs/grpo_s60_paired.png
