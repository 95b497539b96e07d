"""Kedro pipelines: one package per stage, each a thin pipeline.py over nodes.py."""
