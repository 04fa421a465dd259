// The TypeScript codex SDK (`@openai/codex-sdk`) over every catalog scenario, each with a fake
// `codex` of its own (`stuntset cli install codex`), bounded by the client's own signal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Codex } from '@openai/codex-sdk';
import { BOUND_MS, GUARD_MS, USER, bound, describeError, installFake, record, scenarios } from './lib/stuntset.mjs';

const CLIENT = 'codex-sdk-ts';

async function play(fake, wait) {
  const codex = new Codex({ codexPathOverride: fake.path });
  const thread = codex.startThread({ skipGitRepoCheck: true, workingDirectory: process.cwd() });
  const turn = await thread.run(USER, { signal: wait.signal });
  return ['completed', `${turn.items.length} item(s): ${JSON.stringify(String(turn.finalResponse).slice(0, 40))}`];
}

for (const scenario of await scenarios()) {
  test(scenario.name, { timeout: GUARD_MS + 10_000 }, async () => {
    const fake = installFake('codex', scenario.name);
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
