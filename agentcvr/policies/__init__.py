"""Policies: OpenAI-compatible client, embedded GGUF, Hugging Face checkpoint, scripted expert, random."""
