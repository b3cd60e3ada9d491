"""Where the keys go: the console's focus model.

- The tab keys (the digits) always switch tabs, except while the user is typing in a text box.
- Opening a tab focuses its primary list, or its first field. A field focused that way is only
  *offered*: the tab keys still switch tabs, and the field takes keys once the user enters it (enter, a
  click, or typing any other character into it; reaching it with tab / shift+tab counts too).
- Escape in a text box being typed in stops the typing: the box is only offered again, as when its
  tab opened. The tab's own keys work (the Producer's ctrl+s), enter goes back in, and a letter goes
  into the box, never to a console action (a typed name must not open a split preview through its s).
- Escape from an offered box leaves it for the tab strip, so every single-key binding works again;
  the tab's own keys work there too.
- When a dialog closes, a text box that had the keys before it is only offered again.

The app holds one FocusModel and hands it every event first (`App.on_event` sees a key before
Textual routes it to the box), the focus changes, and escape.
"""

from __future__ import annotations

from textual import events
from textual.actions import parse as parse_action
from textual.app import App
from textual.dom import NoScreen
from textual.errors import NoWidget
from textual.widget import Widget
from textual.widgets import Input, TabbedContent, Tabs, TextArea

from console.ui.lazy_tabs import ConsolePane
from console.ui.tabs import TABS

TEXT_FIELDS = (Input, TextArea)
TAB_ACTIONS = {tab.key: tab.action for tab in TABS}
# Each tab's first focus: its primary list, or its first field.
FIRST_FOCUS = {tab.id: tab.first_focus for tab in TABS if tab.first_focus}


class FocusModel:
    """Where the keys go in `app`: `focus_tab(tab)`, `typing`, `tab_strip`, and the enter / escape keys."""

    def __init__(self, app: App[None]) -> None:
        self.app = app
        self._offered_field: Widget | None = None  # a text box focused by opening its tab, not yet entered

    @property
    def tab_strip(self) -> Tabs:
        """The row of tab titles. TabbedContent builds it as a private subclass of the public Tabs
        (textual.widgets._tabbed_content.ContentTabs), so it is found as a Tabs: tests/ui checks
        that escape still lands on it."""
        return self.app.query_one(TabbedContent).query_one(Tabs)

    @property
    def typing(self) -> bool:
        """True when keys go into a text box the user entered (or into a dialog over the console)."""
        app = self.app
        if app.screen is not app.screen_stack[0]:
            return True
        focused = app.focused
        return isinstance(focused, TEXT_FIELDS) and focused is not self._offered_field

    @property
    def offered_field(self) -> Widget | None:
        focused = self.app.focused
        return focused if focused is not None and focused is self._offered_field else None

    def focus_tab(self, tab: str) -> None:
        pane = self.app.query_one(f"TabPane#{tab}")
        found = pane.query(FIRST_FOCUS[tab]) if tab in FIRST_FOCUS else None
        target = found.first() if found else next((w for w in pane.query("*") if w.focusable), self.tab_strip)
        self._offered_field = target if isinstance(target, TEXT_FIELDS) else None
        # At once, not a moment later as Widget.focus() gives it: a key pressed right after the tab key
        # (enter, to enter the field) must find the focus on the tab it opened.
        target.screen.set_focus(target)
        self.app.refresh_bindings()

    def enter_field(self) -> None:
        if self._offered_field is not None:
            self._offered_field = None
            self.app.refresh_bindings()

    def dialog_closed(self) -> None:
        """A dialog over the console closed and Textual gave the focus back to where it was. A text box
        the user was typing in when the dialog opened is only offered now: the keys after a dialog are
        meant for the console (a 7 for Heat), not appended to a field the user has left for the dialog."""
        app = self.app
        if app.screen is app.screen_stack[0] and isinstance(app.focused, TEXT_FIELDS):
            self._offered_field = app.focused
            app.refresh_bindings()

    def focused(self, widget: Widget) -> None:
        """A widget took the focus. Focus that the tab switch did not give (tab / shift+tab, a click)
        means the user chose it. Focus inside a dialog over the console is neither: when the dialog
        closes, Textual gives the focus back to where it was, and an offered field stays only offered."""
        try:
            screen = widget.screen
        except NoScreen:  # removed (its dialog closed) before its focus event was handled
            return
        if screen is not self.app.screen_stack[0]:
            return
        pane = next((node for node in widget.ancestors if isinstance(node, ConsolePane)), None)
        if pane is not None and pane.id != self.app.query_one(TabbedContent).active:
            # Textual moving the focus off a tab being hidden, onto its next widget, a moment after the
            # switch: not the user's choice, and the field the new tab offers stays only offered.
            return
        if widget is not self._offered_field:
            self.enter_field()
        else:
            self.app.refresh_bindings()

    async def handled(self, event: events.Event) -> bool:
        """See an event before Textual hands a key to the focused text box (which would take it);
        True when it was used up here. A click reaches the app on its way down from the terminal,
        or bubbling back up from the widget."""
        app = self.app
        if self._offered_field is not None and isinstance(event, events.MouseDown):
            try:
                widget, _region = app.screen.get_widget_at(event.screen_x, event.screen_y)
            except NoWidget:  # a click outside every widget
                widget = None
            if widget is self._offered_field:
                self.enter_field()
        elif isinstance(event, events.Key) and not event.is_forwarded and self.offered_field is not None:
            if event.key in TAB_ACTIONS:
                await app.run_action(TAB_ACTIONS[event.key])
                return True
            elif event.key == "enter":
                self.enter_field()
                return True
            elif event.is_printable:
                self.enter_field()  # typing a letter into the offered box is entering it
        elif isinstance(event, events.Key) and not event.is_forwarded and await self.tab_key(event):
            return True
        return False

    def leave_text_box(self, event: events.Key) -> None:
        """Escape in a text box being typed in: it is only offered (the keys after it are the tab's, or
        enter it again); escape in an offered one: back to the tab strip, where the single keys work."""
        app = self.app
        focused = app.focused
        if event.key == "escape" and app.screen is app.screen_stack[0] and isinstance(focused, TEXT_FIELDS):
            if focused is self._offered_field:
                self._offered_field = None
                self.tab_strip.focus()
            else:
                self._offered_field = focused
                app.refresh_bindings()
            event.stop()

    async def tab_key(self, event: events.Key) -> bool:
        """A key of the tab shown (its panel's BINDINGS, e.g. the Producer's ctrl+s) pressed on the tab
        strip runs there as in the tab: True when it did."""
        app = self.app
        if app.focused is not self.tab_strip or app.screen is not app.screen_stack[0]:
            return False
        pane = app.query_one(TabbedContent).active_pane
        for panel in pane.children if pane is not None else ():
            for binding in panel._bindings.key_to_bindings.get(event.key, []):
                _namespace, name, parameters = parse_action(binding.action)
                if panel.check_action(name, parameters):  # greyed out (None) or off (False): not run
                    await app.run_action(binding.action, panel)
                    return True
        return False
