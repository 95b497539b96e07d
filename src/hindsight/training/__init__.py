"""Training: supervised fine-tuning (``sft``: behaviour cloning, Stage 1), the RL loop
(``rl``: rollout -> skills -> re-score -> update, one algorithm top to bottom) and its update
(``rl_update``: PPO clip, gated distillation and KL as named loss terms), one RL run set up
from the settings (``rl_run``), distillation scoring (``distillation``), and checkpoints with
resume (``checkpoint``). RL settings: ``rl_config.RLConfig``."""
