"""The companion papers' training methods (issue 14), one file per method: AVATAR's TAS, replay, hints and
self-reward, GRPO-CARE, OmniJigsaw. Formulas are pure functions; the trainers override one TRL hook each."""
