"""`agentcvr run`: one word per idea, `--perception` names what the tools see through (as serve's
AGENTCVR_PERCEPTION does); `--policy scan` is the scan teacher, built by the composition root."""

import json

from typer.testing import CliRunner

from agentcvr.cli import app
from agentcvr.script import write_jsonl
from scripts_gen.generate import generate


def test_run_takes_the_perception_by_name_and_resumes(tmp_path):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "traces.jsonl"
    write_jsonl([*generate("NC", 2, seed=5), *generate("PI", 1, seed=5)], scripts)
    args = ["run", "--policy", "scan", "--perception", "sim", "--scripts", str(scripts), "--no-traces"]
    first = CliRunner().invoke(app, [*args, "--task", "NC", "--out", str(out)], terminal_width=200)
    assert first.exit_code == 0, first.output
    assert "scan on sim (2 episodes)" in first.output
    again = CliRunner().invoke(app, [*args, "--out", str(out), "--resume"], terminal_width=200)
    assert again.exit_code == 0 and "scan on sim (3 episodes)" in again.output
    assert [json.loads(line)["result"]["task"] for line in out.read_text().splitlines()] == ["NC", "NC", "PI"]


def test_an_unknown_perception_fails_naming_the_valid_ones(tmp_path):
    scripts = tmp_path / "scripts.jsonl"
    write_jsonl(generate("NC", 1, seed=5), scripts)
    result = CliRunner().invoke(
        app, ["run", "--policy", "expert", "--perception", "video", "--scripts", str(scripts)], terminal_width=200
    )
    assert result.exit_code == 2 and "unknown perception 'video'" in result.output and "llm-sim" in result.output


def test_resume_under_another_spec_is_refused_naming_what_differs(tmp_path):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "runs.jsonl"
    write_jsonl(generate("NC", 2, seed=5), scripts)
    base = ["run", "--scripts", str(scripts), "--no-traces", "--out", str(out)]
    first = CliRunner().invoke(app, [*base, "--policy", "expert"], env={"COLUMNS": "400"})
    assert first.exit_code == 0, first.output
    written = out.read_text()
    for extra, differs in [
        (["--policy", "random"], 'policy.name: "random" != "expert"'),
        (["--policy", "random", "--seed", "4"], "policy.options.seed: 4 != (unset)"),
        (["--policy", "expert", "--max-turns", "5"], "limits.max_turns: 5 != 20"),
    ]:
        refused = CliRunner().invoke(app, [*base, *extra], env={"COLUMNS": "400"})
        assert refused.exit_code == 2, refused.output
        assert "written under another run spec" in refused.output and differs in refused.output, refused.output
        assert out.read_text() == written  # nothing added
    same = CliRunner().invoke(app, [*base, "--policy", "expert", "--max-turns", "20"], env={"COLUMNS": "400"})
    assert same.exit_code == 2 and "already holds records: pass --resume to continue it" in same.output, same.output
    same = CliRunner().invoke(app, [*base, "--policy", "expert", "--resume"], env={"COLUMNS": "400"})
    assert same.exit_code == 0 and "(2 done before)" in same.output, same.output
    assert out.read_text() == written


def test_a_file_without_run_specs_is_not_resumed(tmp_path):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "old.jsonl"
    write_jsonl(generate("NC", 1, seed=5), scripts)
    args = ["run", "--policy", "expert", "--scripts", str(scripts), "--no-traces", "--out", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    record = json.loads(out.read_text())
    del record["spec"]  # as written before specs were recorded
    out.write_text(json.dumps(record) + "\n")
    refused = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert refused.exit_code == 2 and "1 record(s) without a run spec" in refused.output, refused.output


def test_an_option_the_policy_does_not_take_is_refused_by_name(tmp_path):
    scripts = tmp_path / "scripts.jsonl"
    write_jsonl(generate("NC", 1, seed=5), scripts)
    args = ["run", "--policy", "expert", "--seed", "3", "--scripts", str(scripts)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    refused = "policy 'expert' takes no option seed (its options: reader, reader_looks, scan_frames, protocol)"
    assert result.exit_code == 2 and refused in result.output


def test_scripts_that_reuse_ids_for_other_questions_are_not_resumed(tmp_path):
    """Generated ids repeat across seeds (NC-000000 for every seed): a finished id must be the same question."""
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "runs.jsonl"
    args = ["run", "--policy", "expert", "--scripts", str(scripts), "--no-traces", "--out", str(out)]
    write_jsonl(generate("NC", 2, seed=5), scripts)
    assert CliRunner().invoke(app, args).exit_code == 0
    write_jsonl(generate("NC", 2, seed=6), scripts)  # the same ids, other questions
    refused = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert refused.exit_code == 2 and "2 episode(s) that asked another question under the same id" in refused.output


def test_run_and_the_evals_share_the_engine_flags():
    """The same names, help and meaning: all four go through eval/runner.run_items."""
    import typer

    group = typer.main.get_command(app)

    def options(command):
        flags = ("--resume", "--retries", "--timeout", "--concurrency", "--option")
        return {p.opts[0]: (p.help, p.is_flag, p.min) for p in command.params if p.opts[0] in flags}

    evals = group.commands["eval"].commands
    run, crossvid, synth, fidelity = group.commands["run"], evals["crossvid"], evals["synth"], evals["fidelity"]
    assert len(options(run)) == 5 and options(run) == options(crossvid) == options(synth) == options(fidelity)


def test_component_options_from_the_command_line_are_recorded_or_refused_by_name(tmp_path):
    """-o policy.KEY=VALUE / perception.KEY=VALUE reaches nested options; a misspelling anywhere is named."""
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "runs.jsonl"
    write_jsonl(generate("NC", 1, seed=5), scripts)
    base = ["run", "--policy", "random", "--scripts", str(scripts), "--no-traces", "--out", str(out)]
    ran = CliRunner().invoke(app, [*base, "-o", "policy.seed=4", "-o", "perception.noise.seed=2"])
    assert ran.exit_code == 0, ran.output
    spec = json.loads(out.read_text())["spec"]
    assert spec["policy"]["options"] == {"seed": 4} and spec["perception"]["options"] == {
        "noise": {"seed": 2},
        "sampling": "frames",
    }
    for option, refused in [
        ("perception.noise.sed=2", "perception 'sim' takes no option noise.sed (options of noise: seed,"),
        ("policy.sed=4", "policy 'random' takes no option sed (its options: reader, reader_looks, scan_frames, seed)"),
        ("seed=4", "option 'seed=4' must name its part: policy.KEY=VALUE or perception.KEY=VALUE"),
    ]:
        result = CliRunner().invoke(app, [*base, "-o", option], env={"COLUMNS": "400"})
        assert result.exit_code == 2 and refused in result.output, result.output
