"""Task kinds: answer formats, scorers, rewards and prompts."""

from agentcvr.tasks.registry import AGGREGATES, TASK_ORDER, TASKS, TaskSpec, get_task

__all__ = ["AGGREGATES", "TASK_ORDER", "TASKS", "TaskSpec", "get_task"]
