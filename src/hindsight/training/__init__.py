"""The engine's learner side: supervised fine-tuning (``sft``: behaviour cloning, Stage 1),
the core RL loop (``rl``: rollout -> batch -> the method's signals and advantages -> update,
naming no method; methods live in ``hindsight.methods``) over one ``batch.RolloutBatch``,
its update (``rl_update``: PPO clip, the method's terms and KL as ``loss_terms.LossTerm``),
the schedulers (``stepo``: which tasks, which groups; ``minibatches``: ODYSSE's sampler;
``async_rollouts`` with ``rollout_worker``: rollouts played ahead with bounded staleness),
teacher scoring (``distillation``), data-parallel learners (``data_parallel``,
``rl_parallel``, ``distributed``), and checkpoints with resume (``checkpoint``).
Core-loop settings: ``rl_config.RLConfig``."""
