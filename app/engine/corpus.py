"""The built-in corpus: simple, seeded stories in which "Once upon a time ..." keeps recurring.

The stories are generated, not downloaded, so the app works offline and a run is a pure
function of its seed. Every story opens with "Once upon a time", and a handful of other
patterns recur ("One day", "The end", "happily ever after"), so a tiny model can be seen
learning them within a few hundred steps. The vocabulary stays small (a few hundred words).
"""

from __future__ import annotations

import random

ANIMALS = [
    "fox", "cat", "dog", "bear", "rabbit", "owl", "mouse", "frog", "duck", "horse",
    "lion", "goat", "bird", "turtle", "wolf", "pig",
]  # fmt: skip
NAMES = [
    "Tom", "Lily", "Max", "Mia", "Ben", "Sue", "Sam", "Anna", "Leo", "Zoe", "Finn", "Ruby",
]  # fmt: skip
ADJECTIVES = [
    "little", "big", "brave", "shy", "happy", "clever", "sleepy", "kind", "tiny", "curious",
    "old", "young", "funny", "gentle",
]  # fmt: skip
PLACES = [
    "forest", "village", "garden", "castle", "meadow", "farm", "house", "town", "valley",
    "hill", "pond", "park",
]  # fmt: skip
NEAR = ["river", "sea", "mountain", "lake", "road", "tree", "bridge", "woods"]
COLOURS = ["red", "blue", "green", "yellow", "shiny", "golden", "soft", "purple"]
THINGS = [
    "ball", "box", "key", "hat", "kite", "book", "cake", "stone", "flower", "map", "boat",
    "bell", "shell", "apple",
]  # fmt: skip
FEELINGS = ["happy", "sad", "scared", "excited", "surprised", "tired", "proud", "worried"]
FRIENDS = ["friend", "mother", "father", "sister", "brother", "teacher", "neighbour"]
VERBS_PAST = ["played", "walked", "ran", "sang", "danced", "jumped", "laughed", "read"]
TIMES = ["morning", "evening", "night", "day", "afternoon"]
WEATHER = ["sunny", "rainy", "windy", "cold", "warm", "quiet"]


def _story(rng: random.Random) -> str:
    a, name = rng.choice(ANIMALS), rng.choice(NAMES)
    adj, place, near = rng.choice(ADJECTIVES), rng.choice(PLACES), rng.choice(NEAR)
    colour, thing = rng.choice(COLOURS), rng.choice(THINGS)
    friend, feeling = rng.choice(FRIENDS), rng.choice(FEELINGS)
    pron, poss = rng.choice([("he", "his"), ("she", "her")])
    Pron = pron.capitalize()
    lines = [f"Once upon a time there was a {adj} {a} named {name} ."]
    lines.append(
        rng.choice(
            [
                f"{name} lived in a {place} near the {near} .",
                f"{Pron} lived with {poss} {friend} in a small {place} .",
                f"Every {rng.choice(TIMES)} {name} {rng.choice(VERBS_PAST)} in the {place} .",
            ]
        )
    )
    if rng.random() < 0.5:
        lines.append(f"It was a {rng.choice(WEATHER)} {rng.choice(TIMES)} .")
    lines.append(
        rng.choice(
            [
                f"One day {name} found a {colour} {thing} by the {near} .",
                f"One day the {a} saw a {colour} {thing} in the {place} .",
                f"One day {poss} {friend} gave {name} a {colour} {thing} .",
            ]
        )
    )
    lines.append(
        rng.choice(
            [
                f"{name} was very {feeling} .",
                f"{Pron} felt {feeling} and ran to tell {poss} {friend} .",
                f"The {a} was so {feeling} that {pron} {rng.choice(VERBS_PAST)} all day .",
            ]
        )
    )
    if rng.random() < 0.6:
        lines.append(
            rng.choice(
                [
                    f'" Look at my {thing} ! " said {name} .',
                    f'" Can we share it ? " asked the {rng.choice(ANIMALS)} .',
                    f"{name} and the {rng.choice(ANIMALS)} became best friends .",
                ]
            )
        )
    lines.append(
        rng.choice(
            [
                f"They {rng.choice(VERBS_PAST)} together and lived happily ever after .",
                f"From that day on {name} kept the {thing} safe .",
                f"And so the {adj} {a} went home to sleep .",
            ]
        )
    )
    lines.append("The end .")
    return " ".join(lines)


def generate_stories(n: int, seed: int) -> list[str]:
    """n stories, a pure function of (n, seed)."""
    rng = random.Random(f"trainingrun-stories-{seed}")
    return [_story(rng) for _ in range(n)]
