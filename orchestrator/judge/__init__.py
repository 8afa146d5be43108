"""Verdict rules shared by qualify, soak and compare: outcomes, trends, paired decisions, gates."""
