"""Text simulators that stand in for the visual and audio agents during training."""
