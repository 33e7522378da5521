"""The option vote: rotations put every option in every slot, and votes count option content, not letters."""

from agentcvr.episode import Episode, VideoRef
from agentcvr.policies.option_vote import option_texts, reading_messages, rotations, vote


def _episode(options: list[str]) -> Episode:
    videos = [VideoRef(index=1, duration=10), VideoRef(index=2, duration=10)]
    return Episode(id="e", task="NC", question="Which video shows the cat?", options=options, answer="C", videos=videos)


OPTIONS = ["A. Video 1", "B. Video 2", "C. Both videos", "D. Neither video"]


def test_rotations_show_each_option_once_in_every_slot():
    orders = rotations(4, 4)
    assert orders[0] == [0, 1, 2, 3]  # the first order is the options as given
    for slot in range(4):
        assert sorted(order[slot] for order in orders) == [0, 1, 2, 3]
    assert rotations(3, 10) == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]  # never more orders than options


def test_the_reading_prompt_relabels_the_rotated_options_and_ends_with_the_question():
    messages = reading_messages(_episode(OPTIONS), ["Result of observe on video 1 [0-10 s]:\na cat"], [2, 3, 0, 1])
    user = messages[-1]["content"]
    assert user.startswith("Reports:\nResult of observe on video 1")
    assert "A. Both videos\nB. Neither video\nC. Video 1\nD. Video 2" in user
    assert option_texts(["A) x", "B. y", "no label"]) == ["x", "y", "no label"]


def _slot_probabilities(messages: list[dict], wanted: str, weight: float) -> list[float]:
    """A reader that gives `weight` to the slot showing `wanted` and spreads the rest."""
    shown = messages[-1]["content"].split("Options:\n")[1].splitlines()[:-1]
    rest = (1 - weight) / (len(shown) - 1)
    return [weight if line.endswith(wanted) else rest for line in shown]


def test_the_vote_follows_content_wherever_it_is_shown():
    result = vote(_episode(OPTIONS), [], lambda messages, count: _slot_probabilities(messages, "Both videos", 0.7), 4)
    assert result.letter == "C" and result.ballots == ("C", "C", "C", "C")
    assert abs(result.scores[2] - 0.7) < 1e-9 and abs(sum(result.scores) - 1) < 1e-9


def test_a_preference_for_a_slot_cancels_and_a_weak_content_signal_decides():
    def slot_a_biased(messages: list[dict], count: int) -> list[float]:
        content = _slot_probabilities(messages, "Neither video", 0.3)  # a weak preference for the right content
        bias = [0.6, 0.2, 0.1, 0.1]  # and a strong one for the first slot
        joint = [c * b for c, b in zip(content, bias, strict=True)]
        return [j / sum(joint) for j in joint]

    result = vote(_episode(OPTIONS), [], slot_a_biased, 4)
    assert result.ballots[0] == "A"  # asked once, the slot preference wins...
    assert result.letter == "D"  # ...averaged over every order, the content does
    assert "4 orders" in result.summary() and result.summary().endswith("-> D")


def test_a_tie_goes_to_the_first_orders_choice():
    result = vote(_episode(OPTIONS), [], lambda messages, count: [0.25] * count, 4)
    assert result.letter == "A"
