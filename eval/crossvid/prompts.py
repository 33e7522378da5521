"""The official single-pass prompts (CrossVid `eval/<TASK>.py`), filled as the scripts fill them; `<frame>` marks
where each image goes."""

from __future__ import annotations

_CHOICE = "Select one answer choice, and only output the capital letter of your choice."
_TAIL = "\n\nInput frames:\n{FRAMES}\n\nYour answer:\n"
_QUESTION_OPTIONS = "\n\nQuestion:\n{QUESTION}\n\nOptions:\n{OPTIONS}"

MULTI_VIDEO = {
    "BU": "\nProvide you several videos and a multiple-choice question with 1-3 correct answer choices.\n"
    "Watch the videos carefully, and think about the question based on the information from the videos.\n"
    'Only output the capital letters of ALL your choices, e.g., "BCD".' + _QUESTION_OPTIONS + _TAIL,
    "NC": "\nProvide you four videos and a single-choice question with only one correct option.\n"
    "Watch the videos carefully, and think about the question based on the information from the four videos.\n"
    + _CHOICE
    + _QUESTION_OPTIONS
    + _TAIL,
    "CC": "\nProvide you four videos and a single-choice question with only one correct option.\n"
    "Watch the videos carefully, and think about the question based on the information from these videos.\n"
    + _CHOICE
    + _QUESTION_OPTIONS
    + _TAIL,
    "PEA": "\nProvide you three videos assembling the same toy car and a single-choice question.\n"
    "In addition, provide you four predefined error types that may assist you answer.\n"
    "- wrong order: this action is an ordering mistake.\n"
    "- previous one is mistake: this action is also an ordering mistake but is caused by the preceding ordering "
    "mistakes in the context.\n"
    "- shouldn't have happened: this action is unnecessary in the assembly.\n"
    "- wrong position: the two parts are not attached at their correct position.\n"
    "Watch the videos carefully, and think about the question based on the information from these videos.\n"
    + _CHOICE
    + _QUESTION_OPTIONS
    + _TAIL,
}
PI = (
    "\nProvide you the beginning and the ending of a movie clip, what is most likely to happen in the middle?\n"
    "Watch the video segments carefully, and think about the question based on the context information.\n"
    + _CHOICE
    + "\n\nOptions:\n{OPTIONS}"
    + _TAIL
)
PSS = (
    "\nProvide you {N} shuffled segments of a cooking video, what's the correct order of these segments?\n"
    "Watch the segments carefully, and think about the question based on the relationship between these segments.\n"
    'Only output the correct segment number sequence separated by "->", e.g., "2->3->1->4".' + _TAIL
)
FSA = (
    "\nProvide you two cooking videos, which step in Video 2 is functionally equivalent to the step shown between "
    "{BEGIN}s and {END}s in Video 1?\n"
    "Timestamps of frames sampled from Video 1 are: {TIME1}.\n"
    "Timestamps of frames sampled from Video 2 are: {TIME2}.\n"
    "Watch the two videos carefully, and think about the question based on the information of the two videos.\n"
    'Only output a time interval in seconds and separate the beginning and ending time with a comma, e.g., "15,23".'
    + _TAIL
)
UAV = (
    "\nProvide you two synchronized UAV road recording videos, objects' positional information and a single-choice "
    "question.\nThe positional information contains the bounding box coordinates ([xtl, ytl, xbr, ybr]) of the objects "
    "positioned in one appearing frame.\nWatch the videos first, then track the objects in both views and think about "
    "the question based on the information.\n"
    + _CHOICE
    + _QUESTION_OPTIONS
    + "\n\nObjects information:\n{BBOX}"
    + _TAIL
)
CCQA = (
    "\nProvide you two cooking videos (Video A + Video B) and an open-ended question.\n"
    "Watch the videos carefully, and think about the question based on the information from both videos."
    "\n\nQuestion:\n{QUESTION}" + _TAIL
)
SYSTEM = "You are a helpful video analyzer."


def frame_marks(count: int) -> str:
    return "<frame>" * count
