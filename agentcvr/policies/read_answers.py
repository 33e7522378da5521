"""The master looks, the trained reader answers: any policy whose choice-task answers come from the option reader.

The master decides every observe and listen; when it answers a multiple-choice or multi-select episode
(`agentcvr.reading.reads`), its answer is replaced by the reader's choice over everything the conversation observed
(`agentcvr/reader.py`); FSA's interval and CCQA's comparison are matched from the observed sentences
(`agentcvr/matching.py`) where the looks hold something to match. PSS's order stays the master's. The turn keeps the
master's token counts, and its text says what the master had written, so a trace shows both. On FSA the matched
segment is first looked at again, closer, until its stamps are fine (`agentcvr/policies/refine.py`); those turns are
the wrapper's, and the master is not asked again once it has answered.

With `who_looks="scan"` the master is not asked on choice tasks at all: the wrapper makes the scan teacher's looks
(every video observed whole with the question and its options as the focus, the movie tasks' videos listened to:
calls that depend only on the episode) and the reader answers at once. These are the looks the reader was trained on,
and an episode takes the reader's second instead of the master's minute. `who_looks="search"` adds the search's turn
after the scan (`agentcvr/policies/search.py`: PEA's steps zoomed on, NC's and CCQA's videos looked at in windows),
chosen from what the scan showed. `scan_frames` is how many frames each scan look asks for (16: one frame per ~37 s of
a 10-minute video, and a short step falls between them; 128, the visual agent's cap: one per ~5 s).
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Literal, Protocol

from agentcvr.actions import DEFAULT_FRAMES, Answer
from agentcvr.episode import Episode
from agentcvr.interfaces import Policy, PolicyOutput
from agentcvr.parsing import ParseError, parse_turn
from agentcvr.policies.refine import REFINE_THOUGHT, refine_call
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.search import scan_then_search
from agentcvr.policies.teaching import looks, write_turn
from agentcvr.reading import Seen, reads, seen_from
from agentcvr.session import forced_turn

if TYPE_CHECKING:
    from collections.abc import Sequence


_THOUGHT = re.compile(r"The reader chose (\S*); the master wrote (.*)\.$")


def reader_thought(chosen: str, own: str) -> str:
    return f"The reader chose {chosen}; the master wrote {own}."


def last_thought(messages: list[dict], episode: Episode) -> str | None:
    """The thought of the conversation's last assistant turn (None when there is none or it does not parse)."""
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if last is None:
        return None
    parsed = parse_turn(last.get("content"), last.get("tool_calls"), episode)
    return None if isinstance(parsed, ParseError) else parsed.thought


def masters_answer(thought: str | None) -> str | None:
    """The answer the master wrote under a reader's answer turn (None for any other turn)."""
    found = _THOUGHT.search(thought or "")
    return found.group(2) if found else None


class Answerer(Protocol):
    """What the wrapper needs of a reader (`agentcvr.reader.Reader`)."""

    windows: int  # the scan looks it was trained to read: each video's first look cut into this many windows

    def answer(self, episode: Episode, seen: Sequence[Seen]) -> str | None: ...


WhoLooks = Literal["master", "scan", "search"]


class ReaderAnswers:
    """`Policy`: `ReaderAnswers(master, reader)`; the master's turns, with the reader's answer on choice tasks
    (`who_looks="scan"`: on choice tasks the scan's looks, then the reader's answer, without the master; `"search"`:
    the scan, then the search's turn (`agentcvr/policies/search.py`), then the reader)."""

    def __init__(
        self, master: Policy, reader: Answerer, who_looks: WhoLooks = "master", scan_frames: int = DEFAULT_FRAMES
    ):
        self.master, self.reader = master, reader
        self.protocol = master.protocol
        # only the looking turns are used (no script: they never answer), cut as the reader's training looks were
        self.scanner: ScanTeacher | None
        if who_looks == "search":
            self.scanner = scan_then_search({}, self.protocol, reader.windows, scan_frames)
        elif who_looks == "scan":
            self.scanner = ScanTeacher({}, protocol=self.protocol, windows=reader.windows, frames=scan_frames)
        else:
            self.scanner = None
        self._reading = threading.Lock()  # one reader may serve the episodes of several threads (rollouts)

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        if self.scanner is not None and reads(episode):
            return self._scan_then_read(messages, episode)
        if reads(episode) and last_thought(messages, episode) == REFINE_THOUGHT:  # the master has answered already
            made = looks(messages, episode)
            chosen = self._read(episode, made)
            if chosen is not None:
                return self._refine(episode, made, chosen, messages) or self._answer(
                    chosen, f"The reader chose {chosen} after looking closer.", messages
                )
        output = self.master.act(messages, episode)
        if not reads(episode):
            return output
        parsed = parse_turn(output.content, output.tool_calls, episode)
        if isinstance(parsed, ParseError) or not any(isinstance(a, Answer) for a in parsed.actions):
            return output
        own = next(a.answer for a in parsed.actions if isinstance(a, Answer))
        made = looks(messages, episode)
        chosen = self._read(episode, made)
        if chosen is None:  # nothing the reader could match: the master's own answer stands
            return output
        turn = self._refine(episode, made, chosen, messages) or self._answer(
            chosen, reader_thought(chosen, own), messages
        )
        turn.prompt_tokens, turn.completion_tokens = output.prompt_tokens, output.completion_tokens
        return turn

    def _read(self, episode: Episode, made: list) -> str | None:
        """The reader's answer from every look so far (None: nothing it could match)."""
        with self._reading:
            return self.reader.answer(episode, [seen_from(look.action, look.observation) for look in made])

    def _refine(self, episode: Episode, made: list, chosen: str, messages: list[dict]) -> PolicyOutput | None:
        """The closer look at FSA's matched segment, while its stamps are coarse (None otherwise, or when the turn
        must answer)."""
        call = None if forced_turn(messages) else refine_call(episode, made, chosen)
        if call is None:
            return None
        turn = write_turn([call], self.protocol, f"reader_refine_{len(made)}", thought=REFINE_THOUGHT)
        if turn.tool_calls:
            turn.content = REFINE_THOUGHT
        return turn

    def _scan_then_read(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        made = looks(messages, episode)
        if not forced_turn(messages) and (turn := self.scanner.next_turn(episode, made)):
            calls, thought = turn
            return write_turn(calls, self.protocol, f"reader_scan_{len(made)}", thought=thought)
        chosen = self._read(episode, made)
        if chosen is None:  # nothing the reader could match: the master answers from the scan's looks
            return self.master.act(messages, episode)
        return self._refine(episode, made, chosen, messages) or self._answer(
            chosen, f"The reader chose {chosen} after the scan.", messages
        )

    def _answer(self, chosen: str, thought: str, messages: list[dict]) -> PolicyOutput:
        """The answer turn in the master's protocol, its thought kept where a tool-call turn has no thought field."""
        turn = write_turn([("answer", {"answer": chosen})], self.protocol, f"reader_{len(messages)}", thought=thought)
        if turn.tool_calls:
            turn.content = thought
        return turn
