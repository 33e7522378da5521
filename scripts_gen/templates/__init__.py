"""Per-family question templates: each module turns a seeded `random.Random` into one `Script` per call.

behavior (BU), movie (NC, PI), cooking (CC, CCQA), steps (FSA, PSS), assembly (PEA), uav (MSR, MOC); `layout` holds
what they share (timelines, lettered options). Vocabularies live as data next to the code that uses them.
"""
