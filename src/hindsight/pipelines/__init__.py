"""Kedro pipelines: one package per stage (ingestion, behaviour_cloning, skills, stage1,
training, evaluation; scoring and experiments), each a thin pipeline.py over nodes.py, and
``settings`` (the nodes that turn parameter blocks into typed settings). The registry
(``hindsight.pipeline_registry``) composes them."""
