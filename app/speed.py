"""The run's pace: the named speeds, the range of steps per second, and how a speed given as
text is read. The wire contract (app/protocol.py) and the settings table (app/options.py)
both take a speed, so it lives below both."""

from __future__ import annotations

# Speeds a client or an operator may ask for: a named pace or a number of steps per second.
SPEED_MIN = 0.1
SPEED_MAX = 1000.0
LESSON = "lesson"  # one step every couple of seconds, so each phase can be watched
MAX = "max"  # as fast as the engine goes; frames to each viewer are capped and coalesced


def parse_speed(value: str | float) -> str | float:
    """'lesson', 'max' or a number of steps per second within range; ValueError otherwise."""
    if isinstance(value, str) and value in (LESSON, MAX):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"speed must be 'lesson', 'max' or a number, not {value!r}") from None
    if not SPEED_MIN <= number <= SPEED_MAX:
        raise ValueError(f"speed must be between {SPEED_MIN} and {SPEED_MAX} steps/s")
    return number
