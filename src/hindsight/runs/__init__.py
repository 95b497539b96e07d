"""RL runs end to end, one layer above the methods: what picks a method by name and drives
the engine's loop (``training.loop.train_rl``) with it.

- ``rl_run``: one RL run (``run_rl``): the method by name (``methods.registry``), the reference,
  the held-out evaluator, the loop, the end policy; the training pipeline runs one, the
  experiment grid one per cell, the world-model pipeline one inside the world model;
- ``empo_run``: EMPO's run on expert replay (``run_empo``; the EMPO pipeline), and the expert
  replay an EMPO cell of the grid plays (``empo_grid_setup``).

What a run is given is built from the settings one layer up (``hindsight.config.rl_setup``:
``training.run_setup.RLSetup``).
"""
