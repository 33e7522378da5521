"""Latency of ScriptSimulator observe/listen calls on generated scripts, against a naive baseline in the same run.

The baseline answers the same calls by a linear scan over every event of the script (all videos, no index, no
cache), with the same ranking and formatting, so the ratio shows what the simulator's per-video index buys.
Timelines are warmed once before timing (the first call per video builds its index; that cost is printed apart).

    .venv/bin/python benchmarks/sim_latency.py --per-task 100 --calls 20000
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from agentcvr.actions import Listen, Observe
from agentcvr.script import Script
from scripts_gen.generate import GENERATORS, generate
from simulator.script_sim import NO_SPEECH, NO_VISUAL, ScriptSimulator, words

Call = tuple[Script, Observe | Listen]


def naive_observe(script: Script, action: Observe, max_events: int = 8) -> str:
    hits = [(v.index, e) for v in script.videos for e in v.events]
    hits = [e for index, e in hits if index == action.video and e.start < action.end and e.end > action.start]
    if len(hits) > max_events:
        focus = words(action.focus)
        hits = sorted(hits, key=lambda e: (-len(focus & words(e.visual)), e.start))[:max_events]
    hits.sort(key=lambda e: (e.start, e.end))
    lines = [f"[{max(e.start, action.start):.1f}s - {min(e.end, action.end):.1f}s] {e.visual}" for e in hits]
    return "\n".join(lines) or NO_VISUAL


def naive_listen(script: Script, action: Listen) -> str:
    hits = [
        e
        for v in script.videos
        if v.index == action.video
        for e in v.events
        if e.speech and e.start < action.end and e.end > action.start
    ]
    hits.sort(key=lambda e: (e.start, e.end))
    lines = [f"[{max(e.start, action.start):.1f} - {min(e.end, action.end):.1f}]: {e.speech}" for e in hits]
    return "\n".join(lines) or NO_SPEECH


def make_calls(scripts: list[Script], count: int, seed: int = 0) -> list[Call]:
    """A mix like an agent's: evidence intervals, random short windows, whole videos; 3 observe : 1 listen."""
    rng = random.Random(seed)
    calls: list[Call] = []
    while len(calls) < count:
        script = rng.choice(scripts)
        video = rng.choice(script.videos)
        shape = rng.random()
        if shape < 0.3 and script.evidence:
            item = rng.choice(script.evidence)
            video, start, end, focus = script.videos[item.video - 1], item.start, item.end, item.focus
        elif shape < 0.8:
            start = rng.uniform(0, video.duration * 0.9)
            end, focus = min(video.duration, start + rng.uniform(1, 60)), "what happens"
        else:
            start, end, focus = 0.0, video.duration, "the main action"
        end = max(end, start + 0.1)
        action: Observe | Listen = (
            Observe(video=video.index, start=start, end=end, focus=focus)
            if rng.random() < 0.75
            else Listen(video=video.index, start=start, end=end)
        )
        calls.append((script, action))
    return calls


def time_calls(calls: list[Call], run: Callable[[Script, Observe | Listen], str]) -> list[float]:
    """Microseconds per call."""
    timings = []
    clock = time.perf_counter_ns
    for script, action in calls:
        started = clock()
        run(script, action)
        timings.append((clock() - started) / 1000)
    return timings


def summary(timings: list[float]) -> tuple[float, float]:
    return statistics.median(timings), statistics.quantiles(timings, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-task", type=int, default=100, help="scripts per task kind")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    scripts = generate("all", args.per_task, args.seed)
    by_id = {s.id: s for s in scripts}
    episodes = {s.id: s.episode for s in scripts}
    simulator = ScriptSimulator(by_id)
    calls = make_calls(scripts, args.calls, args.seed)

    def sim(script: Script, action: Observe | Listen) -> str:
        episode = episodes[script.id]
        return simulator.observe(episode, action) if isinstance(action, Observe) else simulator.listen(episode, action)

    def naive(script: Script, action: Observe | Listen) -> str:
        return naive_observe(script, action) if isinstance(action, Observe) else naive_listen(script, action)

    cold = time_calls([(s, Observe(video=v.index, start=0, end=v.duration)) for s in scripts for v in s.videos], sim)
    for script, action in calls[:200]:  # same answers, or the comparison is meaningless
        assert sim(script, action) == naive(script, action), (script.id, action)
    events = sum(len(v.events) for s in scripts for v in s.videos)
    print(
        f"{len(scripts)} scripts ({', '.join(GENERATORS)}), {events / len(scripts):.0f} events per script, "
        f"{len(calls)} calls (observe:listen ~ 3:1)"
    )
    print(f"first call per video (builds its index): median {statistics.median(cold):.1f} us")
    results = {}
    for name, run in (("ScriptSimulator", sim), ("naive linear scan", naive)):
        results[name] = summary(time_calls(calls, run))
    for kind in (Observe, Listen):
        subset = [c for c in calls if isinstance(c[1], kind)]
        sim_med = summary(time_calls(subset, sim))[0]
        naive_med = summary(time_calls(subset, naive))[0]
        print(
            f"  {kind.__name__.lower():8} ScriptSimulator median {sim_med:6.1f} us   naive median {naive_med:7.1f} us"
        )
    for name, (median, p90) in results.items():
        print(f"{name:18} median {median:7.1f} us   p90 {p90:7.1f} us")
    ratio = results["naive linear scan"][0] / results["ScriptSimulator"][0]
    print(
        f"naive / ScriptSimulator (median): {ratio:.1f}x   target median <= 100 us: "
        f"{'met' if results['ScriptSimulator'][0] <= 100 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
