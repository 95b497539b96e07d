"""Kedro pipelines: one package per stage (ingestion, behaviour_cloning, skills, stage1,
training, evaluation; scoring and experiments), each a thin ``pipeline.py`` over ``nodes.py``
(Kedro's layout: every stage package has the two, hence the repeated names), and
``settings_nodes`` (the nodes that turn parameter blocks into typed settings). The registry
(``hindsight.pipeline_registry``) composes them."""
