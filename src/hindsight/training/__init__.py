"""The engine's learner side: supervised fine-tuning (``sft``: behaviour cloning, Stage 1),
the core RL loop (``loop``: ``train_rl``, the same for every method) and its update
(``update``), what a run of it is given (``run_setup.RLSetup``; the run end to end, which
picks the method by name, is ``hindsight.runs`` above the methods), and their pieces: the method
interface (``method``, with what a method requires of the core settings), one ``batch.RolloutBatch``, the loss terms (``loss_terms.LossTerm``),
one update's rollout rounds (``update_batch``), the schedulers, each a piece with its settings
under ``training.rl.schedulers`` (``schedule`` composes them: ``stepo``: which groups, how
samples weigh; ``minibatches`` and ``espo_update``: ODYSSE's sampler and objective;
``positive_replay``; ``async_rollouts`` with ``rollout_worker``: rollouts played ahead with
bounded staleness; ``backend_correction``),
teacher scoring (``distillation``), data-parallel learners (``data_parallel``,
``rl_parallel``, ``distributed``), and checkpoints with resume (``checkpoint``).
Core-loop settings: ``rl_config.RLConfig``."""
