"""Every checkpoint a run saves as an MLflow model of that run.

Two ways, by cost. The final policies (``LOGGED_POLICIES``: RL, EMPO) are logged whole, so
that ``models:/<id>`` loads them from MLflow alone (below). Every other checkpoint the
catalog saves (a ``ModelDirectoryDataset``: the base, Stage-1 SFT, Stage-1, State2State and
pretrained policies, the world model) is logged as an *external* MLflow 3 model
(``mlflow.create_external_model``) pointing at its versioned directory: a ``LoggedModel``
of the run (source run, tags ``hindsight.dataset`` / ``hindsight.version`` /
``hindsight.path``, a run output at the checkpoint's step) that copies no weights; MLflow
writes only its small ``MLmodel`` stub (``log_checkpoint_reference``).

A final policy, saved by the catalog as an ordinary HF directory, is also logged by
``log_policy_model`` with MLflow's transformers flavour
(``mlflow.transformers.log_model``, an MLflow 3 ``LoggedModel``): the model's source run is
the active run, and the run's metrics at ``step`` (the final RL update) are linked to it, so
the MLflow UI leads from a metric of the run to the weights that produced it, and back.

It logs the in-memory model and tokenizer (MLflow 3.17's "local checkpoint" route fails
with transformers 5: ``build_flavor_config_from_local_checkpoint`` reads the task registry
in its transformers-4 shape). Offline by construction: an explicit model card (none is
fetched from the hub), explicit pip requirements (no inference subprocess that reloads the
model); the licence look-up MLflow always attempts is given the model's local path as
repository id, which fails validation before any request, and MLflow writes its generic
``LICENSE.txt`` note. A LoRA policy is logged as its adapter with ``base_model_path``
pointing at the local base directory (the base weights are referenced, not copied).

``load_logged_policy(model_uri)`` reads one back as a ``hindsight.policy.Policy`` with the
project's own loader (its tokenizer class as saved, not the one ``AutoTokenizer`` picks).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hindsight.policy import Policy

logger = logging.getLogger(__name__)

LOGGED_POLICIES = ("rl_policy", "empo_policy")
"""Catalog datasets whose saved policy is logged whole as an MLflow model: the final
policies (RL, EMPO). Every other checkpoint is logged as a reference to its versioned
directory (``log_checkpoint_reference``)."""
CHECKPOINT_MODEL_TYPE = "hindsight-checkpoint"
"""``model_type`` of a checkpoint logged by reference."""

TASK = "text-generation"
REQUIREMENT_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors")
MODEL_CARD = """---
library_name: transformers
pipeline_tag: text-generation
tags: [hindsight, reinforcement-learning, text-games]
---
# {name}

A policy trained by the `hindsight` project (`{name}`, {steps} update(s)). Its training
metrics, parameters and data versions are those of the MLflow run that logged it (the
model's source run). Prompts follow the project's prompt template
(`hindsight.policy.prompts`).
"""


@dataclass
class LoggedPolicy:
    """What ``log_policy_model`` logged."""

    model_id: str
    """The MLflow ``LoggedModel`` id."""
    model_uri: str
    """``models:/<model_id>``: what ``load_logged_policy`` and the MLflow UI take."""
    run_id: str
    """The source run."""
    seconds: float
    """Wall time of the logging."""


def pip_requirements(adapter: bool = False) -> list[str]:
    """Exact pins of the installed packages a logged policy needs (no inference subprocess)."""
    packages = REQUIREMENT_PACKAGES + (("peft",) if adapter else ())
    pins = []
    for package in packages:
        try:
            pins.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            pins.append(package)
    return pins


def _model_card(name: str, steps: int):
    from huggingface_hub import ModelCard

    return ModelCard(MODEL_CARD.format(name=name, steps=steps))


def log_policy_model(policy: Policy, name: str, step: int = 0) -> LoggedPolicy | None:
    """Log ``policy`` (model + tokenizer) as an MLflow model of the active run.

    Args:
        policy: The ``hindsight.policy.Policy`` the catalog just saved.
        name: The model's name in MLflow (the catalog dataset, e.g. ``rl_policy``).
        step: The run's step of the final metrics (the number of RL updates): the run's
            metrics at that step are linked to the model.

    Returns:
        The logged model's id, URI and source run; None when no MLflow run is active.
    """
    import mlflow

    run = mlflow.active_run()
    if run is None:
        return None
    started = time.perf_counter()
    extra = {}
    if getattr(policy, "is_lora", False):
        base = policy.model.peft_config["default"].base_model_name_or_path
        extra["base_model_path"] = str(base)
    info = mlflow.transformers.log_model(
        transformers_model={"model": policy.model, "tokenizer": policy.tokenizer},
        task=TASK, name=name, step=int(step), model_card=_model_card(name, step),
        pip_requirements=pip_requirements(adapter=bool(extra)),
        metadata={"hindsight.dataset": name, "hindsight.updates": int(step)},
        **extra,
    )
    seconds = time.perf_counter() - started
    logger.info("Logged %s as MLflow model %s (run %s) in %.1fs", name, info.model_id, run.info.run_id, seconds)
    return LoggedPolicy(model_id=info.model_id, model_uri=f"models:/{info.model_id}", run_id=run.info.run_id, seconds=seconds)


def log_checkpoint_reference(name: str, directory: Path, version: str | None, step: int = 0) -> LoggedPolicy | None:
    """Log a saved checkpoint as an external MLflow model of the active run: its weights stay
    in the catalog's versioned directory, which the model's tags name.

    Args:
        name: The catalog dataset (the model's name in MLflow, e.g. ``base_policy``).
        directory: The version's directory (``data/06_models/<name>/<version>/<name>``).
        version: The Kedro version of the checkpoint.
        step: The run's step the checkpoint belongs to (its number of updates).

    Returns:
        The logged model's id and source run; None when no MLflow run is active.
    """
    import mlflow
    from mlflow.entities import LoggedModelOutput

    run = mlflow.active_run()
    if run is None:
        return None
    started = time.perf_counter()
    tags = {"hindsight.dataset": name, "hindsight.path": str(Path(directory).absolute())}
    if version:
        tags["hindsight.version"] = version
    model = mlflow.create_external_model(
        name=name, source_run_id=run.info.run_id, tags=tags, model_type=CHECKPOINT_MODEL_TYPE,
        params={"hindsight.updates": str(int(step))},
    )
    mlflow.log_outputs(models=[LoggedModelOutput(model_id=model.model_id, step=int(step))])
    seconds = time.perf_counter() - started
    logger.info("Logged %s (version %s) as external MLflow model %s in %.2fs", name, version, model.model_id, seconds)
    return LoggedPolicy(model_id=model.model_id, model_uri=f"models:/{model.model_id}", run_id=run.info.run_id, seconds=seconds)


def load_logged_policy(model_uri: str, device: str | None = "cpu"):
    """A logged policy back as a ``hindsight.policy.Policy``, offline.

    Args:
        model_uri: ``models:/<model_id>`` (``LoggedPolicy.model_uri``) or any MLflow model URI.
        device: Where to put the model (None: CUDA when available).

    Returns:
        The policy, its ``version`` the logged number of updates.
    """
    import mlflow

    from hindsight.policy.model import Policy, load_policy

    local = Path(mlflow.artifacts.download_artifacts(model_uri))
    metadata = mlflow.models.Model.load(str(local / "MLmodel")).metadata or {}
    if (local / "model" / "config.json").is_file():
        with tempfile.TemporaryDirectory(prefix="logged_policy_") as tmp:
            merged = Path(tmp) / "policy"  # the weights and the tokenizer in one HF directory
            shutil.copytree(local / "model", merged)
            shutil.copytree(local / "components" / "tokenizer", merged, dirs_exist_ok=True)
            policy = load_policy(merged, device=device)
    else:  # a LoRA adapter over a referenced base directory
        components = mlflow.transformers.load_model(str(local), return_type="components")
        policy = Policy(model=components["model"], tokenizer=components["tokenizer"])
    policy.version = int(metadata.get("hindsight.updates", 0))
    return policy
