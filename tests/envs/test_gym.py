"""Every environment as a Gymnasium env (``gym_wrapper``): each registered id passes
``gymnasium.utils.env_checker.check_env`` on the real simulator (with its default arguments,
or refuses them with an ``EnvironmentConfigError`` naming what it needs), the spaces' charset covers
what the games print, and the task mapping matches the project's folds and seeds; a wrapped
environment comes back through ``gym_adapter`` unchanged."""

from __future__ import annotations

import importlib.util
import shutil

import gymnasium
import pandas as pd
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import hindsight.envs  # noqa: F401  (registers the ids)
from hindsight.data.expert import play_gold_episode
from hindsight.envs import EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.envs.gym_ids import MINIWOB_GYM_TASKS, TWX_GAMES, builtin_gym_ids, register_gym_env
from hindsight.envs.miniwob.tasks import MISSING_ACTIONS, REAL_TIME_TASKS, task_names
from hindsight.envs.gym_wrapper import REPLACEMENT_CHAR, TEXT_CHARSET, fold_size
from hindsight.envs.textworldexpress import GAME_PARAMETERS
from hindsight.skills.skill_bank import skill_bank_from_table
from hindsight.envs.base import ToyEnvironment

pytestmark = pytest.mark.filterwarnings("ignore:Game .* is not fully supported")

TWC = EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 1, "includeDoors": 0}, max_steps=8)


def checked(env_id: str, **kwargs) -> gymnasium.Env:
    env = gymnasium.make(env_id, **kwargs)
    check_env(env.unwrapped)
    return env


def test_every_textworldexpress_game_has_an_id():
    assert set(TWX_GAMES) == set(GAME_PARAMETERS)
    ids = set(gymnasium.registry)
    for env_id in [f"hindsight/twx-{game}-v0" for game in TWX_GAMES] + [
        "hindsight/scienceworld-v0", "hindsight/textworld-v0", "hindsight/alfworld-v0",
        "hindsight/expert-replay-v0", "hindsight/world-model-v0",
    ]:
        assert env_id in ids


@pytest.mark.parametrize("game", TWX_GAMES)
def test_textworldexpress_ids_pass_check_env(game):
    env = checked(f"hindsight/twx-{game}-v0")
    observation, info = env.reset(seed=7, options={"split": "dev"})
    assert info["split"] == "dev" and info["task_seed"] == 10007  # the 7th dev seed
    assert isinstance(info["valid_actions"], list) and info["task"]
    assert observation in env.observation_space
    env.close()


def test_reset_seed_is_the_projects_task_position_and_task_seed_overrides():
    env = gymnasium.make("hindsight/twx-twc-v0", params=dict(TWC.params), max_steps=TWC.max_steps)
    project = make_env(TWC)
    for split, position in (("train", 3), ("test", 998)):
        task_seed = project.seeds(split, 1, position)[0]
        expected, info = project.reset(task_seed, split)
        observation, gym_info = env.reset(seed=position, options={"split": split})
        assert observation == expected and gym_info["task"] == info["task"] and gym_info["task_seed"] == task_seed
    assert env.reset(seed=1003, options={"split": "train"})[1]["task_seed"] == 3  # modulo the fold's 1000 tasks
    assert env.reset(options={"split": "dev", "task_seed": 10042})[1]["task_seed"] == 10042
    with pytest.raises(EnvironmentConfigError, match="Unknown reset option"):
        env.reset(options={"fold": "dev"})
    env.close()


def test_gold_episode_through_gym_wins_and_every_observation_is_in_the_space():
    env = gymnasium.make("hindsight/twx-cookingworld-v0")
    for position in range(5):
        observation, info = env.reset(seed=position)
        assert observation in env.observation_space and not info["observation_replaced"]
        for action in env.unwrapped.gold_actions():
            observation, reward, terminated, truncated, info = env.step(action)
            assert observation in env.observation_space and not info["observation_replaced"]
        assert info["won"] and terminated and reward == 10.0
    env.close()


def test_characters_outside_the_charset_are_replaced_and_long_observations_cut():
    class Echo(ToyEnvironment):
        spec = EnvironmentSpec("echo", "echo")

        def reset(self, seed, split="train"):
            return "snow \u2603 " + "x" * 50, {}

        def step(self, action):
            return action, 0.0, False, False, {}


    register_gym_env("test/echo-v0", lambda max_observation_length=20: hindsight.envs.gym_wrapper.wrap_as_gym(Echo(), max_observation_length))
    env = gymnasium.make("test/echo-v0")
    observation, info = env.reset(seed=0)
    assert observation == "snow " + REPLACEMENT_CHAR + " " + "x" * 13 and info["observation_replaced"]
    assert observation in env.observation_space and "\u2603" not in TEXT_CHARSET
    assert env.step("plain")[0] == "plain" and not env.step("plain")[4]["observation_replaced"]


def test_fold_size_bisects_the_seed_window():
    class Folds:
        def seeds(self, split, count, offset=0):
            available = {"train": 37, "dev": 0, "test": 1}[split]
            if offset + count > available:
                raise EnvironmentConfigError("too many")
            return list(range(offset, offset + count))

    assert [fold_size(Folds(), split) for split in ("train", "dev", "test")] == [37, 0, 1]


def test_a_wrapped_environment_comes_back_through_the_gym_family():
    spec = EnvironmentSpec("gym", "hindsight/twx-twc-v0", {"params": dict(TWC.params), "max_steps": 8}, max_steps=8)
    through_gym, direct = make_env(spec), make_env(TWC)
    assert through_gym.seeds("dev", 2, 5) == [5, 6]
    observation, info = through_gym.reset(5, "dev")
    expected, expected_info = direct.reset(direct.seeds("dev", 1, 5)[0], "dev")
    assert observation == expected and info["valid_actions"] == expected_info["valid_actions"]
    gold = through_gym.gold_actions()
    assert gold == direct.gold_actions()
    for action in gold:
        result = through_gym.step(action)
    assert result[4]["won"] and result[2] and result[1] == 10.0
    through_gym.close()


def test_scienceworld_id_passes_check_env():
    env = checked("hindsight/scienceworld-v0", params={"simplification": "easy"})
    observation, info = env.reset(seed=0, options={"split": "test"})
    assert info["task"].startswith("Your task is to find a(n) animal") and observation in env.observation_space
    for action in env.unwrapped.gold_actions():  # every text the simulator prints lies in the charset
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation in env.observation_space and not info["observation_replaced"]
    assert info["won"] and terminated
    env.close()


def test_dual_control_id_passes_check_env_and_its_gold_episode_wins():
    from hindsight.envs.dual_control import analysis

    env = checked("hindsight/dual-control-telecom-v0")
    observation, info = env.reset(seed=3, options={"split": "test"})
    assert observation in env.observation_space and "declare infeasible" not in info["valid_actions"]
    assert "score" not in info  # the agent gets no dense score, and no gold (the analysis interface has it)
    with pytest.raises(PermissionError, match="analysis interface"):
        env.unwrapped.gold_actions()
    for action in analysis.gold_actions("test", info["task_seed"]):
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation in env.observation_space and not info["observation_replaced"]
    assert info["won"] and terminated and reward > 0
    env.close()


def test_textworld_id_passes_check_env(tmp_path):
    params = {"world_size": 1, "nb_objects": 3, "quest_length": 2, "cache_dir": str(tmp_path)}
    checked("hindsight/textworld-v0", params=params).close()


@pytest.mark.skipif(importlib.util.find_spec("alfworld") is None, reason="ALFWorld is not installed")
def test_alfworld_id_passes_check_env():
    checked("hindsight/alfworld-v0").close()


@pytest.fixture(scope="module")
def gold_table() -> pd.DataFrame:
    env = make_env(TWC)
    try:
        return pd.DataFrame([row for seed in env.seeds("train", 3) for row in play_gold_episode(env, TWC, "train", seed)])
    finally:
        env.close()


def test_expert_replay_id_passes_check_env(gold_table):
    env = checked("hindsight/expert-replay-v0", table=gold_table)
    observation, info = env.reset(seed=4)  # 4 mod 3 trajectories: the second
    assert observation == gold_table[gold_table["seed"] == 1].sort_values("step")["observation"].iloc[0]
    with pytest.raises(EnvironmentConfigError, match="exactly one"):
        gymnasium.make("hindsight/expert-replay-v0")


def test_world_model_id_passes_check_env(gold_table):
    from hindsight.policy.model import build_policy
    from hindsight.policy.tokenizer import train_tokenizer
    from hindsight.world_model.environment import RecordedTasks, WorldModelSettings, WorldModelSimulator

    torch.set_num_threads(1)
    tokenizer = train_tokenizer(gold_table["observation"].tolist() + gold_table["action"].tolist(), vocab_size=300)
    simulator = WorldModelSimulator(build_policy("tiny", tokenizer, seed=0), RecordedTasks(gold_table), WorldModelSettings(max_new_tokens=8))
    env = checked("hindsight/world-model-v0", simulator=simulator, env="textworldexpress", game="twc", max_steps=8)
    observation, info = env.reset(seed=0)
    assert info["task_seed"] == 0 and info["valid_actions"] and simulator.calls > 0


def test_the_skill_bank_falls_back_on_the_whole_gym_id():
    skills = pd.DataFrame(
        {
            "group_id": ["gym/ns/Game-v0/train/0", "textworldexpress/twc/train/1"],
            "skill": ["do: take key", "do: open box"],
            "accepted": [True, True], "parse_ok": [True, True], "success": [True, True],
        }
    )
    bank = skill_bank_from_table(skills)
    assert bank["ns/Game-v0"] == "do: take key" and bank["twc"] == "do: open box"


class BareEnv(gymnasium.Env):
    """A Gymnasium text env that puts nothing in info: say "win" to win."""

    def __init__(self):
        self.observation_space = gymnasium.spaces.Text(20, min_length=0, charset=TEXT_CHARSET)
        self.action_space = gymnasium.spaces.Text(20, charset=TEXT_CHARSET)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return f"start {options['split']} {seed}", {}

    def step(self, action):
        return ("done", 1.0, True, False, {}) if action == "win" else ("nope", 0.0, False, False, {})


def test_the_adapter_falls_back_when_the_env_says_nothing():
    register_gym_env("test/Bare-v0", BareEnv)
    env = make_env(EnvironmentSpec("gym", "test/Bare-v0", {}, max_steps=3))
    observation, info = env.reset(2, "dev")
    assert observation == "start dev 2" and info["task"] == "start dev 2"  # split and seed reach reset
    assert info["valid_actions"] == [] and info["task_type"] == "test/Bare-v0" and info["score"] == 0.0
    _, reward, terminated, _, info = env.step("lose")
    assert reward == 0.0 and not terminated and info["action_valid"] and not info["won"]
    _, reward, terminated, truncated, info = env.step("win")
    assert reward == 10.0 and terminated and not truncated and info["won"] and info["score"] == 1.0
    with pytest.raises(EnvironmentConfigError, match="ingestion.expert_episodes"):
        env.gold_actions()


def test_gym_modules_are_imported_before_make(tmp_path, monkeypatch):
    (tmp_path / "my_gym_plugin.py").write_text(
        "import gymnasium\n"
        "gymnasium.register(id='test/FromPlugin-v0', entry_point='hindsight.envs.gym_wrapper:make_family_gym',\n"
        "                   kwargs={'env': 'textworldexpress', 'game': 'twc'})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    env = make_env(EnvironmentSpec("gym", "test/FromPlugin-v0", {"gym_modules": ["my_gym_plugin"], "max_steps": 5}))
    observation, info = env.reset(0, "train")
    assert "take" in " ".join(info["valid_actions"]) and observation
    env.close()
    with pytest.raises(EnvironmentConfigError, match="gym_modules"):
        make_env(EnvironmentSpec("gym", "test/FromPlugin-v0", {"gym_modules": ["no_such_plugin_module"]}))


JAVA_IDS = {f"hindsight/twx-{game}-v0" for game in TWX_GAMES} | {"hindsight/scienceworld-v0"}
"""Ids whose simulator runs in a JVM (skipped only where Java is absent)."""
REFUSALS = {
    "hindsight/expert-replay-v0": "table= or replay=",
    "hindsight/world-model-v0": "simulator=",
    "hindsight/alfworld-v0": "ALFWorld",
}
"""Ids that need arguments (or data) no default can supply -> what their refusal names."""
REFUSALS_OF_MINIWOB = {f"hindsight/miniwob-{task}-v0": "which the action set lacks" for task in MISSING_ACTIONS}
REFUSALS_OF_MINIWOB["hindsight/miniwob-click-pie-v0"] = "play 'click-pie-nodelay'"


def test_every_registered_hindsight_id_is_a_builtin():
    registered = {env_id for env_id in gymnasium.registry if env_id.startswith("hindsight/")}
    assert registered == set(builtin_gym_ids())


def test_only_the_real_time_miniwob_ids_are_registered_nondeterministic():
    """Their page moves between a step's two plays (check_env skips its step-determinism
    check for them); every other id keeps the check."""
    flagged = {env_id for env_id in builtin_gym_ids() if gymnasium.spec(env_id).nondeterministic}
    assert flagged == {f"hindsight/miniwob-{task}-v0" for task in REAL_TIME_TASKS}
    assert set(REAL_TIME_TASKS) <= set(task_names())


def _fast_ids() -> list[str]:
    """Every id but the playable MiniWoB tasks without a gold solver (about 1 s each in a
    browser: ``test_gym_miniwob_ids.py``, ``-m slow``); their refusals stay here."""
    solved = {f"hindsight/miniwob-{task}-v0" for task in MINIWOB_GYM_TASKS}
    return sorted(i for i in builtin_gym_ids() if not i.startswith("hindsight/miniwob-") or i in solved or i == "hindsight/miniwob-v0"
                  or i in REFUSALS_OF_MINIWOB)


@pytest.mark.parametrize("env_id", _fast_ids())
def test_every_id_builds_with_default_arguments_or_refuses_naming_what_it_needs(env_id, tmp_path, monkeypatch):
    if env_id in JAVA_IDS and shutil.which("java") is None:
        pytest.skip("Java is not installed")
    monkeypatch.chdir(tmp_path)  # a default cache (TextWorld's games) lands here
    try:
        env = gymnasium.make(env_id)
    except EnvironmentConfigError as error:
        assert env_id in REFUSALS, f"{env_id} refused its defaults: {error}"
        assert REFUSALS[env_id] in str(error)
        return
    assert env_id not in REFUSALS or env_id == "hindsight/alfworld-v0", f"{env_id} built without its arguments"
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_the_world_model_id_names_every_missing_argument():
    with pytest.raises(EnvironmentConfigError, match=r"simulator= \(a WorldModelSimulator\), env=, game="):
        gymnasium.make("hindsight/world-model-v0")
    with pytest.raises(EnvironmentConfigError, match=r"needs game=:"):
        gymnasium.make("hindsight/world-model-v0", simulator=_FakeSimulator(), env="textworldexpress")


class _FakeSimulator:
    def make_env(self, spec, imagined_turns=0):  # pragma: no cover - never reached
        raise AssertionError("built without a game")


# --- MiniWoB++ ids for every shipped task, and generated files in the user cache directory ---

from pathlib import Path  # noqa: E402

from hindsight.envs.textworld_games import DEFAULT_CACHE_DIR, user_cache_dir  # noqa: E402

REFUSALS.update(REFUSALS_OF_MINIWOB)


@pytest.fixture(autouse=True)
def user_cache_in_tmp(tmp_path_factory, monkeypatch):
    """Every test's user cache directory is a temporary one (an id's generated files land there)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user_cache")))


@pytest.fixture(scope="module")
def warm_browser():
    """One window held for the module, so that the MiniWoB ids open windows in a running browser."""
    from hindsight.envs.miniwob.pool import browser_pool

    window = browser_pool().acquire(60.0)
    yield
    window.close()


@pytest.fixture(autouse=True)
def browser_for_miniwob_ids(request):
    """The warm browser, for the tests that build a MiniWoB id."""
    callspec = getattr(request.node, "callspec", None)
    env_id = callspec.params.get("env_id", "") if callspec else ""
    if env_id.startswith("hindsight/miniwob-") and env_id not in REFUSALS:
        request.getfixturevalue("warm_browser")


def test_the_textworld_id_writes_its_games_to_the_user_cache_never_the_working_directory(tmp_path, monkeypatch):
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    env = gymnasium.make("hindsight/textworld-v0")
    try:
        assert env.unwrapped.environment.cache_dir == str(cache / "hindsight" / "textworld_games")
        env.reset(seed=0)
    finally:
        env.close()
    assert list(work.iterdir()) == []
    assert list((cache / "hindsight" / "textworld_games").rglob("train_*.z8"))
    # a cache_dir given is kept; the project family (what a Kedro run builds) keeps data/01_raw
    other = gymnasium.make("hindsight/textworld-v0", params={"cache_dir": str(tmp_path / "mine")})
    assert other.unwrapped.environment.cache_dir == str(tmp_path / "mine")
    other.close()
    kedro = make_env(EnvironmentSpec("textworld", "custom", {"world_size": 1, "nb_objects": 3, "quest_length": 2}))
    assert kedro.cache_dir == DEFAULT_CACHE_DIR == "data/01_raw/textworld_games"
    kedro.close()


def test_the_user_cache_directory_follows_xdg_and_falls_back_to_the_home_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache_dir("games") == tmp_path / "hindsight" / "games"
    for unset in ("", "relative/cache"):
        monkeypatch.setenv("XDG_CACHE_HOME", unset)
        assert user_cache_dir() == Path.home() / ".cache" / "hindsight"
