"""The Textual console, one of the two faces (the CLI commands are the other).

`app` composes the screen and owns polling; `panels/` are the tabs, `widgets/` the pieces shared
by several views, `screens/` the modal dialogs. Panels render what they are given and post typed
messages; `panel_host` runs their I/O in workers and `reshard_flow` drives split, merge and rescale.
`bindings` is the one table of keys that help and the command palette (`palette`) read.
Nothing outside console/ui imports Textual."""
