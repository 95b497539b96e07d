"""Where an RL run's checkpoints live (``checkpoint.checkpoint_directory``): a fingerprint of
its settings and starting weights, the same whether the settings come as their dataclasses or
as the plain dicts ``params.as_dict`` gives, and the same as the one earlier runs were written
under (so a killed run restarted after this change still resumes)."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from hindsight.config import ProjectConfig, TrainingConfig
from hindsight.params import as_dict
from hindsight.training.checkpoint import checkpoint_directory, weights_fingerprint

pytestmark = pytest.mark.unit


def test_the_fingerprint_reads_the_settings_objects_as_their_plain_dicts(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    project, training = ProjectConfig(), TrainingConfig()
    plain = {"project": as_dict(project), "training": as_dict(training)}
    direct = checkpoint_directory(tmp_path, {"project": project, "training": training}, model)
    blob = json.dumps(plain, sort_keys=True, default=str) + weights_fingerprint(model)
    assert direct == checkpoint_directory(tmp_path, plain, model) == tmp_path / hashlib.sha1(blob.encode()).hexdigest()[:12]
    changed = TrainingConfig(checkpoint_root="elsewhere")
    assert checkpoint_directory(tmp_path, {"project": project, "training": changed}, model) != direct
