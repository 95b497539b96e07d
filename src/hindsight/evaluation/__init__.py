"""Held-out evaluation: playing a policy and the random-valid-action floor on tasks never
trained on (``heldout``), success rates with 95% intervals (``metrics``), pass^k over
several trials per task (``pass_k``), and the markdown table and plot of the evaluation
stage (``report``)."""
