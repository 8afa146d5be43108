"""Live terminal views of a run: estimates for a person watching, never the source of a report."""
