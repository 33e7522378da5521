"""Semantic scripts: schema, seeded procedural generator, LLM augmentation and renderer."""
