"""The ground floor every layer shares: errors by who must act, a checkpoint's identity, how a figure reads.
Imports nothing from the project."""
