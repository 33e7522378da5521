# sessions 50-51: session 46's anchored all-kinds recipe (grpo-cpu-s46/command.sh) plus the stop after the scan on
# further episodes of the kinds GRPO does not prompt (session 49's grpo.stop_anchor_counts, 4 a step) as a hinge under
# p=0.9 (grpo.stop_anchor_floor): zero while that stop holds, so it acts only where the search GRPO rewards spreads
# (session 48: seed 0 from 18 to 24 updates won 7 episodes and lost 3 on BU, CC and PEA). Each seed goes on from the
# checkpoint session 48 went on from, to the step session 48 reached, so the two are paired update for update (the
# same prompts in the same order; TRL's seed draws them): seed 0 from grpo-cpu-s46/checkpoint-18 to 24, seed 1 from
# grpo-cpu-s47-seed1/checkpoint-12 to 17 (that checkpoint was kept without its optimizer: Adam starts afresh at
# step 13, where session 48's seed 1 went on with its moments). Set a run folder up (seed 1 in brackets):
#   R=runs/grpo-v17-s$SEED; mkdir -p $R/warmstart $R/grpo
#   cp -r docs/search_warmstart/smol-v15-warmstart/* $R/warmstart/
#   cp -r docs/search_warmstart/grpo-cpu-s46/checkpoint-18 $R/grpo/   # [grpo-cpu-s47-seed1/checkpoint-12]
#   cp docs/search_warmstart/grpo-cpu-s46/metrics.jsonl $R/           # [grpo-cpu-s47-seed1/metrics.jsonl]
# then SEED=0 STEPS=24 THREADS=1 and SEED=1 STEPS=17 THREADS=1 side by side. It resumes from its last checkpoint
# (one a step); rerun with a larger STEPS to go on. Seed 1 then went on alone to STEPS=21 (THREADS=2); its step-21
# checkpoint (with the optimizer) is kept here: copy it into runs/grpo-v17-s1/grpo/ with the warm start as above,
# metrics-seed1.jsonl after grpo-cpu-s47-seed1/metrics.jsonl, and config-seed1.yaml as the run's config.yaml.
# Session 49's command (grpo-cpu-s49/command.sh) with its own run folder, 24 steps by default and the floor:
HERE=docs/search_warmstart
sed -e 's|runs/grpo-v16-s|runs/grpo-v17-s|' -e 's|STEPS:-12|STEPS:-24|' \
    -e 's|grpo.stop_anchor_per_step=4 |grpo.stop_anchor_per_step=4 -o grpo.stop_anchor_floor=0.9 |' \
    $HERE/grpo-cpu-s49/command.sh | bash
