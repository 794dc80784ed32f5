"""Presenter and followers: one page leads, every other page shows what it shows.

A page with control rights (loopback, or the presenter token on a public server) starts a
presentation and then sends its view as named parts (tour stop, camera view, labels, open lab
and its inputs, ...). The server keeps the latest view and fans each move out to every other
page as one `follow` frame, serialised once. Only the presenting page's moves are taken: a
follower can never steer anyone. A page that joins late gets the current view right after its
hello and snapshot. Followers may break away (and say so), so the presenter sees how many
still follow. If the presenting page goes away the presentation ends; followers keep what
they show.

Nothing here knows what a part means: that is the page's business (static/js/presenter/).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from app.protocol import FollowingMsg, FollowMsg, PresentMsg
from app.web.hub import Frame, Viewer


class Pages(Protocol):
    """Every page connected (a Hub, or app/web/runs.py `Runs`: the pages of every run)."""

    def viewers(self) -> list[Viewer]: ...


class PresentError(Exception):
    """A present message that cannot be taken; `code` and `message` go back as an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


NEEDS_RIGHTS = (
    "presenting needs the presenter's rights (this computer, or the presenter's link with its "
    "token); this page can follow the presenter"
)
NOT_LEAD = (
    "only the presenting page moves the room; this page is following (start presenting first)"
)


class Presenter:
    """The presentation: who leads, what the room shows, who follows. Event loop only."""

    def __init__(self, hub: Pages, clock: Any = time.time) -> None:
        self.hub = hub
        self.clock = clock
        self.lead: Viewer | None = None
        self.parts: dict[str, dict[str, Any]] = {}
        self.seq = 0
        self.away: set[Viewer] = set()  # pages that broke away to explore on their own
        self.moves = 0  # moves fanned out (for the benchmark and tests)

    # --- what everyone is told -----------------------------------------------------------

    @property
    def presenting(self) -> bool:
        return self.lead is not None

    def followers(self) -> int:
        if self.lead is None:
            return 0
        return sum(1 for v in self.hub.viewers() if v is not self.lead and v not in self.away)

    def _text(self, *, lead: bool, followers: int) -> str:
        return FollowMsg(
            presenting=self.presenting,
            lead=lead,
            seq=self.seq,
            parts=self.parts,
            followers=followers,
            sent_at=self.clock(),
        ).model_dump_json()

    def _lead_text(self, followers: int) -> str:
        # The presenter does not need its own view back: only who follows.
        return FollowMsg(
            presenting=True, lead=True, seq=self.seq, followers=followers, sent_at=self.clock()
        ).model_dump_json()

    def _fan_out(self) -> None:
        """One frame for every follower, serialised once; the lead hears the count."""
        followers = self.followers()
        frame = Frame(self._text(lead=False, followers=followers))
        for v in self.hub.viewers():
            if v is not self.lead:
                v.push(frame)
        if self.lead is not None:
            self.lead.push(Frame(self._lead_text(followers)))

    def _tell_lead(self) -> None:
        if self.lead is not None:
            self.lead.push(Frame(self._lead_text(self.followers())))

    # --- what pages ask -------------------------------------------------------------------

    def handle(self, viewer: Viewer, msg: PresentMsg, may_control: bool) -> None:
        """Start, move or stop; raises PresentError when this page may not."""
        if msg.action == "start":
            if not may_control:
                raise PresentError("forbidden", NEEDS_RIGHTS)
            previous = self.lead
            self.lead = viewer
            self.away.discard(viewer)
            self.parts = dict(msg.parts) or self.parts
            self.seq += 1
            if previous is not None and previous is not viewer:
                # Another presenter took over: the old one now follows like everyone else.
                previous.push(Frame(self._text(lead=False, followers=0)))
            self._fan_out()
        elif msg.action == "move":
            self._must_lead(viewer, may_control)
            # Parts not named keep their last value, so a page may send only what changed.
            self.parts = {**self.parts, **msg.parts}
            self.seq += 1
            self.moves += 1
            self._fan_out()
        else:  # stop
            self._must_lead(viewer, may_control)
            self._end()

    def _must_lead(self, viewer: Viewer, may_control: bool) -> None:
        if not may_control:
            raise PresentError("forbidden", NEEDS_RIGHTS)
        if viewer is not self.lead:
            raise PresentError("not_presenter", NOT_LEAD)

    def following(self, viewer: Viewer, msg: FollowingMsg) -> None:
        was = viewer in self.away
        if msg.following:
            self.away.discard(viewer)
        else:
            self.away.add(viewer)
        if was == msg.following:  # it changed: the presenter's count did too
            self._tell_lead()

    def _end(self) -> None:
        self.lead = None
        self.seq += 1
        self._fan_out()

    # --- pages coming and going -----------------------------------------------------------

    def joined(self, viewer: Viewer) -> None:
        """A new page: it lands on the current view (right after its hello and snapshot)."""
        if self.lead is None:
            return
        viewer.push(Frame(self._text(lead=False, followers=self.followers())))
        self._tell_lead()

    def left(self, viewer: Viewer) -> None:
        self.away.discard(viewer)
        if viewer is self.lead:
            self._end()
        else:
            self._tell_lead()
