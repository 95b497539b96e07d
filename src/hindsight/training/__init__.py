"""Training: supervised fine-tuning (``sft``: behaviour cloning, Stage 1), the RL loop
(``rl``: rollout -> skills -> re-score -> update, one algorithm top to bottom) and its update
(``rl_update``: PPO clip, gated distillation and KL as named loss terms), one RL run set up
from the settings (``rl_run``), distillation scoring (``distillation``), and checkpoints with
resume (``checkpoint``), and where the loop's rollouts come from (``async_rollouts``: played
in-line, or ahead by a rollout worker process, ``rollout_worker``, with bounded staleness).
RL settings: ``rl_config.RLConfig``."""
