"""The Textual console, one of the two faces (the CLI commands are the other).

`app` composes the screen and owns the stream-wide polls; `panels/` are the tabs, each running its
own work in its own workers and posting typed messages the app routes; `widgets/` are the pieces
shared by several views, `screens/` the modal dialogs; `changes` starts split, merge, rescale
(`reshard_flow`) and the stream actions. The backend is reached through console.backend.protocol.
`bindings` is the one table of keys that help and the command palette (`palette`) read.
Nothing outside console/ui imports Textual."""
