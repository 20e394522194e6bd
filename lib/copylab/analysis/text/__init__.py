"""The comparison report's words (copylab compare): being moved into analysis/templates/."""
