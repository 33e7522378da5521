"""AgentCVR: agentic cross-video reasoning.

A master LLM agent answers questions over several videos by calling a visual agent (`observe`) and an audio agent
(`listen`) on chosen videos and intervals. See README.md for the quick start.
"""

__version__ = "0.1.0"
