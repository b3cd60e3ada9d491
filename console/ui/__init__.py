"""The Textual console. Nothing outside console/ui imports Textual."""
