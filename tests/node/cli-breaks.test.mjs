// "The CLI itself breaks" (`cli=true`: its own stdout cut, a line that is not JSON, garbage
// bytes, content out of order, the process dying mid-turn) through the TypeScript
// claude-agent-sdk and codex SDK: every such turn ends by itself (an error or a result), well
// inside the hang guard; none is left for the client's own abort (issue 27).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { Codex } from '@openai/codex-sdk';
import { GUARD_MS, USER, bound, describeError, installFake, record } from './lib/stuntset.mjs';

const BROKEN = ['stream_cut', 'malformed_json', 'garbage_bytes', 'out_of_order', 'crash_mid_turn'];

const PLAY = {
  'claude-agent-sdk-ts': async (fake, wait) => {
    const options = {
      pathToClaudeCodeExecutable: fake.path,
      abortController: wait.controller,
      canUseTool: async (_tool, input) => ({ behavior: 'allow', updatedInput: input }),
    };
    const seen = [];
    for await (const message of query({ prompt: USER, options })) seen.push(message);
    const result = seen.find((m) => m.type === 'result');
    return result === undefined ? 'cut' : result.is_error ? 'error-result' : 'completed';
  },
  'codex-sdk-ts': async (fake, wait) => {
    const codex = new Codex({ codexPathOverride: fake.path });
    const thread = codex.startThread({ skipGitRepoCheck: true, workingDirectory: process.cwd() });
    await thread.run(USER, { signal: wait.signal });
    return 'completed';
  },
};

for (const [client, play] of Object.entries(PLAY)) {
  for (const scenario of BROKEN) {
    test(`${client} ${scenario} cli=true`, { timeout: GUARD_MS + 10_000 }, async () => {
      const program = client.startsWith('claude') ? 'claude' : 'codex';
      const fake = installFake(program, scenario, { cli: 'true' });
      const wait = bound(GUARD_MS);
      let outcome;
      let detail = '';
      try {
        outcome = await play(fake, wait);
      } catch (error) {
        outcome = wait.fired ? 'bounded' : 'error';
        detail = describeError(error).replace(/\/tmp\/\S+/g, '<path>');
      } finally {
        wait.clear();
      }
      record(client, `${scenario} cli=true`, outcome, detail);
      assert.notEqual(outcome, 'bounded', `${client} ${scenario} cli=true hung until the guard`);
      assert.ok(fake.invocations().length >= 1, 'the fake ran');
    });
  }
}
