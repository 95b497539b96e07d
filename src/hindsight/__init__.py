"""hindsight: train LLM agents on long multi-turn tasks with group-relative RL and
self-evolving on-policy distillation (SEED), as a Kedro project."""

__version__ = "0.1.0"
