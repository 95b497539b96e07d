"""RL methods: one module per method, and the registry that maps a name to its module;
nothing else (a run end to end is ``hindsight.runs``, one layer up).

- the ``Method`` interface (its hooks default to GRPO) and ``MethodContext`` live in
  ``training.method``, in the engine layer below, with the core loop that calls the hooks
  (``training.loop``, ``training.update``; it names no method);
- ``registry``: the built-in methods listed (``BUILT_IN``), ``@register("name")`` for a
  method defined elsewhere, ``build_method(rl, context)``, and the check of a method's
  settings and of the core settings it requires when the parameters are read;
- one module per method: ``grpo``, ``gigpo``, ``seed`` and ``opid`` (both over
  ``skill_distillation``), ``empo``, ``wmr1`` (over ``wmr1_replay`` and ``wmr1_rewards``);
  docs/methods.md lists the files a built-in method touches (each list of them is tested).
"""

from hindsight.training.method import Method, MethodContext, NoSettings
from hindsight.methods.registry import build_method, check_method_settings, method_class, method_names, method_settings, register

__all__ = [
    "Method",
    "MethodContext",
    "NoSettings",
    "build_method",
    "check_method_settings",
    "method_class",
    "method_names",
    "method_settings",
    "register",
]
