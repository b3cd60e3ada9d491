"""The console's own widgets (each one small and testable on its own)."""
