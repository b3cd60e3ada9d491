"""Modal and full screens of the console."""
