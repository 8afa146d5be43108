"""Verdict rules shared by qualify, soak and compare: a request's accounting, outcomes, trends, paired decisions, gates."""
