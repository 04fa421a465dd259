"""Eval scenario files: the committed examples load, defaults fill in, and every malformed
file is refused with its name and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.errors import EvalFileError
from stuntset.evals import load_eval, loads_eval

EXAMPLES = Path(__file__).parents[3] / "examples" / "evals"

SKILLS = """
prompt = "p"
[skills.pdf]
description = "PDFs"
instructions = "run extract"
[skills.xlsx]
description = "sheets"
instructions = "openpyxl"
[[behaviour]]
steps = [{ skill = "pdf" }, { say = "ok" }]
"""


def test_the_examples_load() -> None:
    pdf = load_eval(EXAMPLES / "pdf_skill.toml")
    assert pdf.name == "pdf_skill"
    assert pdf.expect.criteria() == [
        "skill_chosen",
        "skills_avoided",
        "read_before_use",
        "required_commands",
        "tool_order",
        "sandbox",
    ]
    assert [b.weight for b in pdf.behaviours] == [3.0, 1.0]
    notes = load_eval(EXAMPLES / "notes_workflow.toml")
    assert notes.prompts == ("Write a notes.md with a title", "Now add a line saying done")
    assert notes.expect.continuity  # two prompts: continuity by default
    assert [len(s) for s in notes.behaviours[0].segments()] == [2, 2]


def test_a_chosen_skill_avoids_the_others_and_must_be_read_first_by_default() -> None:
    spec = loads_eval(SKILLS + '[expect]\nskill = "pdf"\n')
    assert spec.expect.avoid == ("xlsx",)
    assert spec.expect.read_before_use
    assert spec.skills["pdf"].markdown() == (
        "---\nname: pdf\ndescription: PDFs\n---\n\nrun extract\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prompt = 1\n[expect]\nsandbox = true", "x.toml: prompt: must be a string, got int"),
        ("[expect]\nsandbox = true", "x.toml: prompt: give exactly one of prompt or prompts"),
        ('prompt = "p"\nrunz = 3', "x.toml: unknown key 'runz'"),
        ('prompt = "p"\nruns = 0\n[expect]\nsandbox = true', "x.toml: runs: must be a whole"),
        ('prompt = "p"\nmin_pass_rate = 2', "x.toml: min_pass_rate: must be a number from 0 to 1"),
        ('prompt = "p"', "x.toml: expect: names no criterion"),
        (SKILLS + '[expect]\nskill = "doc"', "x.toml: expect.skill: no skill 'doc'"),
        (SKILLS + '[expect]\nsandbox = "yes"', "x.toml: expect.sandbox: must be true or false"),
        (SKILLS + '[expect]\norder = ["jump:x"]', "x.toml: expect.order[0]: must be KIND:PATTERN"),
        (SKILLS + '[expect]\ncommands = ["("]', "x.toml: expect.commands[0]: not a regular"),
        (SKILLS + '[expect]\nforbid = ["("]', "x.toml: expect.forbid[0]: not a regular"),
        (
            'prompt = "p"\n[[behaviour]]\npasses = "yes"\nsteps = [{ say = "x" }]\n'
            "[expect]\nsandbox = true",
            "x.toml: behaviour[0].passes: must be true or false",
        ),
        (
            'prompt = "p"\n[[behaviour]]\nsteps = [{ skill = "nope" }, { say = "x" }]\n'
            "[expect]\nsandbox = true",
            "x.toml: behaviour[0].steps[0].skill: no skill 'nope'",
        ),
        (
            'prompt = "p"\n[[behaviour]]\nsteps = [{ run = "ls" }]\n[expect]\nsandbox = true',
            "x.toml: behaviour[0].steps: must end each of the 1 prompt(s) with a say step",
        ),
        (
            'prompt = "p"\n[[behaviour]]\nweight = -1\nsteps = [{ say = "x" }]\n'
            "[expect]\nsandbox = true",
            "x.toml: behaviour[0].weight: must be a positive, finite number",
        ),
        *(
            (
                f'prompt = "p"\n[[behaviour]]\nweight = {w}\nsteps = [{{ say = "x" }}]\n'
                "[expect]\nsandbox = true",
                "x.toml: behaviour[0].weight: must be a positive, finite number",
            )
            for w in ("inf", "nan", "-inf", "1e300", "0")
        ),
        *(
            (
                f'name = "{n}"\nprompt = "p"\n[expect]\nsandbox = true',
                "x.toml: name: names the run's folder",
            )
            for n in ("a/b", "..", ".", "../../x", "a\\\\b", " ", "")
        ),
        (
            'prompt = "p"\n[[behaviour]]\nsteps = [{ run = "a", say = "b" }]\n'
            "[expect]\nsandbox = true",
            "x.toml: behaviour[0].steps[0]: a step has exactly one of",
        ),
        (
            'prompt = "p"\n[files]\n"../escape" = "x"\n[expect]\nsandbox = true',
            "x.toml: files.'../escape': must be a relative path inside the workspace",
        ),
        (
            'prompt = "p"\n[skills.Bad_Name]\ndescription = "d"\ninstructions = "i"',
            "x.toml: skills.Bad_Name: a skill name is lowercase",
        ),
        ("prompt = [", "x.toml: not TOML"),
        ('prompts = "p"', "x.toml: prompts: must be a list of strings, got str"),
        ('prompts = ["a", " "]', "x.toml: prompts: every prompt must be non-empty"),
        ('prompt = "p"\nbehaviour = 3', "x.toml: behaviour: must be an array of tables"),
        ('prompt = "p"\nbehaviour = [3]', "x.toml: behaviour[0]: must be a table"),
        (
            'prompt = "p"\n[[behaviour]]\nsteps = []',
            "x.toml: behaviour[0].steps: must be a non-empty",
        ),
        (
            'prompt = "p"\n[[behaviour]]\nsteps = ["ls"]',
            "x.toml: behaviour[0].steps[0]: a step is a table",
        ),
        ('prompt = "p"\nskills = 1', "x.toml: skills: must be a table of [skills.NAME] tables"),
        ('prompt = "p"\n[skills]\npdf = 1', "x.toml: skills.pdf: must be a table with description"),
        (
            'prompt = "p"\n[skills.pdf]\ndescription = "d"',
            "x.toml: skills.pdf: missing 'instructions'",
        ),
        (
            'prompt = "p"\n[skills.pdf]\ndescription = """a\nb"""\ninstructions = "i"',
            "x.toml: skills.pdf.description: must be one line",
        ),
        ('prompt = "p"\nfiles = 1', "x.toml: files: must be a table of path = content"),
        ('prompt = "p"\nexpect = 1', "x.toml: expect: must be a table"),
        (SKILLS + '[expect]\navoid = ["doc"]', "x.toml: expect.avoid[0]: no skill 'doc'"),
        ('prompt = "p"\n[expect]\nread_before_use = true', "x.toml: expect.read_before_use: needs"),
        ("prompts = " + "[" * 2000 + "]" * 2000, "x.toml: not a usable eval file: nested too deep"),
        ("runs = " + "9" * 5000, "x.toml: not a usable eval file"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_place(text: str, message: str) -> None:
    with pytest.raises(EvalFileError) as raised:
        loads_eval(text, source="x.toml")
    assert str(raised.value).startswith(message)


def test_an_unreadable_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(EvalFileError, match="not a regular file"):
        load_eval(tmp_path)
    with pytest.raises(EvalFileError, match=r"missing\.toml: cannot read it"):
        load_eval(tmp_path / "missing.toml")
    (tmp_path / "bytes.toml").write_bytes(b"prompt = '\xff'")
    with pytest.raises(EvalFileError, match=r"bytes.toml: not UTF-8 text \(byte 10\)"):
        load_eval(tmp_path / "bytes.toml")
