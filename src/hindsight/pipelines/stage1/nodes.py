"""Nodes of the Stage-1 stage: the mixture, its SFT run, and the checks of what it taught.

Stage 1 continues from the base policy on a mixture: the same behaviour cloning,
skill-conditioned behaviour cloning (expert steps with their episode's hindsight skill
injected into the prompt, so the policy learns to use a skill) and analyzer SFT (analysis
prompt -> skill, so the policy can write skills). The Stage-1 checkpoint starts RL and is
its KL reference. Two checks follow (``stage1.premise``): the analyzer on the held-out
analyzer pairs (parse rate, exact match), and SEED's premise on held-out tasks (does the
policy's own skill in context raise the log-probs of its actions?).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from hindsight import tracking
from hindsight.config import ProjectConfig, Stage1Config
from hindsight.envs import make_env
from hindsight.methods.seed import SEEDSettings
from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples, log_prefixed
from hindsight.policy import Policy
from hindsight.policy.logprobs import LOGPROB_TEMPERATURE
from hindsight.rollout.engine import run_rollouts
from hindsight.rollout.tasks import seen_tasks, split_tasks
from hindsight.skills.analyzers import policy_teacher, rule_teacher
from hindsight.skills.assignment import unrelated_skills
from hindsight.stage1.counterfactual import counterfactual_examples, reorder_examples, unrelated_skill_examples
from hindsight.skills.episode_views import episodes_from_table
from hindsight.stage1.premise import evaluate_analyzer, premise_table
from hindsight.stage1.premise_pieces import PieceStore, PremisePlan, plan_key, run_premise_check
from hindsight.stage1.premise_report import premise_summary, ranking_summary
from hindsight.stage1.teacher_fit import fit_mixture, teacher_fit_pairs
from hindsight.training.episode_sft import MULTITURN_COLUMNS, TurnBudget, skill_conditioned
from hindsight.training.example_screens import screens_of_samples
from hindsight.training.sft import SFT_HISTORY_COLUMNS, train_sft

logger = logging.getLogger(__name__)


def episode_skills(skills: pd.DataFrame, analyzer_sft_set: pd.DataFrame) -> dict[str, str]:
    """The skill of each episode for skill-conditioned behaviour cloning: the accepted skills,
    overridden by the analyzer SFT set's (with ``skills.analyzer_sft_from: every_episode``
    that is one skill for every expert episode, held-out ones included: their steps are
    behaviour cloning, not analyzer pairs)."""
    accepted = skills[skills["accepted"] & skills["parse_ok"]].set_index("episode_id")["skill"].to_dict()
    if "skill" in analyzer_sft_set:
        accepted.update(dict(zip(analyzer_sft_set["episode_id"].astype(str), analyzer_sft_set["skill"])))
    return accepted


def own_rollout_examples(skill_rollouts: pd.DataFrame, project: ProjectConfig, settings: Stage1Config) -> pd.DataFrame:
    """The steps of the base policy's won skills-stage rollouts as behaviour-cloning examples
    (``behaviour_cloning_examples`` on that table), for ``stage1.own_rollout_repeat`` > 0;
    empty (no rows) otherwise or when no train-fold rollout was won."""
    empty = pd.DataFrame(columns=["episode_id", "prompt", "response", "kind"])
    if settings.own_rollout_repeat == 0:
        return empty
    train = skill_rollouts[skill_rollouts["split"] == "train"] if "split" in skill_rollouts else skill_rollouts.iloc[:0]
    if "won" not in train or not train["won"].astype(bool).any():
        logger.warning("stage1.own_rollout_repeat: no won skills-stage rollout; the mixture has none of its steps")
        return empty
    return behaviour_cloning_examples(skill_rollouts, project)


def stage1_examples(
    bc_examples: pd.DataFrame, own_rollouts: pd.DataFrame, skills: pd.DataFrame, analyzer_sft_set: pd.DataFrame,
    settings: Stage1Config, screenshots: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The Stage-1 mixture: behaviour cloning, skill-conditioned behaviour cloning on every
    expert step whose episode has a skill (``episode_skills``, injected after the task line), and
    the analyzer pairs that are not held out; with ``stage1.own_rollout_repeat`` > 0 also
    that many copies of hindsight skill use on ``own_rollouts`` (``own_rollout_examples``):
    each won rollout's steps with the skill written from that episode (kind "own_skill_bc";
    never without the skill, so the plain policy is not trained on them); with
    ``stage1.counterfactual_repeat`` > 0 that many draws of counterfactual skill use
    (``stage1.counterfactual``, kind "skill_swap": a listed action swapped for another valid
    one, which becomes the target); with ``stage1.reorder_repeat`` > 0 that many draws of
    order examples (kind "skill_reorder": the expert's listed action and a later listed one
    the state allows trade places, the later one the target); with ``stage1.unrelated_repeat``
    > 0 that many copies of expert steps with another task type's skill and the expert's
    action (kind "unrelated_skill_bc"). ``stage1.behaviour_cloning: false`` leaves out the
    behaviour cloning and its skill-conditioned copy (the official release: analyzer SFT only).

    In the multi-turn layout (``bc_examples`` with ``episode_sft.MULTITURN_COLUMNS``) the
    behaviour-cloning rows keep those columns (whole-episode sequences, the skill in the
    header of the skill-conditioned ones); analyzer pairs stay (prompt, response) rows with
    them empty.

    Where the steps have screens (``screenshots`` not empty: an environment that renders one)
    the rows keep their step's ``episode_id`` and ``step``, the key a policy that sees finds
    the screen by when it trains (no pixels in the table); a text run's mixture is as before."""
    skill_use = skill_use_examples(bc_examples, own_rollouts, skills, analyzer_sft_set, settings)
    return stage1_mixture(skill_use, analyzer_sft_set, settings, screenshots)


def skill_use_examples(
    bc_examples: pd.DataFrame, own_rollouts: pd.DataFrame, skills: pd.DataFrame, analyzer_sft_set: pd.DataFrame,
    settings: Stage1Config,
) -> pd.DataFrame:
    """The behaviour-cloning side of the Stage-1 mixture (``stage1_examples``): behaviour
    cloning and its skill-conditioned copy, the own-rollout copies, the counterfactual, order
    and ignoring examples, in that order; the analyzer pairs join in ``stage1_mixture``."""
    skill_of = episode_skills(skills, analyzer_sft_set)
    conditioned = skill_conditioned(bc_examples, skill_of)
    own = skill_conditioned(own_rollouts, skill_of).assign(kind="own_skill_bc") if len(own_rollouts) else own_rollouts
    own_copies = [_copy(own, f"own_skill_bc{index}") for index in range(settings.own_rollout_repeat)]
    counterfactual = [counterfactual_examples(bc_examples, skill_of, seed=index) for index in range(settings.counterfactual_repeat)]
    if counterfactual and not len(counterfactual[0]):
        logger.warning("stage1.counterfactual_repeat: no expert step's action is listed by a do: skill; none added")
    reordered = [reorder_examples(bc_examples, skill_of, seed=index) for index in range(settings.reorder_repeat)]
    if reordered and not len(reordered[0]):
        logger.warning("stage1.reorder_repeat: no expert step's state allows a later item of its skill; none added")
    ignoring = unrelated_skill_examples(bc_examples, skill_of) if settings.unrelated_repeat else None
    unrelated = [_copy(ignoring, f"unrelated{index}") for index in range(settings.unrelated_repeat)]
    behaviour_cloning = [bc_examples, conditioned] if settings.behaviour_cloning else []  # false: the release's Stage 1
    parts = behaviour_cloning + own_copies + counterfactual + reordered + unrelated
    columns = list(dict.fromkeys(column for part in [bc_examples, *parts] for column in part.columns))
    return pd.concat([part.reindex(columns=columns) for part in parts], ignore_index=True) if parts else bc_examples.iloc[:0]


def stage1_mixture(
    skill_use: pd.DataFrame, analyzer_sft_set: pd.DataFrame, settings: Stage1Config, screenshots: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The Stage-1 mixture (``stage1_examples``): ``skill_use_examples``' rows, then the
    analyzer pairs that are not held out (``stage1.analyzer_repeat`` copies), in the columns
    the SFT reads (the multi-turn ones where the behaviour-cloning rows have them; the step's
    ``episode_id`` and ``step`` where the steps have screens)."""
    trained = analyzer_sft_set[~analyzer_sft_set["held_out"].astype(bool)] if "held_out" in analyzer_sft_set else analyzer_sft_set
    analyzer = trained.assign(kind="analyzer")
    columns = ["prompt", "response", "kind"] + (list(MULTITURN_COLUMNS) if "header" in skill_use else [])
    if screenshots is not None and len(screenshots):
        columns += [column for column in ("episode_id", "step") if column not in columns]
    parts = ([skill_use] if len(skill_use) else []) + [analyzer] * settings.analyzer_repeat
    mixture = pd.concat([part.reindex(columns=columns) for part in parts], ignore_index=True)
    counts = mixture["kind"].value_counts().to_dict()
    logger.info("Stage-1 mixture: %s", counts)
    tracking.log_metrics({f"stage1/examples_{kind}": n for kind, n in counts.items()})
    return mixture


def _copy(examples: pd.DataFrame, label: str) -> pd.DataFrame:
    """A copy of ``examples`` whose multi-turn sequences (if any) get keys of their own, so
    that repeated copies stay separate sequences instead of merging into one."""
    if "sequence" not in examples or not len(examples):
        return examples
    keys = [f"{label}/{key}" if isinstance(key, str) and key else key for key in examples["sequence"]]
    return examples.assign(sequence=keys)


def train_stage1_policy(
    base_policy: Policy, examples: pd.DataFrame, project: ProjectConfig, settings: Stage1Config,
    screenshots: pd.DataFrame | None = None,
):
    """Stage 1 of SEED from the base policy: the SFT checkpoint (RL's start, unless the
    teacher fit follows), and its loss history. A policy that sees reads each step example's
    screen from ``screenshots`` (the analyzer pairs stay text; a step without a screen is
    refused)."""
    history = train_sft(
        base_policy, examples, settings.sft, log_prefixed("stage1"), seed=project.seeds.examples,
        turns=TurnBudget.of(project.rollout.sampling), screens=screenshots,
    )
    return base_policy, history.assign(phase="stage1")


def fit_stage1_teacher(
    stage1_sft_policy: Policy, examples: pd.DataFrame, project: ProjectConfig, settings: Stage1Config,
    screenshots: pd.DataFrame | None = None,
):
    """The teacher fit (``stage1.teacher_fit``) after Stage 1's SFT, for
    ``stage1.teacher_fit.episodes_per_game`` > 0: the policy plays that many training tasks
    per game, writes its own skill for each won episode, and trains on their steps with and
    without the skill (and with ``teacher_fit.unrelated`` under another task type's skill)
    beside the Stage-1 mixture ``examples``; logs
    ``stage1/teacher_fit/{episodes,success_rate,own_skills,fit_steps}``. Returns the Stage-1
    checkpoint (the SFT one unchanged when the fit is off) and the fit's loss history. A
    policy that sees trains on the screens it played on (its rollout's samples carry them)
    and, for the mixture's steps, on ``screenshots``."""
    fit = settings.teacher_fit
    if fit.episodes_per_game == 0:
        return stage1_sft_policy, _no_fit_history()
    if project.rollout.layout == "multiturn":  # refused before any episode is played
        raise ValueError("stage1.teacher_fit is step-wise only; rollout.layout is multiturn (set episodes_per_game: 0)")
    rollout, episodes = _play_train_tasks(stage1_sft_policy, project, fit.episodes_per_game, 0, fit.sampling, project.seeds.validation)
    records = policy_teacher(stage1_sft_policy, project.analyzer).write_skills([episode for episode in episodes if episode.success])
    skill_of = {record.episode_id: record.skill for record in records if record.parse_ok}
    skilled = [episode for episode in episodes if episode.episode_id in skill_of]
    pairs = teacher_fit_pairs(episodes, rollout.samples, skill_of, unrelated_skills(skilled, skill_of) if fit.unrelated else None)
    steps = int((pairs["kind"] == "fit_plain").sum())
    metrics = {
        "episodes": float(len(episodes)), "success_rate": float(rollout.stats["success_rate"]),
        "own_skills": float(len(skill_of)), "fit_steps": float(steps),
    }
    tracking.log_metrics({f"stage1/teacher_fit/{key}": value for key, value in metrics.items()})
    logger.info("Teacher fit: %d episodes played, %d won with a parsed own skill, %d steps", len(episodes), len(skill_of), steps)
    if pairs.empty:
        logger.warning("stage1.teacher_fit: no won episode with a parsed own skill; the Stage-1 checkpoint is the SFT one")
        return stage1_sft_policy, _no_fit_history()
    screens = None
    if stage1_sft_policy.vision is not None:  # the played steps' screens beside the catalog's (in memory only)
        screens = pd.concat([part for part in (screenshots, screens_of_samples(rollout.samples)) if part is not None], ignore_index=True)
    history = train_sft(
        stage1_sft_policy, fit_mixture(pairs, examples, fit.repeat), fit.sft, log_prefixed("stage1/teacher_fit"),
        seed=project.seeds.examples, screens=screens, screens_origin="screenshots and the teacher fit's rollouts",
    )
    return stage1_sft_policy, history.assign(phase="teacher_fit")


def _play_train_tasks(policy: Policy, project: ProjectConfig, tasks_per_game: int, offset: int, sampling: dict, seed: int):
    """The policy plays ``tasks_per_game`` train-fold tasks per game from position ``offset``
    (one episode each, decoding with the changes ``sampling``): the rollout result and its
    episodes."""
    tasks = [task for spec in project.specs() for task in split_tasks(spec, "train", tasks_per_game, offset)]
    return _play(policy, project, tasks, sampling, seed)


def _play(policy: Policy, project: ProjectConfig, tasks: list, sampling: dict, seed: int):
    rollout = run_rollouts(policy, make_env, tasks, project.rollout_config(group_size=1, sampling=sampling, seed=seed))
    return rollout, episodes_from_table(rollout.table)


def _no_fit_history() -> pd.DataFrame:
    """The fit's loss history when nothing was fitted: no rows, the columns of one."""
    return pd.DataFrame({column: pd.Series(dtype="float64") for column in SFT_HISTORY_COLUMNS}).astype(
        {"step": "int64"}
    ).assign(phase=pd.Series(dtype="str"))


def evaluate_stage1_analyzer(stage1_policy: Policy, analyzer_sft_set: pd.DataFrame, project: ProjectConfig) -> pd.DataFrame:
    """The Stage-1 policy writes the skills of the held-out analyzer pairs, as the RL loop
    would: logs ``stage1/analyzer_parse_rate`` and ``stage1/analyzer_exact_match``."""
    table = evaluate_analyzer(stage1_policy, analyzer_sft_set, project.analyzer)
    if len(table):
        tracking.log_metrics(
            {
                "stage1/analyzer_heldout": float(len(table)),
                "stage1/analyzer_parse_rate": float(table["parse_ok"].mean()),
                "stage1/analyzer_exact_match": float(table["exact"].mean()),
            }
        )
        logger.info(
            "Stage-1 analyzer on %d held-out episodes: parse rate %.3f, exact match %.3f",
            len(table), table["parse_ok"].mean(), table["exact"].mean(),
        )
    return table


def check_skill_premise(
    stage1_policy: Policy, project: ProjectConfig, settings: Stage1Config
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """SEED's premise on held-out tasks: the Stage-1 policy plays ``premise_tasks_per_game``
    seen-split tasks per game at the temperature the log-probs are taken at
    (``policy.logprobs.LOGPROB_TEMPERATURE``, 1: as RL samples by default), writes its own skill for each
    episode, and re-scores its actions with that skill, with the rule teacher's and with the
    controls (``stage1.premise_controls``: another task's own skill of the same outcome, the
    same-form content control, its own skill's items shuffled); then the copy test on the won
    steps (``stage1.premise_copy``, at most ``premise_copy_pairs`` pairs). Logs
    ``stage1/premise/<source>/<all|won|lost>/{gap_mean,gap_low,gap_high,positive_share,tokens,informative_share}``,
    the split by whether the skill lists the step's action (``.../{listed,unlisted,unsure}/...``),
    the controls' assignment (``stage1/premise/unrelated/distinct_share`` ...,
    ``stage1/premise/shuffled/applicable_share``), the own skill minus each control, paired by
    episode (``stage1/premise/own_minus_<control>/<all|won|lost>/...``), ``stage1/premise/copy/*``
    and, with ``premise_ranking``, the ranking of SEED's shift on the actions the environment
    labels optimal (``stage1.premise_ranking``: ``stage1/premise/ranking/<source>/<within|pooled>/<subset>/{auroc,...,gate_push}``;
    the gate push at SEED's default ``gate_beta`` and ``opd_coef``).

    With ``premise_tasks_per_piece`` > 0 the plays and the scoring run in pieces of that many
    tasks, each kept under ``premise_pieces_dir`` (``stage1.premise_pieces``): a rerun of the
    same check (same policy, tasks and settings) loads the finished pieces and continues.

    Returns:
        The per-episode table (``skill_premise``), its summary with the 95% intervals over
        episodes (``skill_premise_summary``) and the ranking's summary (``skill_premise_ranking``,
        ``premise_ranking.RANKING_SUMMARY_COLUMNS``; no rows where nothing was labelled).
    """
    prefix = "stage1/premise"
    if settings.premise_tasks_per_game == 0:
        return premise_table(stage1_policy, [], [], {}), premise_summary({}, prefix), ranking_summary({}, prefix)
    seed_defaults = SEEDSettings()
    seed = project.seeds.evaluation
    offset = project.environment.seen_seed_offset
    plan = PremisePlan(
        tasks=[task for spec in project.specs() for task in seen_tasks(spec, settings.premise_tasks_per_game, offset)],
        rollout=project.rollout_config(group_size=1, sampling={"temperature": LOGPROB_TEMPERATURE}, seed=seed),
        analyzer=project.analyzer, seed=seed,
        copy_pairs=settings.premise_copy_pairs, tasks_per_piece=settings.premise_tasks_per_piece,
        ranking=settings.premise_ranking, ranking_steps=settings.premise_ranking_steps,
        gate_beta=seed_defaults.gate_beta, opd_coef=seed_defaults.opd_coef,
    )
    store = None
    if settings.premise_tasks_per_piece:
        store = PieceStore(Path(settings.premise_pieces_dir) / plan_key(stage1_policy, plan))
        logger.info("Premise check in %d pieces, kept in '%s' (a rerun resumes from them).", len(plan.pieces()), store.directory)
    table, metrics, _ = run_premise_check(stage1_policy, make_env, plan, prefix, store)
    tracking.log_metrics(metrics)
    _log_premise(metrics, len(plan.tasks), prefix)
    labels = metrics.get(f"{prefix}/ranking/labels_exact")
    note = "" if labels is None or labels != labels else "exact (the map)" if labels else "proxy (the gold's next action)"
    return table, premise_summary(metrics, prefix), ranking_summary(metrics, prefix, note)


def _log_premise(metrics: dict[str, float], episodes: int, prefix: str) -> None:
    """The premise's figures in one log line (NaN where a figure was not measured)."""
    value = {key[len(prefix) + 1 :]: item for key, item in metrics.items()}
    nan = float("nan")
    shuffled = (
        "n/a (no own skill has two distinct items)" if value.get("shuffled/applicable_share") == 0.0
        else f"{value.get('shuffled/won/gap_mean', nan):+.4f}"
    )
    logger.info(
        "Skill premise on %d held-out episodes: own-skill gap on won episodes %+.4f (95%% %+.4f..%+.4f; listed %+.4f, "
        "others %+.4f, unsure %+.4f; informative steps %.3f), rule skill %+.4f, unrelated %+.4f (distinct texts %.2f), "
        "same-form on listed steps %+.4f (own there %+.4f; own minus same-form, paired, %+.4f, 95%% %+.4f..%+.4f), "
        "shuffled %s; copy test %+.4f (95%% %+.4f..%+.4f, "
        "%.0f%% positive, %d pairs)",
        episodes, *(value.get(key, nan) for key in (
            "own/won/gap_mean", "own/won/gap_low", "own/won/gap_high", "own/won/listed/gap_mean", "own/won/unlisted/gap_mean",
            "own/won/unsure/gap_mean", "own/won/informative_share", "rule/won/gap_mean", "unrelated/won/gap_mean",
            "unrelated/distinct_share", "same_form/won/gap_mean", "own/won/listed/gap_mean",
            "own_minus_same_form/won/gap_mean", "own_minus_same_form/won/gap_low", "own_minus_same_form/won/gap_high")),
        shuffled, *(value.get(f"copy/{key}", nan) for key in ("gap_mean", "gap_low", "gap_high")),
        100 * value.get("copy/positive_share", nan), int(value.get("copy/pairs", 0)),
    )
