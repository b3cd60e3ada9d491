"""The console's modal screens: help, the stream picker, one-line prompts and choices, and the
reshard preview and confirm-by-name dialogs. Each dismisses with its answer; none imports the app."""
