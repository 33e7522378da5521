"""Per-family question templates: each module turns a seeded `random.Random` into one `Script` per call.

behavior (BU), movie (NC), plot (PI), cooking (CC, CCQA) and steps (FSA, PSS) on `recipes`, assembly (PEA),
uav (MSR, MOC); `layout` holds what they share (timelines, clips, lettered options). Vocabularies live as data next
to the code that uses them.
"""
