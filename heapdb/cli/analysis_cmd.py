"""Placeholder: commands are added here as their features land."""
