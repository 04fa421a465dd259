"""Evals for agent reliability: does the agent choose the right skill, follow it, and keep
its workflow contracts — measured as pass rates over many runs, not one lucky run.

- Scenario files (``load_eval``; format in ``stuntset.evals.spec``): the prompt(s), the
  workspace files and skills the agent finds, weighted model behaviours for the doubles, and
  ``[expect]``: skill decision (``skill``, ``avoid``), compliance (``read_before_use``,
  ``commands``) and workflow contracts (``order``, ``sandbox``, ``continuity``).
- ``arun_eval(spec, target, runs=)`` plays one N times on the scripted provider or on the
  real ``claude`` / ``codex`` binary over the model doubles (offline), or live with keys;
  ``EvalResult`` has the pass rate and its 95% Wilson interval (``wilson_interval``).
- ``assert_pass_rate(result, minimum)`` fails with every failed run's reasons
  (``EvalBelowThreshold``). The ``agent_eval`` fixture runs files next to the test.
- Reports: ``to_json`` / ``write_json``, ``render_html`` / ``write_html``;
  ``stuntset eval`` does all of it with a progress bar.
"""

from stuntset.evals.criteria import Action, Grade, Observation, actions_of, grade
from stuntset.evals.report import render_html, to_json, write_html, write_json
from stuntset.evals.runner import (
    EvalResult,
    EvalRunner,
    RunResult,
    arun_eval,
    assert_pass_rate,
)
from stuntset.evals.spec import Behaviour, EvalSpec, Expect, Skill, Step, load_eval, loads_eval
from stuntset.evals.stats import wilson_interval
from stuntset.evals.targets import TARGETS, Workdir, binary_for, make_target

__all__ = [
    "TARGETS",
    "Action",
    "Behaviour",
    "EvalResult",
    "EvalRunner",
    "EvalSpec",
    "Expect",
    "Grade",
    "Observation",
    "RunResult",
    "Skill",
    "Step",
    "Workdir",
    "actions_of",
    "arun_eval",
    "assert_pass_rate",
    "binary_for",
    "grade",
    "load_eval",
    "loads_eval",
    "make_target",
    "render_html",
    "to_json",
    "wilson_interval",
    "write_html",
    "write_json",
]
