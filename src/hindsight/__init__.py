"""hindsight: train LLM agents on long multi-turn tasks with group-relative RL and
self-evolving on-policy distillation (SEED), as a Kedro project.

docs/layout.md maps the packages and their layers. A few module names repeat in different
packages because each package has its own thing of that kind: ``pass_k.py`` (the
estimator's math in ``algorithms``; the pass^k tables of evaluation episodes in
``evaluation``), ``report.py`` (an evaluation summary as a table and a plot in
``evaluation``; the experiment grid's report in ``experiments``), ``registry.py``
(environment families by name in ``envs``; RL methods by name in ``methods``) and
``tasks.py`` (the task references every rollout plays in ``rollout``; the dual-control
domain's procedural tasks in ``envs/dual_control``). ``tools/module_names.py`` lists them.
"""

__version__ = "0.1.0"
