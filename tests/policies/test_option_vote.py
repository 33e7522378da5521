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


def test_votes_count_option_content_not_letters():
    episode = _episode(OPTIONS)

    def likes_both(messages: list[dict], count: int) -> str:  # a reader that finds "Both videos" wherever it is
        shown = messages[-1]["content"].split("Options:\n")[1].splitlines()
        return next(line[0] for line in shown if line.endswith("Both videos"))

    result = vote(episode, [], likes_both, 4)
    assert result.letter == "C" and result.ballots == ("C", "C", "C", "C")

    def always_a(messages: list[dict], count: int) -> str:
        return "A"

    biased = vote(episode, [], always_a, 4)
    assert biased.ballots == ("A", "B", "C", "D")  # the letter preference spreads over the options...
    assert biased.letter == "A"  # ...and a full tie goes to the first order's choice
    assert "4 orders" in biased.summary()
