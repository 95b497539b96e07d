"""Held-out evaluation: success rates with confidence intervals, tables and plots."""
