// The TypeScript claude-agent-sdk over every catalog scenario, each with a fake `claude` of its
// own (`stuntset cli install claude`), bounded by the client's own abort.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { BOUND_MS, GUARD_MS, USER, bound, describeError, installFake, record, scenarios } from './lib/stuntset.mjs';

const CLIENT = 'claude-agent-sdk-ts';

async function play(fake, wait) {
  const seen = [];
  const options = {
    pathToClaudeCodeExecutable: fake.path,
    abortController: wait.controller,
    // every tool the fake asks permission for is allowed, with its input unchanged
    canUseTool: async (_tool, input) => ({ behavior: 'allow', updatedInput: input }),
  };
  for await (const message of query({ prompt: USER, options })) {
    seen.push(message);
  }
  const result = seen.find((m) => m.type === 'result');
  if (result === undefined) return ['cut', `no result message (${seen.length} messages)`];
  const said = result.result ?? (result.errors ?? []).join('; ');
  return [result.is_error ? 'error-result' : 'completed', `${result.subtype}: ${JSON.stringify(String(said).slice(0, 50))}`];
}

for (const scenario of await scenarios()) {
  test(scenario.name, { timeout: GUARD_MS + 10_000 }, async () => {
    const fake = installFake('claude', scenario.name);
    const wait = bound(scenario.name === 'stuck' ? BOUND_MS : GUARD_MS);
    let outcome;
    try {
      outcome = await play(fake, wait);
    } catch (error) {
      outcome = [wait.fired ? 'bounded' : 'error', describeError(error).replace(/\/tmp\/\S+/g, '<path>')];
    } finally {
      wait.clear();
    }
    record(CLIENT, scenario.name, ...outcome);
    if (fake.spawnable) assert.ok(fake.invocations().length >= 1, 'the fake ran');
  });
}
