"""Published CrossVid results (%), for reports to set our runs beside.

Per-task rows: AgentCVR paper (seed 004), Table 1 (BU NC CC PEA C.Avg PI FSA PSS T.Avg MSR MOC M.Avg CCQA O.Avg).
Gemini-2.5-Pro's O.Avg is 49.63 in that table and 50.4 in the CrossVid README (see shared/notes/crossvid.md).
"""

from __future__ import annotations

COLUMNS = ["BU", "NC", "CC", "PEA", "C.Avg", "PI", "FSA", "PSS", "T.Avg", "MSR", "MOC", "M.Avg", "CCQA", "O.Avg"]

_ROWS = """
Human               85.60 92.30 90.70 83.90 88.13 91.60 85.20 89.90 88.90 93.20 94.20 93.70 85.20 89.18
Doubao-1.5-VL-pro   51.20 58.10 69.50 36.40 53.80 66.90  4.60 36.80 36.10 37.40 32.00 34.70 50.10 44.30
GPT-4.1             46.20 34.60 58.50 51.20 47.63 70.90  8.60 60.50 46.67 38.60 38.20 38.40 44.60 45.19
Gemini-2.5-Pro      54.20 51.80 68.70 36.40 52.78 76.50 13.40 78.20 56.03 32.00 25.30 28.65 59.80 49.63
Qwen3-VL-4B         17.93 21.47 26.62 28.61 23.66 49.89  3.13  2.97 18.66 24.94 28.71 26.83 11.59 21.59
Qwen3-VL-8B         23.48 27.35 40.72 34.94 31.60 62.54  5.71  7.22 25.16 34.51 27.15 30.83 31.18 29.47
Qwen2.5-VL-32B      31.40 30.50 48.60 39.70 38.30 65.70  5.20  8.70 26.53 23.70 39.60 31.65 41.20 33.78
Qwen3-VL-32B        46.75 37.50 59.54 39.77 45.89 73.00  4.70  7.50 28.40 26.62 36.56 31.59 47.51 38.37
VideoAgent-8B       24.31 31.42 42.16 31.73 32.41 67.20  5.93 17.10 30.08 32.70 28.50 30.60 30.65 30.01
VCA-8B              27.50 30.80 39.20 32.80 32.53 64.60  8.30 21.60 31.50 34.40 26.90 30.65 33.60 30.71
AgentCVR-4B         26.41 38.71 51.66 32.61 35.35 62.31 12.31 19.42 31.35 28.32 31.43 29.88 26.43 32.06
AgentCVR-8B         33.88 43.65 70.71 41.23 47.35 67.43 16.63 30.41 38.68 37.18 33.20 35.19 41.85 42.03
"""

PUBLISHED: dict[str, dict[str, float]] = {
    line.split()[0]: dict(zip(COLUMNS, map(float, line.split()[1:]), strict=True))
    for line in _ROWS.strip().splitlines()
}
