"""CrossVid end to end: load the official layout, predict (agent or single-pass), score officially and strictly, report.

agentcvr eval crossvid --root /data/CrossVid --mode agent --policy gguf --out runs/cv.jsonl
agentcvr eval report runs/cv.jsonl runs/other.jsonl
"""
