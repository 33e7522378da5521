"""The option vote: rotations put every option in every slot; ballots are mapped back to the original options."""

from agentcvr.episode import Episode, VideoRef
from agentcvr.policies.option_vote import option_texts, reask_message, rotations, vote


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


def test_the_reask_relabels_the_rotated_options():
    message = reask_message(_episode(OPTIONS), [2, 3, 0, 1])
    assert message["role"] == "user" and "Which video shows the cat?" in message["content"]
    assert message["content"].endswith("A. Both videos\nB. Neither video\nC. Video 1\nD. Video 2")
    assert option_texts(["A) x", "B. y", "no label"]) == ["x", "y", "no label"]


def test_a_reader_of_content_wins_every_order():
    episode = _episode(OPTIONS)
    asked = []

    def reads_both(order: list[int]) -> str:  # finds "Both videos" wherever it is shown
        asked.append(order)
        return chr(ord("A") + order.index(2))

    result = vote(episode, "C", reads_both, 4)
    assert asked == rotations(4, 4)[1:]  # the turn's own answer is the first order's ballot
    assert result.letter == "C" and result.ballots == ("C", "C", "C", "C")


def test_the_majority_overrules_the_own_answer_and_a_tie_keeps_it():
    episode = _episode(OPTIONS)
    first_slot = vote(episode, "A", lambda order: "A", 4)  # always the first slot: one vote per option
    assert first_slot.ballots == ("A", "B", "C", "D") and first_slot.letter == "A"

    def finds_neither(order: list[int]) -> str:  # "Neither video" (original D) wherever it is
        return chr(ord("A") + order.index(3))

    overruled = vote(episode, "A", finds_neither, 4)
    assert overruled.ballots == ("A", "D", "D", "D") and overruled.letter == "D"
    answers = {(1, 2, 3, 0): "C", (2, 3, 0, 1): "B", (3, 0, 1, 2): "B"}  # D, D, then A again
    tied = vote(episode, "A", lambda order: answers[tuple(order)], 4)
    assert tied.ballots == ("A", "D", "D", "A") and tied.letter == "A"
    assert tied.summary() == "answers over 4 option orders A D D A -> A"
