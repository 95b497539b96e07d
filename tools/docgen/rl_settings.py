"""The settings one RL run reads, grouped by what they control (as TRL's ``GRPOConfig`` help
text groups its fields under "Parameters that control ..."), rendered from the dataclasses.

``docs/configuration.md`` lists every key file by file; this page takes the ones an RL run
(``training.rl``, ``training.loop.train_rl``) reads and sorts them into groups: the method, the
batch, the PPO loss, the KL and entropy, the rollouts, evaluation and the end policy,
checkpoints and the schedulers. The groups come from the explicit mappings below
(``RL_GROUPS``: each ``RLConfig`` field; ``TRAINING_GROUPS``: the other fields of the
``training`` block); ``tests/tools/test_docgen_rl_settings.py`` fails when a field has no
group, so a new setting cannot go unlisted, and when the committed page differs from a fresh
generation. Each row is the key's YAML path, its type, its default (the project's, as
``docs/configuration.md`` gives it) and its field docstring. From the project root::

    python -m tools.docgen.rl_settings > docs/rl_settings.md
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hindsight.config.files import file_settings
from hindsight.methods import method_class, method_names
from hindsight.params import NOT_A_KEY
from tools.docgen.fields import field_default, field_docs, prose_text, value_text

GROUPS = {
    "method": (
        "Parameters that control the method",
        "Which method the run trains with, where it starts, and each method's own settings "
        "([methods.md](methods.md); what each takes from its paper: [fidelity.md](fidelity.md)).",
    ),
    "batch": (
        "Parameters that control the batch",
        "How many updates, tasks and rollouts, and how a rollout batch is cut into optimizer "
        "steps and forward passes.",
    ),
    "loss": (
        "Parameters that control the PPO loss",
        "The advantage normalisation, the PPO clip, the loss aggregation and the optimizer step.",
    ),
    "regularisation": (
        "Parameters that control the KL and entropy",
        "The two terms that keep the policy near its reference and its distribution spread.",
    ),
    "rollouts": (
        "Parameters that control the rollouts",
        "How the policy is prompted and decodes when it plays (shared by every stage that plays, "
        "the file `parameters.yml`), and the weights the update's rollouts decode with.",
    ),
    "evaluation": (
        "Parameters that control evaluation and the end policy",
        "The held-out curve during training, which policy the run ends with, and whether the played "
        "actions are labelled optimal or not where the environment can (the mechanism figures).",
    ),
    "checkpoints": (
        "Parameters that control checkpoints",
        "Where and how often the run saves the state it resumes from.",
    ),
    "schedulers": (
        "Parameters that control the schedulers",
        "What chooses tasks, keeps groups, weighs samples, orders mini-batches and plays ahead "
        "([schedulers.md](schedulers.md)); every scheduler is off by default.",
    ),
}
"""Group key -> (its heading, the sentence under it); the page lists the groups in this order."""

RL_GROUPS = {
    "algorithm": "method",
    "methods": "method",
    "updates": "batch",
    "tasks_per_update": "batch",
    "group_size": "batch",
    "task_fraction": "batch",
    "ppo_epochs": "batch",
    "mini_batch_size": "batch",
    "micro_batch_tokens": "batch",
    "learning_rate": "loss",
    "ppo": "loss",
    "std_normalize": "loss",
    "max_grad_norm": "loss",
    "kl_coef": "regularisation",
    "entropy_coef": "regularisation",
    "rollout_weights": "rollouts",
    "eval_every": "evaluation",
    "end_policy": "evaluation",
    "action_labels": "evaluation",
    "checkpoint_every": "checkpoints",
    "schedulers": "schedulers",
}
"""Each field of ``RLConfig`` (``training.rl``) -> its group."""

TRAINING_GROUPS = {
    "start_from": "method",
    "tasks_per_game": "batch",
    "heldout": "evaluation",
    "checkpoint_root": "checkpoints",
    "rl": None,
}
"""Each field of the ``training`` block -> its group (``rl`` is split by ``RL_GROUPS``)."""

SHARED_GROUPS = {"rollout": "rollouts"}
"""The fields of ``parameters.yml``'s shared settings an RL run reads -> their group."""

HEADER = """# Settings of an RL run, by what they control

<!-- Generated from the settings dataclasses: do not edit. Regenerate with
`python -m tools.docgen.rl_settings > docs/rl_settings.md`; `tests/tools/test_docgen_rl_settings.py`
fails when this file and the code differ. -->

The settings one RL run (`kedro run --pipeline training`) reads, grouped by what they control:
the `training.rl` block (`RLConfig`) with its nested blocks, each method's and each
scheduler's own settings, the rest of the `training` block and the shared `rollout` settings.
Each entry gives the key's YAML path, its type, its default (the project's, as
`conf/base/` sets it) and what it does. The same keys, file by file, are in the
[configuration reference](configuration.md); override any of them with
`kedro run --params <key>=<value>`.
"""


def _code(text: str) -> str:
    """``text`` as a markdown code span (longer fences when it holds a backtick)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _type_name(field: dataclasses.Field) -> str:
    hint = field.type
    name = hint if isinstance(hint, str) else getattr(hint, "__name__", str(hint))
    return name.replace("typing.", "")


def _keys(cls: type) -> list[dataclasses.Field]:
    """The fields of ``cls`` that are keys of a parameters file."""
    return [
        field for field in dataclasses.fields(cls)
        if not field.name.startswith("_") and field.init and not field.metadata.get(NOT_A_KEY)
    ]


def _entry(key: str, type_name: str, default: str, doc: str) -> str:
    line = f"- {_code(key)} ({_code(type_name)}"
    if default:
        line += f", default {_code(default)}"
    return line + ")" + (f": {doc}" if doc else "")


def field_entries(cls: type, name: str, key: str, defaults: Any) -> list[str]:
    """The entry of field ``name`` of ``cls`` at YAML path ``key`` (``defaults``: the enclosing
    default instance), followed by the entries of its keys when it is a block of settings."""
    field = next(field for field in dataclasses.fields(cls) if field.name == name)
    default = getattr(defaults, name) if defaults is not None else field_default(field)
    doc = prose_text(field_docs(cls).get(name, ""))
    if dataclasses.is_dataclass(default) and not isinstance(default, type):
        lines = [_entry(key, _type_name(field), "", doc)]
        for inner in _keys(type(default)):
            lines += field_entries(type(default), inner.name, f"{key}.{inner.name}", default)
        return lines
    shown = "" if default is dataclasses.MISSING else value_text(default)
    lines = [_entry(key, _type_name(field), shown, doc)]
    if key == "training.rl.methods":
        lines += method_entries(key)
    return lines


def method_entries(prefix: str) -> list[str]:
    """Each built-in method's own settings (``<prefix>.<method>.<key>``), at their defaults."""
    lines = []
    for name in method_names():
        method = method_class(name)
        if not method.__module__.startswith("hindsight.methods."):
            continue
        settings = method.Settings
        for field in _keys(settings):
            lines += field_entries(settings, field.name, f"{prefix}.{name}.{field.name}", None)
    return lines


def grouped_entries() -> dict[str, list[str]]:
    """Group key -> the entries of its settings, in the order of the blocks and their fields."""
    settings = file_settings()
    _, shared_cls = settings["parameters.yml"]
    _, training_cls = settings["parameters_training.yml"]
    shared, training = shared_cls(), training_cls()
    grouped: dict[str, list[str]] = {group: [] for group in GROUPS}
    for name, group in SHARED_GROUPS.items():
        grouped[group] += field_entries(shared_cls, name, name, shared)
    for field in _keys(training_cls):
        group = TRAINING_GROUPS[field.name]
        if group is not None:
            grouped[group] += field_entries(training_cls, field.name, f"training.{field.name}", training)
    rl = training.rl
    for field in _keys(type(rl)):
        grouped[RL_GROUPS[field.name]] += field_entries(type(rl), field.name, f"training.rl.{field.name}", rl)
    return grouped


def render() -> str:
    """The page as markdown (``docs/rl_settings.md``)."""
    out = [HEADER]
    for group, entries in grouped_entries().items():
        heading, intro = GROUPS[group]
        out.append(f"## {heading}\n\n{intro}\n\n" + "\n".join(entries) + "\n")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
